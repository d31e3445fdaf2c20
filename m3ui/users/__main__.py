import sys

from m3ui.accounts.cli import main

sys.exit(main())
