"""`python -m launch bench`: how fast a running engine decodes and prefills, over its OpenAI API.

Decode tok/s with 1, 4 and 16 requests at once (all of them together), prefill tok/s of 1K, 8K and 32K-token
prompts, time to first token and inter-token latency (p50, p99), each against the roofline of the launch.
Prompts start with a fresh random word, so no run is served from the prefix cache.

Two clocks: `wall` times the streamed tokens as they arrive (the default: what a user sees); `engine` reads the
engine's own latency histograms on /metrics (`--enable-metrics`) before and after each phase, for an engine
whose timings are not wall-clock time (the simulated engine under M3UI_SIM_UNTHROTTLED reports simulated time,
so a tuner's trials take seconds).
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import httpx
import numpy as np
from prometheus_client.parser import text_string_to_metric_families

from launch.roofline import CONCURRENCY, PROMPT_LENGTHS

DECODE_TOKENS = 64
QUICK_DECODE_TOKENS = 24
REQUEST_TIMEOUT_S = 600.0
DECODE_PROMPT = "Count from 1 to 2000, separated by commas, with nothing else."
_WORDS = ("river", "stone", "light", "garden", "window", "market", "silver", "forest", "paper", "engine", "winter",
          "bridge", "orange", "castle", "letter", "pocket", "harbor", "meadow", "candle", "planet", "mirror",
          "ladder", "valley", "copper", "thunder", "feather", "island", "basket", "shadow", "rocket", "violet",
          "canyon")
QUANTILES = (50, 99)
Progress = Callable[[str], None]


class BenchError(RuntimeError):
    """The endpoint could not be measured (unreachable, refused, or it died mid-run)."""


@dataclass
class BenchResult:
    decode_tok_s: dict[str, float | None] = field(default_factory=dict)
    prefill_tok_s: dict[str, float | None] = field(default_factory=dict)
    ttft_ms: dict[str, float | None] = field(default_factory=dict)
    itl_ms: dict[str, float | None] = field(default_factory=dict)
    roofline: dict[str, object] = field(default_factory=dict)
    clock: str = "wall"

    def to_json(self) -> dict[str, object]:
        return {"decode_tok_s": self.decode_tok_s, "prefill_tok_s": self.prefill_tok_s, "ttft_ms": self.ttft_ms,
                "itl_ms": self.itl_ms, "roofline": self.roofline, "clock": self.clock}


@dataclass(frozen=True)
class BenchPlan:
    concurrency: tuple[int, ...] = CONCURRENCY
    prompt_lengths: tuple[int, ...] = PROMPT_LENGTHS
    decode_tokens: int = DECODE_TOKENS
    clock: str = "wall"


@dataclass
class _Stream:
    ttft_s: float | None = None
    token_times: list[float] = field(default_factory=list)
    completion_tokens: int = 0
    prompt_tokens: int = 0


@dataclass(frozen=True)
class _Counters:
    generated: float
    prompt: float
    itl_sum: float
    ttft_sum: float
    itl_buckets: tuple[tuple[float, float], ...]
    ttft_buckets: tuple[tuple[float, float], ...]


def filler_prompt(tokens: int, rng: random.Random) -> str:
    """About `tokens` tokens of words (one token each in common tokenizers), starting with a fresh word."""
    words = [f"{rng.choice(_WORDS)}{rng.randrange(10**6)}"] + [rng.choice(_WORDS) for _ in range(max(0, tokens - 12))]
    return " ".join(words) + "\nReply with one word."


def percentile_ms(values: Sequence[float], q: float) -> float | None:
    return float(np.percentile(values, q) * 1000) if len(values) else None


def histogram_quantile_ms(before: tuple[tuple[float, float], ...], after: tuple[tuple[float, float], ...],
                          q: float) -> float | None:
    """The upper bound of the bucket holding quantile q of what was observed between two scrapes."""
    counts = [(le, a - b) for (le, a), (_, b) in zip(after, before, strict=True)]
    total = counts[-1][1] if counts else 0
    if total <= 0:
        return None
    for le, cumulative in counts:
        if cumulative >= q / 100 * total:
            return le * 1000 if le != float("inf") else None
    return None


class Bench:
    def __init__(self, endpoint: str, api_key: str | None = None, model: str | None = None,
                 progress: Progress = print) -> None:
        self.endpoint = endpoint.rstrip("/")
        import openai  # measuring needs the SDK; `python -m launch probe` and the rest of launch/ do not

        self._sdk_error = openai.APIError
        self._http = httpx.AsyncClient(timeout=REQUEST_TIMEOUT_S, trust_env=False)
        self._client = openai.AsyncOpenAI(base_url=f"{self.endpoint}/v1", api_key=api_key or "none",
                                          http_client=self._http, max_retries=0)
        self._model = model
        self._progress = progress
        self._rng = random.Random()

    async def close(self) -> None:
        await self._client.close()

    async def _model_name(self) -> str:
        if self._model is None:
            try:
                models = await self._client.models.list()
            except self._sdk_error as exc:
                raise BenchError(f"cannot reach {self.endpoint}: {exc}") from None
            if not models.data:
                raise BenchError(f"{self.endpoint} serves no model")
            self._model = models.data[0].id
        return self._model

    async def _stream(self, prompt: str, max_tokens: int) -> _Stream:
        out = _Stream()
        start = time.perf_counter()
        try:
            stream = await self._client.chat.completions.create(
                model=await self._model_name(), messages=[{"role": "user", "content": prompt}], stream=True,
                max_tokens=max_tokens, temperature=0.0, stream_options={"include_usage": True})
            async for chunk in stream:
                if chunk.usage is not None:
                    out.completion_tokens = chunk.usage.completion_tokens
                    out.prompt_tokens = chunk.usage.prompt_tokens
                if chunk.choices and (chunk.choices[0].delta.content or getattr(
                        chunk.choices[0].delta, "reasoning_content", None)):
                    now = time.perf_counter() - start
                    if out.ttft_s is None:
                        out.ttft_s = now
                    out.token_times.append(now)
        except self._sdk_error as exc:
            raise BenchError(f"{self.endpoint}: {exc}") from None
        return out

    async def _counters(self) -> _Counters:
        try:
            response = await self._http.get(f"{self.endpoint}/metrics")
            response.raise_for_status()
        except httpx.HTTPError as exc:
            raise BenchError(f"the engine clock needs /metrics (--enable-metrics): {exc}") from None
        totals: dict[str, float] = {}
        buckets: dict[str, list[tuple[float, float]]] = {"itl": [], "ttft": []}
        for family in text_string_to_metric_families(response.text):
            for sample in family.samples:
                totals[sample.name] = totals.get(sample.name, 0.0) + float(sample.value)
                kind = {"sglang:inter_token_latency_seconds_bucket": "itl",
                        "sglang:time_to_first_token_seconds_bucket": "ttft"}.get(sample.name)
                if kind:
                    buckets[kind].append((float(sample.labels["le"]), float(sample.value)))
        return _Counters(totals.get("sglang:generation_tokens_total", 0.0),
                         totals.get("sglang:prompt_tokens_total", 0.0),
                         totals.get("sglang:inter_token_latency_seconds_sum", 0.0),
                         totals.get("sglang:time_to_first_token_seconds_sum", 0.0),
                         tuple(sorted(buckets["itl"])), tuple(sorted(buckets["ttft"])))

    async def run(self, plan: BenchPlan) -> BenchResult:
        await self._model_name()
        result = BenchResult(clock=plan.clock)
        ttfts: list[float] = []
        itls: list[float] = []
        first = last = None
        for n in plan.concurrency:
            self._progress(f"decode, {n} request(s) at once, {plan.decode_tokens} tokens each ...")
            before = await self._counters() if plan.clock == "engine" else None
            streams = await asyncio.gather(*(self._stream(DECODE_PROMPT, plan.decode_tokens) for _ in range(n)))
            after = await self._counters() if plan.clock == "engine" else None
            first = first or before
            last = after
            result.decode_tok_s[str(n)] = _decode_rate(streams, n, before, after)
            ttfts += [s.ttft_s for s in streams if s.ttft_s is not None]
            itls += [b - a for s in streams for a, b in zip(s.token_times, s.token_times[1:], strict=False)]
            self._progress(f"  {_figure(result.decode_tok_s[str(n)])} tok/s")
        for length in plan.prompt_lengths:
            self._progress(f"prefill, a {length}-token prompt ...")
            before = await self._counters() if plan.clock == "engine" else None
            stream = await self._stream(filler_prompt(length, self._rng), 1)
            after = await self._counters() if plan.clock == "engine" else None
            result.prefill_tok_s[str(length)] = _prefill_rate(stream, before, after)
            self._progress(f"  {_figure(result.prefill_tok_s[str(length)])} tok/s")
        if plan.clock == "engine" and first is not None and last is not None:
            result.ttft_ms = {f"p{q}": histogram_quantile_ms(first.ttft_buckets, last.ttft_buckets, q)
                              for q in QUANTILES}
            result.itl_ms = {f"p{q}": histogram_quantile_ms(first.itl_buckets, last.itl_buckets, q)
                             for q in QUANTILES}
        else:
            result.ttft_ms = {f"p{q}": percentile_ms(ttfts, q) for q in QUANTILES}
            result.itl_ms = {f"p{q}": percentile_ms(itls, q) for q in QUANTILES}
        return result


def _figure(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1f}"


def _decode_rate(streams: Sequence[_Stream], n: int, before: _Counters | None, after: _Counters | None) -> float | None:
    if before is not None and after is not None:
        generated, itl = after.generated - before.generated, after.itl_sum - before.itl_sum
        return n * generated / itl if itl > 0 else None
    timed = [s for s in streams if len(s.token_times) > 1]
    if not timed:
        return None
    # tokens after each request's first, over the span from the first first-token to the last token
    tokens = sum(max(s.completion_tokens, len(s.token_times)) - 1 for s in timed)
    span = max(s.token_times[-1] for s in timed) - min(s.token_times[0] for s in timed)
    return tokens / span if span > 0 else None


def _prefill_rate(stream: _Stream, before: _Counters | None, after: _Counters | None) -> float | None:
    if before is not None and after is not None:
        ttft = after.ttft_sum - before.ttft_sum
        return (after.prompt - before.prompt) / ttft if ttft > 0 else None
    return stream.prompt_tokens / stream.ttft_s if stream.ttft_s and stream.prompt_tokens else None


def shares(result: BenchResult, ceiling: dict[str, dict[str, float]]) -> dict[str, dict[str, float | None]]:
    """Each measured figure over the roofline's for the same concurrency or prompt length."""
    out: dict[str, dict[str, float | None]] = {}
    for key in ("decode_tok_s", "prefill_tok_s"):
        measured: dict[str, float | None] = getattr(result, key)
        out[key] = {k: (v / ceiling[key][k] if v is not None and ceiling.get(key, {}).get(k) else None)
                    for k, v in measured.items()}
    return out


def run_bench(endpoint: str, plan: BenchPlan, api_key: str | None = None, progress: Progress = print) -> BenchResult:
    async def main() -> BenchResult:
        bench = Bench(endpoint, api_key, progress=progress)
        try:
            return await bench.run(plan)
        finally:
            await bench.close()

    return asyncio.run(main())
