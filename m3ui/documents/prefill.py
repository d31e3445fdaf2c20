"""How long a prompt's prefill is expected to take, for the progress bar shown until the first token.

The simulated engine's rate is its configured one (with its GPU prefill threshold); a real engine's is the
Monitor's best prompt tok/s over its history, once a window caught a real prefill (a few short prompts a
second say nothing about prefill speed); else there is none, and the bar shows the elapsed time only."""

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


MEASURED_FLOOR_TPS = 200.0  # below this, the windows saw only short prompts trickle in


def measured_rate(window_rates: list[float | None]) -> PrefillRate | None:
    best = max((r for r in window_rates if r), default=0.0)
    return PrefillRate(best, "measured") if best >= MEASURED_FLOOR_TPS else None


def expected_seconds(prompt_tokens: int, rate: PrefillRate | None) -> float | None:
    return None if rate is None or rate.tokens_per_s <= 0 else PREFILL_OVERHEAD_S + prompt_tokens / rate.tokens_per_s
