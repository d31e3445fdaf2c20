"""How long the simulated KT hybrid takes: prefill (time to first token) and each decode step.

Prefill runs at M3UI_SIM_PREFILL_TPS with CPU experts, or at M3UI_SIM_GPU_PREFILL_TPS on the layerwise
full-GPU path for prompts longer than --kt-gpu-prefill-token-threshold; tokens already in the prefix cache
cost nothing. A decode step's time comes from where its activations land (`launch.decode_speed`, the model the
placement planner predicts with), and a batch of several running requests shares each step's expert traffic,
so every request slows down as concurrency grows while the total throughput still rises.
M3UI_SIM_UNTHROTTLED=1: the engine never waits, but these are still the simulated times it reports in its
latency metrics, so a fast run measures the same decode speed as a paced one.
"""

from __future__ import annotations

from launch.decode_speed import ALL_CPU_STEP, batch_step_factor
from launch.host_speed import PREFILL_OVERHEAD_S
from launch.sim.config import SimConfig


class Pacing:
    def __init__(self, config: SimConfig, gpu_prefill_threshold: int | None) -> None:
        self._config = config
        self._threshold = gpu_prefill_threshold
        # M3UI_SIM_DECODE_TPS is the all-CPU-experts speed; step times are relative to the all-GPU one.
        self._all_gpu_tps = config.decode_tps * ALL_CPU_STEP

    @property
    def throttled(self) -> bool:
        return not self._config.unthrottled

    def prefill_seconds(self, new_tokens: int, prompt_tokens: int) -> float:
        on_gpu = self._threshold is not None and prompt_tokens > self._threshold
        rate = self._config.gpu_prefill_tps if on_gpu else self._config.prefill_tps
        return PREFILL_OVERHEAD_S + new_tokens / rate

    def decode_seconds(self, step_time: float, running: int) -> float:
        """One decode step of `running` requests; `step_time` relative to all-GPU (RoutedBatch.step_time)."""
        alone = step_time / self._all_gpu_tps
        return alone * batch_step_factor(running)
