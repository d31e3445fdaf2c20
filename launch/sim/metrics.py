"""The engine's load figures (for /v1/loads and /server_info) and its Prometheus /metrics.

Metric names, help texts, labels and buckets are sglang-kt 0.7.2's (observability/metrics_collector.py):
scheduler gauges carry model_name, engine_type, tp_rank, pp_rank, moe_ep_rank; the tokenizer's counters
and histograms carry model_name.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass

import prometheus_client
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

TTFT_BUCKETS = (0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100, 200, 400)
E2E_BUCKETS = (0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100, 200, 400, 600, 1200, 1800, 2400)
ITL_BUCKETS = (0.002, 0.004, 0.006, 0.008, 0.010, 0.015, 0.020, 0.025, 0.030, 0.035, 0.040, 0.060, 0.080, 0.100,
               0.200, 0.400, 0.600, 0.800, 1.000, 2.000, 4.000, 6.000, 8.000)
QUEUE_BUCKETS = (0.0, 0.1, 0.2, 0.5, 1, 2, 3, 4, 5, 10, 15, 20, 30, 40, 50, 60, 70, 80, 90, 100, 200, 300, 400,
                 500, 600, 700, 800, 900, 1000, 1200, 1400, 1600, 1800, 2000, 2500, 3000)
_GAUGES = (
    ("num_running_reqs", "The number of running requests."),
    ("num_queue_reqs", "The number of requests in the waiting queue."),
    ("num_used_tokens", "The number of used tokens."),
    ("token_usage", "The token usage."),
    ("gen_throughput", "The generation throughput (token/s)."),
    ("cache_hit_rate", "The prefix cache hit rate."),
    ("max_total_num_tokens", "Maximum total number of tokens in the KV cache pool."),
    ("utilization", "The utilization."),
)
THROUGHPUT_WINDOW_S = 5.0

# sglang's multiprocess collector writes no *_created series.
prometheus_client.disable_created_metrics()


@dataclass(frozen=True)
class LoadSnapshot:
    running: int
    waiting: int
    used_tokens: int
    max_total_num_tokens: int
    gen_throughput: float
    cache_hit_rate: float

    @property
    def token_usage(self) -> float:
        return self.used_tokens / self.max_total_num_tokens if self.max_total_num_tokens > 0 else 0.0


class EngineMetrics:
    """Mutated by the scheduler (one event loop, no locking needed); read by the HTTP endpoints."""

    def __init__(self, model_name: str, max_total_num_tokens: int, enabled: bool) -> None:
        self.running = 0
        self.waiting = 0
        self.used_tokens = 0
        self.max_total_num_tokens = max_total_num_tokens
        self._token_times: deque[float] = deque()
        self._prompt_tokens = 0
        self._cached_tokens = 0
        self.registry = CollectorRegistry() if enabled else None
        if self.registry is not None:
            self._init_prometheus(model_name)

    def _init_prometheus(self, model_name: str) -> None:
        reg = self.registry
        scheduler = {"model_name": model_name, "engine_type": "unified", "tp_rank": "0", "pp_rank": "0",
                     "moe_ep_rank": "0"}
        self._gauges = {name: Gauge(f"sglang:{name}", doc, list(scheduler), registry=reg,
                                    multiprocess_mode="mostrecent").labels(**scheduler) for name, doc in _GAUGES}

        def counter(name: str, doc: str) -> Counter:
            return Counter(f"sglang:{name}", doc, ["model_name"], registry=reg).labels(model_name=model_name)

        def histogram(name: str, doc: str, buckets: tuple[float, ...]) -> Histogram:
            return Histogram(f"sglang:{name}", doc, ["model_name"], buckets=buckets, registry=reg).labels(
                model_name=model_name)

        self._prompt_counter = counter("prompt_tokens_total", "Number of prefill tokens processed.")
        self._generation_counter = counter("generation_tokens_total", "Number of generation tokens processed.")
        self._requests_counter = counter("num_requests_total", "Number of requests processed.")
        self._aborted_counter = counter("num_aborted_requests_total", "Number of requests aborted.")
        self._ttft = histogram("time_to_first_token_seconds", "Histogram of time to first token in seconds.",
                               TTFT_BUCKETS)
        self._itl = histogram("inter_token_latency_seconds", "Histogram of inter-token latency in seconds.",
                              ITL_BUCKETS)
        self._e2e = histogram("e2e_request_latency_seconds", "Histogram of End-to-end request latency in seconds",
                              E2E_BUCKETS)
        self._queue = histogram("queue_time_seconds", "Histogram of queueing time in seconds.", QUEUE_BUCKETS)

    def prefilled(self, prompt_tokens: int, cached_tokens: int, queue_seconds: float, ttft_seconds: float) -> None:
        self._prompt_tokens += prompt_tokens
        self._cached_tokens += cached_tokens
        if self.registry is not None:
            self._prompt_counter.inc(prompt_tokens)
            self._queue.observe(queue_seconds)
            self._ttft.observe(ttft_seconds)

    def decoded(self, tokens: int, seconds_per_token: float) -> None:
        now = time.monotonic()
        self._token_times.extend([now] * tokens)
        if self.registry is not None:
            self._generation_counter.inc(tokens)
            for _ in range(tokens):
                self._itl.observe(seconds_per_token)

    def finished(self, e2e_seconds: float, aborted: bool) -> None:
        if self.registry is not None:
            self._requests_counter.inc()
            self._e2e.observe(e2e_seconds)
            if aborted:
                self._aborted_counter.inc()

    def snapshot(self) -> LoadSnapshot:
        cutoff = time.monotonic() - THROUGHPUT_WINDOW_S
        while self._token_times and self._token_times[0] < cutoff:
            self._token_times.popleft()
        return LoadSnapshot(
            running=self.running, waiting=self.waiting, used_tokens=self.used_tokens,
            max_total_num_tokens=self.max_total_num_tokens,
            gen_throughput=len(self._token_times) / THROUGHPUT_WINDOW_S,
            cache_hit_rate=self._cached_tokens / self._prompt_tokens if self._prompt_tokens else 0.0,
        )

    def exposition(self) -> bytes:
        """/metrics text; gauges are set from the current state first."""
        assert self.registry is not None, "/metrics is only served with --enable-metrics"
        snap = self.snapshot()
        values = {"num_running_reqs": snap.running, "num_queue_reqs": snap.waiting,
                  "num_used_tokens": snap.used_tokens, "token_usage": snap.token_usage,
                  "gen_throughput": snap.gen_throughput, "cache_hit_rate": snap.cache_hit_rate,
                  "max_total_num_tokens": snap.max_total_num_tokens, "utilization": 0.0}
        for name, value in values.items():
            self._gauges[name].set(value)
        return generate_latest(self.registry)
