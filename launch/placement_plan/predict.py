"""The prediction: per strategy, the GPU hit rate and decode speed at N GPU experts per MoE layer and over a
curve of N, what each N costs in VRAM, and how far the recording can be trusted.

Hit rates of uniform, front-loading and random do not depend on the recording, so the recorded traffic
scores them directly. Frequency is built from the recording: scored on the same traffic it flatters itself
(by the noise it fitted), while a placement built on half the recording and scored on the other half
(`stability.py`) undersells the full one (half the data, and the halves' own drift). Its figure is the mean
of the two whenever the recording has two segments or more; on the simulated engine, with 25K tokens over
24 conversations, that came within 0.3 points of the hit rate measured when the same mix was replayed.
Decode speed: `launch.decode_speed` (the model the simulated engine runs on). VRAM: `launch.sizing`.
"""

from __future__ import annotations

from dataclasses import dataclass

from launch.decode_speed import ALL_CPU_STEP, REFERENCE_ALL_CPU_TPS, layer_miss_shares, relative_step_time
from launch.model_config import ModelShape
from launch.placement_plan.recording import Recording
from launch.placement_plan.stability import HeldOut, held_out, time_halves, unlike_halves
from launch.placement_plan.strategies import STRATEGIES, Strategy, hit_rate, strategy_mask
from launch.sizing import GB, max_gpu_experts, model_footprint

CURVE_POINTS = (0, 1, 2, 4, 6, 8, 12, 16, 20, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128)
MIN_TRUSTED_TOKENS = 10_000  # issue 13: a short recording fakes skew; record >= 10-20K tokens
GOOD_TOKENS = 20_000


@dataclass(frozen=True)
class Point:
    gpu_experts: int  # per MoE layer
    hit_rate: float
    decode_tps: float  # one request alone, speed model's reference deployment


@dataclass(frozen=True)
class Hardware:
    tp: int
    gpu_bytes: float
    mem_fraction: float | None
    quant: str | None = None


@dataclass(frozen=True)
class PlacementPlan:
    gpu_experts: int
    recorded_tokens: int
    recorded_hit_rate: float | None  # under the run's own placement (its mask dump), if given
    predicted: dict[Strategy, Point]
    curve: dict[Strategy, tuple[Point, ...]]
    same_mix: HeldOut | None
    unlike_mix: HeldOut | None
    vram_ceiling: int  # most GPU experts per layer that still leave the KV pool its room
    gb_per_expert_per_gpu: float  # VRAM one more GPU expert per layer takes on each GPU
    frequency_matches_uniform_at: int | None  # fewest experts per layer where frequency >= uniform at N
    warnings: tuple[str, ...]

    @property
    def vram_saved_gb(self) -> float | None:
        fewest = self.frequency_matches_uniform_at
        return None if fewest is None else (self.gpu_experts - fewest) * self.gb_per_expert_per_gpu


def _tps(step_time: float) -> float:
    return REFERENCE_ALL_CPU_TPS * ALL_CPU_STEP / step_time


def _point(recording: Recording, shape: ModelShape, strategy: Strategy, per_layer: int) -> Point:
    counts = recording.counts
    moe = list(shape.moe_layer_ids)
    mask = strategy_mask(shape, strategy, per_layer, counts)
    hits = hit_rate(counts, mask, shape)
    step = relative_step_time(layer_miss_shares(counts[moe], mask[moe]), shape.experts_per_token)
    halves = time_halves(recording.segments) if strategy == "frequency" else None
    if halves is not None:
        scored = held_out(halves, shape, per_layer)
        hits, step = (hits + scored.hit_rate) / 2, (step + scored.step_time) / 2
    return Point(per_layer, hits, _tps(step))


def _warnings(recording: Recording, tokens: int) -> list[str]:
    found = []
    if tokens < MIN_TRUSTED_TOKENS:
        found.append(f"only {tokens:,} tokens recorded: a short recording fakes skew (a uniform router looks "
                     f"skewed after a few thousand tokens); record at least {GOOD_TOKENS:,} over many prompts")
    elif tokens < GOOD_TOKENS:
        found.append(f"{tokens:,} tokens recorded: enough for a first estimate; {GOOD_TOKENS:,} or more over many "
                     "prompts makes it firmer")
    if recording.ring_full:
        found.append("a dump holds exactly the default ring's 1,000 passes, so older passes were probably "
                     "overwritten: record with --expert-distribution-recorder-buffer-size -1 or dump more often")
    if len(recording.segments) < 2:
        found.append("one segment only: stability cannot be measured (dump the recorder several times)")
    return found


def plan_placement(recording: Recording, shape: ModelShape, gpu_experts: int, hardware: Hardware) -> PlacementPlan:
    if not 0 <= gpu_experts <= shape.num_routed_experts:
        raise ValueError(f"GPU experts per layer must be 0..{shape.num_routed_experts}, got {gpu_experts}")
    tokens = recording.tokens(shape)
    curve = {s: tuple(_point(recording, shape, s, n) for n in sorted({*CURVE_POINTS, gpu_experts})
                      if n <= shape.num_routed_experts) for s in STRATEGIES}
    predicted = {s: next(p for p in points if p.gpu_experts == gpu_experts) for s, points in curve.items()}
    target = predicted["uniform"].hit_rate
    fewest = _fewest_matching(recording, shape, gpu_experts, target)
    recorded_hit = hit_rate(recording.counts, recording.recorded_mask, shape) if recording.recorded_mask is not None \
        else None
    same = time_halves(recording.segments)
    unlike = unlike_halves(recording.segments, shape)
    footprint = model_footprint(shape, hardware.quant)
    return PlacementPlan(
        gpu_experts=gpu_experts, recorded_tokens=tokens, recorded_hit_rate=recorded_hit,
        predicted=predicted, curve=curve,
        same_mix=None if same is None else held_out(same, shape, gpu_experts),
        unlike_mix=None if unlike is None else held_out(unlike, shape, gpu_experts),
        vram_ceiling=max_gpu_experts(shape, tp=hardware.tp, gpu_bytes=hardware.gpu_bytes,
                                     mem_fraction=hardware.mem_fraction, quant=hardware.quant),
        gb_per_expert_per_gpu=footprint.gpu_expert_unit_bytes / hardware.tp / GB,
        frequency_matches_uniform_at=fewest,
        warnings=tuple(_warnings(recording, tokens)),
    )


def _fewest_matching(recording: Recording, shape: ModelShape, gpu_experts: int, target: float) -> int | None:
    """Binary search: frequency's hit rate grows with N (a larger top-k contains the smaller one)."""
    low, high = 0, gpu_experts
    if _point(recording, shape, "frequency", high).hit_rate < target:
        return None
    while low < high:
        middle = (low + high) // 2
        if _point(recording, shape, "frequency", middle).hit_rate >= target:
            high = middle
        else:
            low = middle + 1
    return low

