#!/usr/bin/env bash
# The annotations of app.py, launch/, m3ui/ and torchzip/ checked by mypy (settings in pyproject.toml), and every
# `type: ignore` there carrying its reason after it: `# type: ignore[code]  # why`.
set -euo pipefail
cd "$(dirname "$0")/.."
.venv/bin/python -m mypy
bare=$(grep -rnE --include='*.py' 'type: ignore(\[[^]]*\])?[[:space:]]*$' app.py launch m3ui torchzip || true)
if [ -n "$bare" ]; then
  printf 'a type: ignore without its reason (add "  # why" after it):\n%s\n' "$bare" >&2
  exit 1
fi
