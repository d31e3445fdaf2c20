"""The background sampler: one sample for every reader, bounded history, an engine that slows, stops, returns
(the simulated engine behind a fault-injecting proxy)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest

from m3ui.monitor.sampler import Sampler, SamplerConfig
from m3ui.monitor.target import MonitorTarget
from tests.fault_proxy import FaultProxy
from tests.monitor_sims import sim_with

FAST = SamplerConfig(interval_s=0.05, history_s=60, expert_dump_every_s=0.05, request_timeout_s=0.3,
                     slow_after_s=0.15)


def _wait_for(condition: Callable[[], bool], timeout_s: float = 5.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.02)


@pytest.fixture(scope="module")
def sim():
    with sim_with() as running:
        yield running


@pytest.fixture
def proxy(sim):
    with FaultProxy(sim.url) as fault:
        yield fault


def test_the_engine_state_degrades_when_it_slows_or_stops_and_recovers_while_local_figures_keep_coming(sim, proxy):
    with Sampler(MonitorTarget(engine_url=proxy.url), FAST) as sampler:
        state = lambda: sampler.latest().engine.state  # noqa: E731
        _wait_for(lambda: state() == "ok")
        proxy.delay_s["/v1/loads"] = 0.5  # beyond the timeout: the engine thread waits, the local one doesn't
        _wait_for(lambda: state() == "slow")
        cpu_before = len(sampler.history().cpu)
        time.sleep(0.4)
        assert len(sampler.history().cpu) >= cpu_before + 4
        proxy.delay_s.clear()
        _wait_for(lambda: state() == "ok")
        port = proxy.port
        proxy.close()  # the engine goes away
        _wait_for(lambda: state() == "unreachable")
        assert sampler.latest().engine.load is None and sampler.latest().experts.status == "no_engine"
        with FaultProxy(sim.url, port):  # and comes back at the same address
            _wait_for(lambda: state() == "ok")
        states = [s.state for s in sampler.history().engine]
    seen = [s for i, s in enumerate(states) if i == 0 or states[i - 1] != s]
    assert seen[:5] == ["ok", "slow", "ok", "unreachable", "ok"]


def test_readers_get_the_cached_snapshot_and_never_cause_a_sample(proxy):
    sampler = Sampler(MonitorTarget(engine_url=proxy.url), FAST)
    sampler.sample_once()
    hits = len(proxy.hits)
    snapshots = {id(sampler.latest().engine) for _ in range(200)}
    sampler.history()
    assert len(proxy.hits) == hits and len(snapshots) == 1
    sampler.stop()


def test_history_keeps_only_the_configured_span_and_answers_since_a_time():
    sampler = Sampler(config=SamplerConfig(interval_s=0.05, history_s=0.2))
    for _ in range(8):
        sampler.sample_once()
    history = sampler.history()
    assert len(history.cpu) == len(history.gpu) == len(history.engine) == 5  # 0.2 s / 0.05 s + 1
    cut = history.cpu[2].time
    assert [p.time for p in sampler.history(since=cut).cpu] == [p.time for p in history.cpu[3:]]
    sampler.stop()


def test_before_the_first_sample_every_panel_says_it_is_pending():
    snapshot = Sampler().latest()
    assert (snapshot.gpu.status, snapshot.cpu.status, snapshot.engine.state, snapshot.experts.status) == (
        "pending", "pending", "pending", "pending")


def test_without_an_engine_the_snapshot_says_so_and_local_figures_still_come():
    snapshot = Sampler().sample_once()
    assert snapshot.engine.state == "not_configured" and snapshot.experts.status == "no_engine"
    assert snapshot.cpu.status == "ok" and snapshot.cpu.ram_total_bytes > 0
    assert snapshot.gpu.status in ("ok", "no_gpu", "error")


def test_stop_ends_both_threads_promptly():
    sampler = Sampler(config=SamplerConfig(interval_s=10.0))
    sampler.start()
    threads = [t for t in threading.enumerate() if t.name.startswith("monitor-")]
    assert len(threads) == 2
    started = time.monotonic()
    sampler.stop()
    assert time.monotonic() - started < 2.0 and not any(t.is_alive() for t in threads)


def test_the_threads_tick_at_the_configured_interval():
    with Sampler(config=SamplerConfig(interval_s=0.05)) as sampler:
        time.sleep(0.5)
        ticks = len(sampler.history().cpu)
    assert 4 <= ticks <= 12  # ~10 at 0.05 s, with slack for a busy CI machine


def test_a_sampler_started_again_after_stop_watches_its_engine_again(proxy):
    sampler = Sampler(MonitorTarget(engine_url=proxy.url), FAST)
    with sampler:
        _wait_for(lambda: sampler.latest().engine.state == "ok")
    hits = len(proxy.hits)
    with sampler:
        _wait_for(lambda: len(proxy.hits) > hits + 2)
        _wait_for(lambda: sampler.latest().engine.state == "ok")


def _loads_between(proxy: FaultProxy, seconds: float) -> int:
    before = proxy.paths().count("/v1/loads")
    time.sleep(seconds)
    return proxy.paths().count("/v1/loads") - before


def test_with_nobody_reading_the_sampler_slows_down_and_the_next_reader_gets_a_fresh_sample_at_once(proxy):
    config = SamplerConfig(interval_s=0.05, request_timeout_s=1.0, unwatched_interval_s=0.6, watch_linger_s=2.0)
    with Sampler(MonitorTarget(engine_url=proxy.url), config) as sampler:
        started = time.monotonic()
        _wait_for(lambda: "/v1/loads" in proxy.paths())
        watched_at_start = _loads_between(proxy, 0.6)  # a started sampler counts as watched for a while
        time.sleep(max(0.0, started + 2.1 - time.monotonic()))  # nobody read it: the linger has passed
        unwatched = _loads_between(proxy, 1.2)
        asked = time.time()
        sampler.latest()
        _wait_for(lambda: sampler.latest().engine.time > asked, timeout_s=0.5)  # not at the next slow tick
        watched = 0
        for _ in range(10):  # someone watching reads every tick
            watched += _loads_between(proxy, 0.05)
            sampler.latest()
    assert watched_at_start >= 4  # ~12 at 0.05 s
    assert unwatched <= 3  # every 0.6 s instead of every 0.05 s
    assert watched >= 5
