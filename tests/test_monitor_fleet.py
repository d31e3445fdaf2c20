"""The Monitor on a fleet (m3ui/monitor/fleet.py): the router serves no /v1/loads, so each worker is read directly.
The totals are sums (the GPU hit rate is every GPU hit over every activation, never a mean of rates); one fleet
(the real sglang-router in front of two simulated workers recording expert routing) serves the whole module."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from launch.command import Engine
from launch.fleet.router_settings import RouterSettings
from launch.fleet.spec import Fleet, LaunchedWorker
from launch.fleet.supervisor import FleetSupervisor
from launch.supervisor import Supervisor
from m3ui.engine_link import EngineLink
from m3ui.experts.hit_rate import HitRate
from m3ui.monitor.engine import EngineSnapshot
from m3ui.monitor.engine_parse import EngineLoad
from m3ui.monitor.experts import ExpertSnapshot
from m3ui.monitor.fleet import FleetMonitor, FleetView, WorkerView, total_engine, total_experts
from m3ui.monitor.sampler import SamplerConfig
from m3ui.ui.monitor.fleet_html import worker_heatmaps, workers_table
from tests.fleet_process import free_block, serving_fleet
from tests.monitor_sims import chat, recorder_on
from tests.sim_process import free_port, sim_settings

pytest.importorskip("sglang_router")
FAST = SamplerConfig(expert_dump_every_s=0.5)


def _load(running: int, queued: int, used: int, total: int, tps: float) -> EngineLoad:
    return EngineLoad(running, queued, used, total, used / total, tps, 0.5, 0.5, 64, 1)


def _experts(hits: int, activations: int) -> ExpertSnapshot:
    return ExpertSnapshot(time.time(), "recording", window_s=600, activations=activations,
                          hit_rate=HitRate(hits, activations), residency_source="recorded")


def test_fleet_totals_are_sums_and_the_hit_rate_is_all_hits_over_all_activations() -> None:
    busy, quiet = _experts(90, 100), _experts(90, 900)  # 90% and 10%: a mean of rates would say 50%
    total = total_experts([busy, quiet])
    assert total.hit_rate == HitRate(180, 1000) and total.activations == 1000
    engines = [EngineSnapshot(0, "ok", load=_load(3, 1, 100, 1000, 20.0)),
               EngineSnapshot(0, "ok", load=_load(1, 0, 700, 3000, 30.0)),
               EngineSnapshot(0, "unreachable", "connection refused")]
    load = total_engine(1, engines).load
    assert load is not None
    assert (load.running_requests, load.queued_requests, load.gen_throughput) == (4, 1, 50.0)
    assert load.token_usage == pytest.approx(800 / 4000)  # the pooled KV cache, not a mean of shares
    assert load.dp_ranks == 1  # two one-rank engines are not one engine with two data-parallel ranks
    assert total_engine(1, engines[2:]).state == "unreachable"


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FleetSupervisor]:
    workers = tuple(LaunchedWorker(sim_settings(free_port(), **recorder_on())) for _ in range(2))
    router = RouterSettings(port=free_block(2), policy="round_robin")  # both workers get chats
    with serving_fleet(Fleet(router, workers, Engine("sim")), tmp_path_factory.mktemp("fleet")) as supervisor:
        yield supervisor


def _until(monitor: FleetMonitor, done: Callable[[FleetView], bool], timeout: float = 60.0) -> FleetView:
    deadline = time.monotonic() + timeout
    while True:
        view = monitor.sample_once()
        if done(view):
            return view
        assert time.monotonic() < deadline, view
        time.sleep(0.2)


def test_the_monitor_reads_each_worker_of_the_fleet_and_sums_them(fleet: FleetSupervisor, tmp_path: Path) -> None:
    link = EngineLink(Supervisor(tmp_path))
    link.attach(fleet.fleet.router.url, None)
    monitor = FleetMonitor(link, lambda: fleet, FAST)
    try:
        _until(monitor, lambda v: v.answering == 2)
        for i in range(6):
            chat(fleet.fleet.router.url, f"question {i}: how do tides work?", max_tokens=16)
        view = _until(monitor, lambda v: all(w.experts.activations for w in v.workers))
        assert [w.url for w in view.workers] == list(fleet.fleet.worker_urls)
        assert view.router_url == fleet.fleet.router.url
        rates = [w.experts.hit_rate for w in view.workers]
        assert all(r is not None for r in rates)
        assert view.experts is not None and view.experts.hit_rate == HitRate(
            sum(r.gpu_activations for r in rates if r), sum(r.total_activations for r in rates if r))
        assert all(w.experts.heatmap_png for w in view.workers)  # one heatmap per worker
        loads = [w.engine.load for w in view.workers]
        assert view.total is not None and view.total.load is not None and all(loads)
        assert view.total.load.max_total_tokens == sum(x.max_total_tokens for x in loads if x)
        assert len(monitor.history()) >= 2

        pid = fleet.worker_engine(view.workers[1].url).snapshot().pid  # type: ignore[union-attr]
        os.kill(pid, signal.SIGKILL)
        dead = _until(monitor, lambda v: v.answering == 1)
        assert dead.workers[1].engine.load is None  # seen at once, maybe before the supervisor sees it
        assert dead.total is not None and dead.total.load == dead.workers[0].engine.load
        _until(monitor, lambda v: v.answering == 2, timeout=90)  # healed: read again, as a new engine
    finally:
        monitor.stop()
        link.supervisor.close()


def test_attached_to_a_router_the_monitor_finds_its_workers_through_its_worker_list(
        fleet: FleetSupervisor, tmp_path: Path) -> None:
    link = EngineLink(Supervisor(tmp_path))
    monitor = FleetMonitor(link, config=FAST)
    try:
        assert not monitor.sample_once().active  # no engine: idle
        link.attach(fleet.fleet.router.url, None)
        view = _until(monitor, lambda v: v.answering == 2)
        assert {w.url for w in view.workers} == set(fleet.fleet.worker_urls)
        # their dump folders are not visible from an attached app: the recorder is left alone
        assert {w.experts.status for w in view.workers} == {"no_local_folder"}
    finally:
        monitor.stop()
        link.supervisor.close()
    plain = EngineLink(Supervisor(tmp_path / "plain"))
    plain.attach(fleet.fleet.worker_urls[0], None)  # a plain engine answers GET /workers 404: not a fleet
    monitor = FleetMonitor(plain, config=FAST)
    try:
        assert not monitor.sample_once().active
    finally:
        monitor.stop()
        plain.supervisor.close()


def test_the_monitor_tab_shows_a_row_per_worker_and_the_total_and_nothing_off_a_fleet() -> None:
    workers = (WorkerView("http://127.0.0.1:1", "ready", True, EngineSnapshot(0, "ok", load=_load(3, 1, 1, 10, 20.0)),
                          _experts(90, 100)),
               WorkerView("http://127.0.0.1:2", "failed", False, EngineSnapshot(0, "unreachable", "refused"),
                          ExpertSnapshot(0, "no_engine", "refused")))
    view = FleetView(1, "http://127.0.0.1:9", workers, total_engine(1, [w.engine for w in workers]),
                     total_experts([w.experts for w in workers]))
    html = workers_table(view)
    assert 'data-workers="2" data-answering="1"' in html and html.count("<tr data-worker=") == 2
    assert "90.0%" in html and "3 / 1" in html and "failed, out of the router" in html
    assert "1 of 2 answering" in html
    assert worker_heatmaps(view).count('class="m3-fleet-worker"') == 2
    assert workers_table(FleetView(1)) == ""


def test_the_heatmaps_are_resent_once_per_dump_interval_however_many_workers(tmp_path: Path) -> None:
    """Workers dump at their own moments: the fleet's expert time (what makes the Monitor resend every heatmap)
    moves on once per dump interval, or at once when a worker's expert status changes."""
    monitor = FleetMonitor(EngineLink(Supervisor(tmp_path)), config=SamplerConfig(expert_dump_every_s=5.0))

    def tick(*experts: ExpertSnapshot) -> float:
        views = [WorkerView(f"http://w{i}", "ready", True, EngineSnapshot(0, "ok"), e) for i, e in enumerate(experts)]
        total = monitor._experts_total(views)
        monitor._latest = FleetView(0, "http://router", tuple(views), None, total)
        return total.time

    first = tick(_experts_at(100.0), _experts_at(102.5))
    assert tick(_experts_at(105.0), _experts_at(102.5)) == first  # worker 0 dumped: too soon after worker 1
    assert tick(_experts_at(105.0), _experts_at(107.5)) == 107.5  # a dump interval later
    assert tick(_experts_at(105.0), ExpertSnapshot(108.0, "no_engine")) == 108.0  # worker 1 went away: at once


def _experts_at(when: float) -> ExpertSnapshot:
    return ExpertSnapshot(when, "recording", window_s=600, activations=10, hit_rate=HitRate(1, 10))
