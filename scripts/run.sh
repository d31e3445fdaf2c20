#!/usr/bin/env bash
# Set up (first time) and start m3ui. Arguments go to app.py, e.g. --port 7861 or --endpoint URL.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh requirements.txt
exec .venv/bin/python app.py "$@"
