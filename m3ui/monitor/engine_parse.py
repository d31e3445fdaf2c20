"""Pure parsers for the engine's monitoring answers: /v1/loads, /server_info and Prometheus /metrics.

Shapes from sglang-kt 0.7.2 (`entrypoints/v1_loads.py`, `entrypoints/http_server.py:server_info`,
`observability/metrics_collector.py`); see ENGINE_CONTRACT.md §3. Each parser raises ValueError on an
answer it cannot use; the engine source turns that into an "error" state with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass

from prometheus_client.parser import text_string_to_metric_families


@dataclass(frozen=True)
class EngineLoad:
    """/v1/loads summed over data-parallel ranks."""

    running_requests: int
    queued_requests: int
    used_tokens: int
    max_total_tokens: int
    token_usage: float  # share of the KV pool in use, 0..1
    gen_throughput: float  # generated tokens per second
    cache_hit_rate: float  # prefix cache hit rate, 0..1
    utilization: float
    max_running_requests: int
    dp_ranks: int


@dataclass(frozen=True)
class ServerInfo:
    """The /server_info fields the monitor uses (the server's resolved arguments)."""

    version: str | None
    served_model_name: str | None
    recorder_mode: str | None  # --expert-distribution-recorder-mode; None: the recorder endpoints kill the server
    recorder_buffer_size: int | None  # forward passes per dump ring; -1: unbounded
    records_gpu_masks: bool  # --record-kt-gpu-expert-distribution
    metrics_enabled: bool  # --enable-metrics: /metrics exists


@dataclass(frozen=True)
class EngineCounters:
    """Cumulative /metrics counters, summed over label sets; None when the engine does not export one."""

    prompt_tokens: float | None
    generation_tokens: float | None
    requests: float | None
    aborted_requests: float | None
    ttft_sum_s: float | None
    ttft_count: float | None


@dataclass(frozen=True)
class EngineRates:
    """Per-second rates between two /metrics reads."""

    prompt_tokens_per_s: float | None
    generation_tokens_per_s: float | None
    requests_per_s: float | None
    aborted_per_s: float | None
    mean_ttft_s: float | None  # over the requests whose first token came in the interval


def _number(row: dict, key: str) -> float:
    value = row[key]
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{key} is {value!r}, not a number")
    return float(value)


def parse_loads(data: object) -> EngineLoad:
    if not isinstance(data, dict) or not isinstance(data.get("loads"), list) or not data["loads"]:
        raise ValueError("no per-rank 'loads' list")
    try:
        rows = [row for row in data["loads"] if isinstance(row, dict)]
        used = sum(int(_number(r, "num_used_tokens")) for r in rows)
        total = sum(int(_number(r, "max_total_num_tokens")) for r in rows)
        ranks = len(rows)
        return EngineLoad(
            running_requests=sum(int(_number(r, "num_running_reqs")) for r in rows),
            queued_requests=sum(int(_number(r, "num_waiting_reqs")) for r in rows),
            used_tokens=used,
            max_total_tokens=total,
            token_usage=used / total if total else sum(_number(r, "token_usage") for r in rows) / ranks,
            gen_throughput=sum(_number(r, "gen_throughput") for r in rows),
            cache_hit_rate=sum(_number(r, "cache_hit_rate") for r in rows) / ranks,
            utilization=sum(_number(r, "utilization") for r in rows) / ranks,
            max_running_requests=sum(int(_number(r, "max_running_requests")) for r in rows),
            dp_ranks=ranks,
        )
    except (KeyError, ZeroDivisionError) as error:
        raise ValueError(f"a rank lacks {error}") from None


def parse_server_info(data: object) -> ServerInfo:
    if not isinstance(data, dict):
        raise ValueError("not a JSON object")
    mode = data.get("expert_distribution_recorder_mode")
    buffer = data.get("expert_distribution_recorder_buffer_size")
    return ServerInfo(
        version=str(data["version"]) if data.get("version") is not None else None,
        served_model_name=str(data["served_model_name"]) if data.get("served_model_name") else None,
        recorder_mode=str(mode) if mode else None,
        recorder_buffer_size=buffer if isinstance(buffer, int) and not isinstance(buffer, bool) else None,
        records_gpu_masks=data.get("record_kt_gpu_expert_distribution") is True,
        metrics_enabled=data.get("enable_metrics") is True,
    )


_COUNTER_SAMPLES = {
    "prompt_tokens": "sglang:prompt_tokens_total",
    "generation_tokens": "sglang:generation_tokens_total",
    "requests": "sglang:num_requests_total",
    "aborted_requests": "sglang:num_aborted_requests_total",
    "ttft_sum_s": "sglang:time_to_first_token_seconds_sum",
    "ttft_count": "sglang:time_to_first_token_seconds_count",
}


def parse_metrics(text: str) -> EngineCounters:
    totals: dict[str, float] = {}
    wanted = {sample: field for field, sample in _COUNTER_SAMPLES.items()}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            field = wanted.get(sample.name)
            if field is not None:
                totals[field] = totals.get(field, 0.0) + float(sample.value)
    return EngineCounters(**{field: totals.get(field) for field in _COUNTER_SAMPLES})


def _rate(before: float | None, after: float | None, seconds: float) -> float | None:
    if before is None:
        before = 0.0  # a labelled series appears at its first increment: it was 0 before
    if after is None or after < before or seconds <= 0:
        return None  # not exported, or the engine restarted and its counters began again
    return (after - before) / seconds


def rates_between(before: EngineCounters, after: EngineCounters, seconds: float) -> EngineRates:
    ttft_sum = _rate(before.ttft_sum_s, after.ttft_sum_s, 1.0)  # increments, not rates
    ttft_count = _rate(before.ttft_count, after.ttft_count, 1.0)
    return EngineRates(
        prompt_tokens_per_s=_rate(before.prompt_tokens, after.prompt_tokens, seconds),
        generation_tokens_per_s=_rate(before.generation_tokens, after.generation_tokens, seconds),
        requests_per_s=_rate(before.requests, after.requests, seconds),
        aborted_per_s=_rate(before.aborted_requests, after.aborted_requests, seconds),
        mean_ttft_s=ttft_sum / ttft_count if ttft_sum is not None and ttft_count else None,
    )
