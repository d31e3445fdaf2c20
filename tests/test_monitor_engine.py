"""The engine panel's source against the simulated engine: ok, slow, unreachable, recovering, refused."""

from __future__ import annotations

import copy
import http.server
import threading

import httpx
import pytest
from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest

from m3ui.monitor.engine import EngineSource
from m3ui.monitor.engine_parse import EngineCounters, parse_loads, parse_metrics, parse_server_info, rates_between
from m3ui.monitor.target import MonitorTarget
from tests.fault_proxy import FaultProxy
from tests.monitor_sims import chat, sim_with
from tests.sim_process import free_port

TIMEOUT_S, SLOW_AFTER_S = 0.6, 0.2
KEY = "monitor-test-key"


@pytest.fixture(scope="module")
def sim():
    """One engine for the module: with an API key and /metrics, no expert recorder."""
    with sim_with(api_key=KEY, enable_metrics=True) as running:
        yield running


@pytest.fixture
def proxy(sim):
    with FaultProxy(sim.url) as fault:
        yield fault


def _get(sim, path: str) -> dict:
    return httpx.get(f"{sim.url}{path}", headers={"Authorization": f"Bearer {KEY}"}, timeout=5).json()


def _source(url: str, api_key: str | None = KEY) -> EngineSource:
    source = EngineSource(TIMEOUT_S, SLOW_AFTER_S)
    source.set_target(MonitorTarget(engine_url=url, api_key=api_key))
    return source


def test_loads_of_several_data_parallel_ranks_are_summed(sim):
    body = _get(sim, "/v1/loads")
    first = dict(body["loads"][0], num_running_reqs=2, num_waiting_reqs=1, num_used_tokens=500,
                 max_total_num_tokens=1000, gen_throughput=10.0, cache_hit_rate=0.2, max_running_requests=48)
    second = dict(first, dp_rank=1, num_used_tokens=1500, max_total_num_tokens=3000, cache_hit_rate=0.4)
    load = parse_loads(dict(body, loads=[first, second]))
    assert (load.running_requests, load.queued_requests, load.used_tokens, load.max_total_tokens) == (4, 2, 2000, 4000)
    assert load.token_usage == 0.5 and load.gen_throughput == 20.0 and load.cache_hit_rate == pytest.approx(0.3)
    assert load.dp_ranks == 2 and load.max_running_requests == 96


@pytest.mark.parametrize("spoil", [
    lambda body: None, lambda body: [], lambda body: dict(body, loads=[]),
    lambda body: dict(body, loads=[{"num_running_reqs": 1}]),
    lambda body: dict(body, loads=[dict(body["loads"][0], gen_throughput="fast")]),
])
def test_an_unusable_loads_answer_is_a_value_error(sim, spoil):
    with pytest.raises(ValueError):
        parse_loads(spoil(copy.deepcopy(_get(sim, "/v1/loads"))))


def test_server_info_tells_the_recorder_mode_and_whether_metrics_exist(sim):
    info = parse_server_info(_get(sim, "/server_info"))
    assert (info.recorder_mode, info.records_gpu_masks, info.metrics_enabled) == (None, False, True)
    assert info.served_model_name and info.version
    recording = parse_server_info(dict(_get(sim, "/server_info"), expert_distribution_recorder_mode="stat",
                                       expert_distribution_recorder_buffer_size=1000))
    assert (recording.recorder_mode, recording.recorder_buffer_size) == ("stat", 1000)


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


def test_a_healthy_engine_gives_its_load_and_server_info(proxy):
    source = _source(proxy.url)
    snapshot = source.sample()
    assert snapshot.state == "ok" and snapshot.reason is None and snapshot.latency_s < SLOW_AFTER_S
    assert snapshot.load.max_total_tokens > 0 and snapshot.load.max_running_requests > 0
    assert snapshot.info.served_model_name and snapshot.info.metrics_enabled
    source.sample()
    assert proxy.paths().count("/server_info") == 1  # re-read every 30 s, not every tick


def test_the_engine_metrics_give_token_rates_after_a_chat(sim, proxy):
    source = _source(proxy.url)
    assert source.sample().rates is None  # the first read is the baseline
    chat(sim.url, max_tokens=30, api_key=KEY)
    rates = source.sample().rates
    assert rates is not None and rates.generation_tokens_per_s > 0 and rates.requests_per_s > 0
    assert rates.mean_ttft_s is not None and rates.mean_ttft_s >= 0


def test_an_engine_that_is_down_is_unreachable_with_a_reason():
    snapshot = _source(f"http://127.0.0.1:{free_port()}").sample()
    assert snapshot.state == "unreachable" and not snapshot.reachable and snapshot.load is None
    assert "cannot reach" in snapshot.reason


def test_a_slow_engine_is_slow_then_recovers(proxy):
    source = _source(proxy.url)
    assert source.sample().state == "ok"
    proxy.delay_s["/v1/loads"] = SLOW_AFTER_S + 0.1  # late but within the timeout: figures, marked slow
    late = source.sample()
    assert late.state == "slow" and late.load is not None and "took" in late.reason
    proxy.delay_s["/v1/loads"] = TIMEOUT_S + 0.3  # no answer in time
    stuck = source.sample()
    assert stuck.state == "slow" and stuck.load is None and "did not answer" in stuck.reason
    assert stuck.info is not None  # what is known of the engine survives a slow tick
    proxy.delay_s.clear()
    assert source.sample().state == "ok"


def test_an_engine_that_comes_back_is_a_new_epoch(sim, proxy):
    source = _source(proxy.url)
    source.sample()
    first = source.epoch
    source.sample()
    assert source.epoch == first
    port = proxy.port
    proxy.close()
    assert source.sample().state == "unreachable"
    with FaultProxy(sim.url, port):
        assert source.sample().state == "ok"
    assert source.epoch == first + 1


def test_a_wrong_api_key_is_an_error_that_says_so(sim):
    refused = _source(sim.url, api_key="wrong").sample()
    assert refused.state == "error" and "API key" in refused.reason
    assert _source(sim.url, api_key=None).sample().state == "error"


def test_no_engine_and_a_bad_url_are_states_not_exceptions():
    assert EngineSource(TIMEOUT_S, SLOW_AFTER_S).sample().state == "not_configured"
    source = _source("http://[::1")
    assert source.sample().state == "error" and "URL" in source.sample().reason
    assert _source("not-a-url").sample().state == "unreachable"


def test_a_server_that_is_not_an_engine_is_an_error(tmp_path):
    handler = lambda *args: http.server.SimpleHTTPRequestHandler(*args, directory=str(tmp_path))  # noqa: E731
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        snapshot = _source(f"http://127.0.0.1:{server.server_address[1]}").sample()
    finally:
        server.shutdown()
        server.server_close()
    assert snapshot.state == "error" and "404" in snapshot.reason
