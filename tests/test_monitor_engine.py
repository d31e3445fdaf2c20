"""The engine panel's source against a real HTTP server on 127.0.0.1: ok, slow, unreachable, recovering."""

from __future__ import annotations

import socket

import pytest
from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest

from m3ui.monitor.engine import EngineSource
from m3ui.monitor.engine_parse import EngineCounters, parse_loads, parse_metrics, parse_server_info, rates_between
from m3ui.monitor.target import MonitorTarget
from tests.monitor_fake_engine import FakeEngine, loads_body, server_info_body

TIMEOUT_S, SLOW_AFTER_S = 0.6, 0.2


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def engine():
    with FakeEngine() as fake:
        yield fake


def _source(url: str, api_key: str | None = None) -> EngineSource:
    source = EngineSource(TIMEOUT_S, SLOW_AFTER_S)
    source.set_target(MonitorTarget(engine_url=url, api_key=api_key))
    return source


def test_loads_of_several_data_parallel_ranks_are_summed():
    body = loads_body(running=2, queued=1, used=500, total=1000, throughput=10.0, cache_hit_rate=0.2)
    second = dict(body["loads"][0], dp_rank=1, num_used_tokens=1500, max_total_num_tokens=3000, cache_hit_rate=0.4)
    load = parse_loads(dict(body, loads=[body["loads"][0], second]))
    assert (load.running_requests, load.queued_requests, load.used_tokens, load.max_total_tokens) == (4, 2, 2000, 4000)
    assert load.token_usage == 0.5 and load.gen_throughput == 20.0 and load.cache_hit_rate == pytest.approx(0.3)
    assert load.dp_ranks == 2 and load.max_running_requests == 96


@pytest.mark.parametrize("bad", [None, [], {"loads": []}, {"loads": [{"num_running_reqs": 1}]},
                                 {"loads": [dict(loads_body()["loads"][0], gen_throughput="fast")]}])
def test_an_unusable_loads_answer_is_a_value_error(bad):
    with pytest.raises(ValueError):
        parse_loads(bad)


def test_server_info_tells_the_recorder_mode_and_whether_metrics_exist():
    info = parse_server_info(server_info_body(recorder_mode="stat", gpu_masks=True, metrics=True))
    assert (info.recorder_mode, info.recorder_buffer_size, info.records_gpu_masks, info.metrics_enabled) == (
        "stat", 1000, True, True)
    assert parse_server_info(server_info_body()).recorder_mode is None


def _metrics_text(prompt: float, generated: float, ttfts: list[float]) -> str:
    """What prometheus_client (the engine's own exporter) writes for sglang's metric names, two label sets."""
    registry = CollectorRegistry()
    labels = ["model_name", "engine_type"]
    prompt_c = Counter("sglang:prompt_tokens_total", "prompt", labels, registry=registry)
    gen_c = Counter("sglang:generation_tokens_total", "gen", labels, registry=registry)
    requests = Counter("sglang:num_requests_total", "requests", labels, registry=registry)
    ttft = Histogram("sglang:time_to_first_token_seconds", "ttft", labels, registry=registry)
    for engine_type, share in (("unified", 0.75), ("other", 0.25)):
        prompt_c.labels("MiniMax-M3", engine_type).inc(prompt * share)
        gen_c.labels("MiniMax-M3", engine_type).inc(generated * share)
        requests.labels("MiniMax-M3", engine_type).inc(len(ttfts) * share)
    for value in ttfts:
        ttft.labels("MiniMax-M3", "unified").observe(value)
    return generate_latest(registry).decode()


def test_metrics_counters_are_summed_over_label_sets_and_turned_into_rates():
    before = parse_metrics(_metrics_text(100, 1000, [0.5]))
    after = parse_metrics(_metrics_text(300, 1600, [0.5, 1.0, 2.0]))
    assert (before.prompt_tokens, before.generation_tokens, before.ttft_count) == (100, 1000, 1)
    assert after.aborted_requests is None  # not exported: unknown, not zero
    rates = rates_between(before, after, seconds=2.0)
    assert (rates.prompt_tokens_per_s, rates.generation_tokens_per_s, rates.requests_per_s) == (100, 300, 1)
    assert rates.mean_ttft_s == pytest.approx(1.5)  # the two requests of the interval
    assert rates.aborted_per_s is None


def test_counters_that_went_down_mean_a_restarted_engine_and_give_no_rate():
    high = EngineCounters(500, 500, 5, 0, 1.0, 2)
    low = EngineCounters(10, 10, 1, 0, 0.1, 1)
    rates = rates_between(high, low, 1.0)
    assert rates.prompt_tokens_per_s is None and rates.mean_ttft_s is None


def test_a_healthy_engine_gives_its_load_and_server_info(engine):
    source = _source(engine.url)
    snapshot = source.sample()
    assert snapshot.state == "ok" and snapshot.reason is None and snapshot.latency_s < SLOW_AFTER_S
    assert snapshot.load.running_requests == 1 and snapshot.load.gen_throughput == 42.5
    assert snapshot.info.served_model_name == "MiniMax-M3" and snapshot.rates is None
    source.sample()
    assert [p for _, p in engine.hits].count("/server_info") == 1  # re-read every 30 s, not every tick


def test_metrics_are_read_only_when_the_engine_exports_them(engine):
    source = _source(engine.url)
    source.sample()
    assert "/metrics" not in engine.paths_hit()
    engine.info = server_info_body(metrics=True)
    engine.metrics_text = _metrics_text(100, 100, [])
    source = _source(engine.url)
    assert source.sample().rates is None  # the first read is the baseline
    engine.metrics_text = _metrics_text(100, 400, [0.25])
    rates = source.sample().rates
    assert rates is not None and rates.generation_tokens_per_s > 0 and rates.mean_ttft_s == pytest.approx(0.25)


def test_an_engine_that_is_down_is_unreachable_with_a_reason():
    source = _source(f"http://127.0.0.1:{_free_port()}")
    snapshot = source.sample()
    assert snapshot.state == "unreachable" and not snapshot.reachable and snapshot.load is None
    assert "cannot reach" in snapshot.reason


def test_a_slow_engine_is_slow_then_recovers(engine):
    source = _source(engine.url)
    assert source.sample().state == "ok"
    engine.delay_s["/v1/loads"] = SLOW_AFTER_S + 0.1  # late but within the timeout: figures, marked slow
    late = source.sample()
    assert late.state == "slow" and late.load is not None and "took" in late.reason
    engine.delay_s["/v1/loads"] = TIMEOUT_S + 0.3  # no answer in time
    stuck = source.sample()
    assert stuck.state == "slow" and stuck.load is None and "did not answer" in stuck.reason
    assert stuck.info is not None  # what is known of the engine survives a slow tick
    engine.delay_s.clear()
    assert source.sample().state == "ok"


def test_an_engine_that_comes_back_is_a_new_epoch(engine):
    source = _source(engine.url)
    source.sample()
    first = source.epoch
    source.sample()
    assert source.epoch == first
    source.set_target(MonitorTarget(engine_url=f"http://127.0.0.1:{_free_port()}"))
    assert source.sample().state == "unreachable"
    source.set_target(MonitorTarget(engine_url=engine.url))
    source.sample()
    assert source.epoch == first + 1


def test_a_wrong_api_key_is_an_error_that_says_so():
    with FakeEngine(api_key="right") as engine:
        assert _source(engine.url, api_key="right").sample().state == "ok"
        refused = _source(engine.url, api_key="wrong").sample()
        assert refused.state == "error" and "API key" in refused.reason


def test_no_engine_and_a_bad_url_are_states_not_exceptions():
    assert EngineSource(TIMEOUT_S, SLOW_AFTER_S).sample().state == "not_configured"
    source = _source("http://[::1")
    assert source.sample().state == "error" and "URL" in source.sample().reason
    assert _source("not-a-url").sample().state == "unreachable"


def test_an_answer_that_is_not_loads_is_an_error(engine):
    engine.loads = None  # 404: not an sglang server
    snapshot = _source(engine.url).sample()
    assert snapshot.state == "error" and "404" in snapshot.reason
