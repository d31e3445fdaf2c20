#!/usr/bin/env bash
# Set up (first time) and run every check: lint, types, the test suite (browser tests in real Chromium) and the
# benchmarks compared to their targets. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh requirements-dev.txt
if [ ! -x /usr/bin/chromium ]; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  else
    echo "browser tests need Debian's chromium: sudo apt-get install -y chromium" >&2
  fi
fi
# The contract tests read the real sglang-kt/kt-kernel 0.7.2 wheels: fetched once into .cache/ here.
.venv/bin/python -m tests.provision
export GRADIO_ANALYTICS_ENABLED=False HF_HUB_OFFLINE=1 PYTHONDONTWRITEBYTECODE=1
.venv/bin/ruff check .
# The annotations of app.py, launch/, m3ui/ and torchzip/ (mypy), each type: ignore with its reason
scripts/typecheck.sh
# -rfER: failures, errors and the browser tests that passed only on a rerun are named in the summary.
# One worker per logical core (pytest-xdist), each test file on one worker (--dist loadfile), so a module's app
# and its tests stay together; every test uses free ports and its own temp folders. The 25 slowest are printed.
.venv/bin/python -m pytest -q -rfER -p no:cacheprovider -n logical --dist loadfile --durations=25 "$@"
if [ -d benchmarks ] && [ $# -eq 0 ]; then
  for bench in benchmarks/bench_*.py; do
    [ -e "$bench" ] || continue
    echo "== $bench"
    # --ci: timings fail only past twice their target (benchmarks/timing_gate.py); hard gates as ever
    .venv/bin/python "$bench" --check --ci
  done
fi
