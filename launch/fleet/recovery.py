"""Stopping what a killed `fleet serve` left running, before a new one starts.

A fleet's router and workers each lead their own session, so a `fleet serve` killed with SIGKILL leaves them
running. Each worker's Supervisor keeps its engine's state file in its own folder, and the fleet keeps the
router's (`router.json`: pid, start time, owner); `recover_fleets` goes through every fleet folder and stops
(whole process groups) what no live owner supervises any more. The router is found by pid and start time only:
it renames itself, so its command line says nothing.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from launch.fleet.router_process import RouterProcess
from launch.private_files import write_private
from launch.process_group import create_time, is_running, surviving_group, terminate_group
from launch.recovery import RecoveryAction, recover

ROUTER_STATE_NAME = "router.json"
FLEETS_DIR = "fleets"
GRACE_S = 5.0


def write_router_state(run_dir: Path, router: RouterProcess) -> None:
    me = os.getpid()
    write_private(run_dir / ROUTER_STATE_NAME, json.dumps({
        "pid": router.pid, "create_time": router.create_time, "owner_pid": me,
        "owner_create_time": create_time(me) or 0.0}))


def clear_router_state(run_dir: Path) -> None:
    (run_dir / ROUTER_STATE_NAME).unlink(missing_ok=True)


def recover_fleets(run_root: Path) -> list[str]:
    """Stop every router and worker of `run_root`'s fleets whose owner is gone; what was done, one line each."""
    done: list[str] = []
    fleets = Path(run_root) / FLEETS_DIR
    for run_dir in sorted(fleets.iterdir()) if fleets.is_dir() else ():
        line = _recover_router(run_dir)
        if line:
            done.append(line)
        for worker_dir in sorted(run_dir.glob("worker-*")):
            result = recover(worker_dir, grace=GRACE_S)
            if result.action in (RecoveryAction.TERMINATED, RecoveryAction.IN_USE):
                done.append(f"{worker_dir.name} of {run_dir.name}: {result.message}")
    return done


def _recover_router(run_dir: Path) -> str | None:
    path = run_dir / ROUTER_STATE_NAME
    if not path.exists():
        return None
    try:
        state = json.loads(path.read_text(encoding="utf-8"))
        pid, started = int(state["pid"]), float(state["create_time"])
        owner, owner_started = int(state["owner_pid"]), float(state["owner_create_time"])
    except (OSError, ValueError, KeyError, TypeError):
        path.unlink(missing_ok=True)
        return f"router of {run_dir.name}: removed an unreadable state file"
    if is_running(owner, owner_started):
        return f"router of {run_dir.name}: fleet serve pid {owner} still supervises it"
    path.unlink(missing_ok=True)
    if surviving_group(pid, started):
        terminate_group(pid, GRACE_S)
        return f"router of {run_dir.name}: stopped router pid {pid} left running"
    return None
