"""Where m3ui keeps profiles, runs, logs and accounts unless told otherwise (app.py and `python -m m3ui.users`)."""

from __future__ import annotations

import os
from pathlib import Path

DATA_DIR_ENV = "M3UI_DATA_DIR"


def default_data_dir() -> Path:
    return Path(os.environ.get(DATA_DIR_ENV, Path.home() / ".m3ui"))
