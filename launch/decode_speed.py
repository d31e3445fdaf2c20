"""How fast a KT hybrid decodes, given where each MoE layer's routed activations land (GPU or CPU experts).

The one speed model of m3ui: the simulated engine paces its decode steps with it, and the placement planner
predicts decode tok/s with it. One decode step, relative to the same step with every expert on the GPU:

    step = 1 + CPU_ACTIVATION_COST * mean_l(miss_l) + CPU_LAYER_COST * mean_l(1 - (1 - miss_l) ** k)

`miss_l` is the share of layer l's activations served by CPU experts and k the experts per token. The second
term is the CPU experts' work (weights streamed from DRAM, proportional to what they serve); the third is
the fixed price of a layer that has to wait for the CPU at all (hand-off, synchronisation), paid whenever
any of a token's k experts in that layer sits on the CPU. That fixed price is why a placement that makes
whole layers GPU-only (frequency at a high GPU share) gains far more than its hit rate alone suggests, and
why tok/s is not linear in the hit rate.

Calibration (the published reference points; `benchmarks/bench_placement.py` reprints them): with the
simulated engine's routing (`launch/sim/routing.py`) on M3's shape, frequency placement over uniform gives
+4% / +16% / +31% decode tok/s at 10% / 50% / 90% GPU experts and 0% at 0% and 100%, the shape that
KTransformers' expert-scheduling tutorial measured (Qwen3-Next-80B-A3B-FP8, 4x RTX 4090, TP4, ShareGPT:
frequency +3.6% / +16.8% / +32.2%, within +-2% at 0% and 100%), as cited in m3ui issue 13.
A deployment whose decode is bound elsewhere (a DeepSeek-V4-Flash KT fork raised predicted coverage from
22.5% to 59.6% with no decode change) has smaller costs; these constants describe the simulated M3 hybrid.
"""

from __future__ import annotations

import numpy as np

CPU_ACTIVATION_COST = 3.83
CPU_LAYER_COST = 2.28
ALL_CPU_STEP = 1.0 + CPU_ACTIVATION_COST + CPU_LAYER_COST  # every activation on a CPU expert
# One request alone with every routed expert on the CPU, tok/s: the seed's M3 hybrid, the simulated
# engine's default (M3UI_SIM_DECODE_TPS) and the planner's reference for absolute predictions.
REFERENCE_ALL_CPU_TPS = 22.0
# Each extra running request adds this share of a step: a batch shares the CPU experts' weight traffic, so
# every request slows down while the total throughput still rises.
BATCH_SLOWDOWN = 0.35


def relative_step_time(layer_miss_shares: np.ndarray, experts_per_token: int) -> float:
    """Decode step time over the all-GPU step's (1.0 .. ALL_CPU_STEP); `layer_miss_shares` per MoE layer."""
    miss = np.clip(np.asarray(layer_miss_shares, dtype=np.float64), 0.0, 1.0)
    if miss.size == 0:
        return 1.0
    touched = 1.0 - (1.0 - miss) ** max(1, experts_per_token)
    return float(1.0 + CPU_ACTIVATION_COST * miss.mean() + CPU_LAYER_COST * touched.mean())


def layer_miss_shares(counts: np.ndarray, gpu_mask: np.ndarray) -> np.ndarray:
    """Per layer that routed anything: the share of its activations on CPU experts (`counts` [layers, experts])."""
    totals = counts.sum(axis=1)
    active = totals > 0
    gpu = (counts * gpu_mask).sum(axis=1)
    return 1.0 - gpu[active] / totals[active]


def decode_tps(all_cpu_tps: float, layer_misses: np.ndarray, experts_per_token: int) -> float:
    """Tokens a second of one request alone, from the all-CPU speed (`M3UI_SIM_DECODE_TPS` in the sim)."""
    if all_cpu_tps <= 0:
        raise ValueError(f"all_cpu_tps must be > 0, got {all_cpu_tps}")
    return all_cpu_tps * ALL_CPU_STEP / relative_step_time(layer_misses, experts_per_token)


def batch_step_factor(running: int) -> float:
    """A decode step of `running` requests over the step of one alone."""
    return 1 + BATCH_SLOWDOWN * max(0, running - 1)


def batch_decode_tps(alone_tps: float, running: int) -> float:
    """Tokens a second of all `running` requests together."""
    return max(1, running) * alone_tps / batch_step_factor(running)
