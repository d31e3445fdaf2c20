"""The state file of the engine an app is supervising, so that a restarted app can find it again.

It lives at `<run_root>/engine.json` while an engine runs and is removed when it stops. It names the
process (pid + start time, so a recycled pid is never mistaken for ours), its process group, the app
that owns it, and the settings it was started with. It holds the API key, so it is private (0600 in 0700).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from launch.command import Engine
from launch.private_files import write_private
from launch.settings import LaunchSettings, SettingsError, from_mapping, to_mapping

STATE_FILE_NAME = "engine.json"


@dataclass(frozen=True)
class RunState:
    pid: int
    pgid: int
    create_time: float  # psutil's start time of `pid`
    owner_pid: int  # the app process supervising it
    owner_create_time: float
    run_dir: Path
    url: str
    settings: LaunchSettings
    engine: Engine
    moe_layers: int | None = None


def state_path(run_root: Path) -> Path:
    return Path(run_root) / STATE_FILE_NAME


def write_run_state(run_root: Path, state: RunState) -> None:
    """Atomically (write + rename), readable by the owner only."""
    data = {
        "pid": state.pid, "pgid": state.pgid, "create_time": state.create_time,
        "owner_pid": state.owner_pid, "owner_create_time": state.owner_create_time,
        "run_dir": str(state.run_dir), "url": state.url, "moe_layers": state.moe_layers,
        "engine": {"kind": state.engine.kind, "python": state.engine.python},
        "settings": to_mapping(state.settings),
    }
    write_private(state_path(run_root), json.dumps(data, indent=2))


def read_run_state(run_root: Path) -> RunState | None:
    """The recorded run, or None when there is none or the file is unreadable (a torn or foreign file
    cannot name a process we may kill)."""
    try:
        data = json.loads(state_path(run_root).read_text(encoding="utf-8"))
        engine = data["engine"]
        return RunState(
            pid=int(data["pid"]), pgid=int(data["pgid"]), create_time=float(data["create_time"]),
            owner_pid=int(data["owner_pid"]), owner_create_time=float(data["owner_create_time"]),
            run_dir=Path(data["run_dir"]), url=str(data["url"]),
            settings=from_mapping(data["settings"]),
            engine=Engine(kind=engine["kind"], python=engine["python"]),
            moe_layers=int(data["moe_layers"]) if data.get("moe_layers") else None,
        )
    except (OSError, ValueError, KeyError, TypeError, AttributeError, SettingsError):  # e.g. settings not an object
        return None


def clear_run_state(run_root: Path) -> None:
    state_path(run_root).unlink(missing_ok=True)
