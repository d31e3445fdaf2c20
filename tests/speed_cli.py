"""Run `python -m launch <speed command>` as a real process against a data folder and a simulated host."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from launch.recovery import recover

ROOT = Path(__file__).resolve().parent.parent
HOSTS = ROOT / "tests" / "data" / "hosts"


def cli_env(data_dir: Path, host: str | None = "two-socket-h200.json", **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("M3UI_")}
    env.update({"M3UI_DATA_DIR": str(data_dir), "M3UI_SIM_UNTHROTTLED": "1", "M3UI_SIM_STARTUP_SECONDS": "0",
                "PYTHONUNBUFFERED": "1"})
    if host:
        env["M3UI_SIM_HOST"] = str(HOSTS / host)
    env.update(extra)
    return env


def launch_cli(*args: str, env: dict[str, str], timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "launch", *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=timeout, check=False)


def json_out(done: subprocess.CompletedProcess[str]) -> dict:
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def stop_left_engine(data_dir: Path) -> None:
    """tune leaves the best engine running on purpose; a test must not."""
    recover(data_dir, grace=5.0)
