"""How long a prompt's prefill is expected to take, for the progress bar shown until the first token.

The rate is the engine's measured one when the Monitor has seen prompts go through (its best prompt tok/s over
its history: a 1-second window that caught a prefill), else the simulated engine's configured rate (with its GPU
prefill threshold), else nothing: the bar then shows elapsed time only."""

from __future__ import annotations

from dataclasses import dataclass

from launch.sim.config import load_sim_config
from launch.sim.pacing import PREFILL_OVERHEAD_S


@dataclass(frozen=True)
class PrefillRate:
    tokens_per_s: float
    source: str  # "measured" or "configured" (the simulated engine)


def simulated_rate(tp_size: int, gpu_threshold: int | None, prompt_tokens: int) -> PrefillRate:
    config = load_sim_config(tp_size)  # the same environment the app started the simulated engine with
    on_gpu = gpu_threshold is not None and prompt_tokens > gpu_threshold
    return PrefillRate(config.gpu_prefill_tps if on_gpu else config.prefill_tps, "configured")


def expected_seconds(prompt_tokens: int, rate: PrefillRate | None) -> float | None:
    return None if rate is None or rate.tokens_per_s <= 0 else PREFILL_OVERHEAD_S + prompt_tokens / rate.tokens_per_s
