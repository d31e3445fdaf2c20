"""Workers added to and removed from a serving fleet (what the admin does live): an attached engine joins the
router at once, a launched one once it is ready; a removed one leaves the router, and a launched one is stopped.
Bad changes are refused with the reason and change nothing."""

from __future__ import annotations

from pathlib import Path

import psutil
import pytest

from launch.command import Engine
from launch.fleet.router_settings import RouterSettings
from launch.fleet.spec import AttachedWorker, Fleet, LaunchedWorker
from launch.fleet.supervisor import FleetState, FleetSupervisor
from tests.fleet_checks import healthy_workers, until
from tests.fleet_process import free_block
from tests.sim_process import FAST_ENV, free_port, running_sim, sim_settings

pytest.importorskip("sglang_router")


def test_workers_join_and_leave_a_serving_fleet(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in FAST_ENV.items():
        monkeypatch.setenv(key, value)
    first = LaunchedWorker(sim_settings(free_port()))
    fleet = FleetSupervisor(Fleet(RouterSettings(port=free_block(2)), (first,), Engine("sim")), tmp_path)
    fleet.start()
    router = fleet.fleet.router.url
    try:
        assert fleet.wait_ready(120), fleet.snapshot()
        with running_sim(sim_settings(free_port())) as outside:
            fleet.add(AttachedWorker(outside.url))
            until(lambda: healthy_workers(router) == {first.url, outside.url})
            with pytest.raises(ValueError, match="is also worker 2"):
                fleet.add(AttachedWorker(outside.url + "/"))
            with pytest.raises(ValueError, match="started there, then attached"):
                fleet.add(LaunchedWorker(sim_settings(free_port()), machine="gpu-b"))
            second = LaunchedWorker(sim_settings(free_port()))
            fleet.add(second)
            until(lambda: healthy_workers(router) == {first.url, outside.url, second.url})
            until(lambda: fleet.snapshot().state is FleetState.READY)
            pid = fleet.worker_supervisor(1).snapshot().pid
            assert pid is not None
            fleet.remove(second.url)
            until(lambda: healthy_workers(router) == {first.url, outside.url})
            assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
            fleet.remove(outside.url)
            until(lambda: healthy_workers(router) == {first.url})
            assert [w.url for w in fleet.snapshot().workers] == [first.url]
            with pytest.raises(ValueError, match="the last worker cannot be removed"):
                fleet.remove(first.url)
            with pytest.raises(ValueError, match="is not a worker of this fleet"):
                fleet.remove(outside.url)
    finally:
        fleet.stop()


def test_a_router_that_dies_fails_the_fleet_and_stops_every_worker(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in FAST_ENV.items():
        monkeypatch.setenv(key, value)
    workers = (LaunchedWorker(sim_settings(free_port())), LaunchedWorker(sim_settings(free_port())))
    fleet = FleetSupervisor(Fleet(RouterSettings(port=free_block(2)), workers, Engine("sim")), tmp_path)
    fleet.start()
    try:
        assert fleet.wait_ready(120), fleet.snapshot()
        engines = [psutil.Process(fleet.worker_supervisor(i).snapshot().pid) for i in range(2)]
        router = psutil.Process(fleet.snapshot().router_pid)
        router.kill()
        until(lambda: fleet.state is FleetState.FAILED, 30)
        assert "the router exited with status -9" in fleet.snapshot().detail
        gone, alive = psutil.wait_procs(engines, timeout=10)
        assert not alive
    finally:
        fleet.stop()
