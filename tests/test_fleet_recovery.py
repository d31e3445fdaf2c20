"""A `fleet serve` killed with SIGKILL leaves its router and workers running (each leads its own session); the
next one stops them all before it starts, found by pid and start time (the router renames itself)."""

from __future__ import annotations

import signal
from pathlib import Path

import psutil
import pytest

from launch.fleet.recovery import recover_fleets
from tests.fleet_process import free_block, start_fleet

pytest.importorskip("sglang_router")


def test_what_a_killed_fleet_serve_left_running_is_stopped_by_the_next(tmp_path: Path) -> None:
    fleet = start_fleet(["--engine", "sim", "--workers", "2", "--set", f"router_port={free_block(2)}",
                         "--first-port", str(free_block(2))], tmp_path)
    try:
        fleet.wait_for(r"^router: ", timeout=120)
        left = fleet.processes()
        assert len(left) == 3
        assert recover_fleets(tmp_path) == [  # its owner is alive: nothing is touched
            f"router of {fleet.worker_dirs()[0].parent.name}: fleet serve pid {fleet.proc.pid} still supervises it",
            *(f"{d.name} of {d.parent.name}: app pid {fleet.proc.pid} still supervises it"
              for d in fleet.worker_dirs())]
        fleet.proc.send_signal(signal.SIGKILL)
        fleet.proc.wait(timeout=10)
        assert all(p.is_running() for p in left)  # orphans, until someone stops them
        done = recover_fleets(tmp_path)
        assert len(done) == 3 and done[0].startswith("router of ") and "stopped router pid" in done[0]
        gone, alive = psutil.wait_procs(left, timeout=10)
        assert not alive
        assert recover_fleets(tmp_path) == []
    finally:
        fleet.kill()
