"""docs/REAL_ENGINE.md walks the whole way to the real engine with commands that exist: each `python -m launch`
and `scripts/run.sh` line of its code blocks parses with the program's own parser, and the weights commands name
subcommands that `python -m launch.weights` has; the steps are all there."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import app
from launch.__main__ import build_parser

DOC = Path(__file__).resolve().parents[1] / "docs" / "REAL_ENGINE.md"
WEIGHTS_COMMANDS = {"config", "plan", "download", "verify"}  # launch/weights/__main__.py


def command_lines() -> list[list[str]]:
    blocks = re.findall(r"```bash\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    return [shlex.split(line.split("#", 1)[0]) for block in blocks for line in block.splitlines() if line.strip()]


def test_every_command_of_the_walkthrough_parses() -> None:
    lines = command_lines()
    launch = [argv[3:] for argv in lines if argv[1:3] == ["-m", "launch"]]
    weights = [argv[3:] for argv in lines if argv[1:3] == ["-m", "launch.weights"]]
    runs = [argv[1:] for argv in lines if argv[0] == "scripts/run.sh"]
    assert len(launch) >= 4 and len(weights) >= 2 and runs
    parser = build_parser()
    for argv in launch:
        parser.parse_args(argv)  # exits (SystemExit) on an unknown command or option
    assert {argv[0] for argv in weights} <= WEIGHTS_COMMANDS
    for argv in runs:
        app.parse_args(argv)


def test_the_walkthrough_has_every_step() -> None:
    text = DOC.read_text(encoding="utf-8")
    for step in ("Install the engine", "Download the weights", "preflight", "Start it", "Save a profile",
                 "Start the app with it"):
        assert step in text, step
