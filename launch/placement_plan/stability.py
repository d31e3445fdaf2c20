"""How far a recorded profile can be trusted: does it predict traffic it was not built from?

- Same mix: the segments are split into their first and second half in time (interleaving them could line
  up with a mix's own rotation of topics and split by topic); a frequency placement built on one half is
  scored on the other, both ways. Their GPU sets' overlap says how settled the profile is.
- Unlike traffic: the segments are split in two by their routing profile (the first principal component of
  each segment's activation shares, cut at the median), so each side holds the traffic least like the
  other's; a placement built on one side and scored on the other estimates what the gain becomes on a
  different mix of topics (a placement built on one subject keeps about half its gain on another, issue 13).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from launch.decode_speed import relative_step_time
from launch.model_config import ModelShape
from launch.placement_plan.strategies import strategy_mask

MIN_SEGMENTS_FOR_HALVES = 2
MIN_SEGMENTS_FOR_UNLIKE = 4


@dataclass(frozen=True)
class HeldOut:
    """A frequency placement scored on traffic it was not built from, both ways summed."""

    hit_rate: float
    step_time: float  # relative decode step (launch.decode_speed)
    uniform_hit_rate: float  # uniform on the same held-out traffic
    uniform_step_time: float
    gpu_set_overlap: float  # share of the two sides' GPU sets in common (MoE layers)


def time_halves(segments: tuple[np.ndarray, ...]) -> tuple[np.ndarray, np.ndarray] | None:
    if len(segments) < MIN_SEGMENTS_FOR_HALVES:
        return None
    middle = len(segments) // 2
    return np.sum(segments[:middle], axis=0), np.sum(segments[middle:], axis=0)


def unlike_halves(segments: tuple[np.ndarray, ...], shape: ModelShape) -> tuple[np.ndarray, np.ndarray] | None:
    if len(segments) < MIN_SEGMENTS_FOR_UNLIKE:
        return None
    moe = list(shape.moe_layer_ids)
    profiles = np.array([s[moe].ravel() / max(1, s[moe].sum()) for s in segments], dtype=np.float64)
    centred = profiles - profiles.mean(axis=0)
    _, _, directions = np.linalg.svd(centred, full_matrices=False)
    position = centred @ directions[0]
    low = position <= np.median(position)
    if low.all() or not low.any():
        return None
    return (np.sum([s for s, side in zip(segments, low, strict=True) if side], axis=0),
            np.sum([s for s, side in zip(segments, low, strict=True) if not side], axis=0))


def held_out(halves: tuple[np.ndarray, np.ndarray], shape: ModelShape, per_layer: int) -> HeldOut:
    """Build on each half, score on the other; sums over both directions."""
    moe = list(shape.moe_layer_ids)
    uniform = strategy_mask(shape, "uniform", per_layer, halves[0])[moe]
    masks = [strategy_mask(shape, "frequency", per_layer, half)[moe] for half in halves]
    served = [halves[1][moe], halves[0][moe]]  # scored on the other half
    layer_totals = served[0].sum(axis=1) + served[1].sum(axis=1)
    active = layer_totals > 0
    freq_hits = (served[0] * masks[0]).sum(axis=1) + (served[1] * masks[1]).sum(axis=1)
    uniform_hits = (served[0] * uniform).sum(axis=1) + (served[1] * uniform).sum(axis=1)
    total = max(1, int(layer_totals.sum()))
    union = (masks[0] | masks[1]).sum()
    return HeldOut(
        hit_rate=float(freq_hits.sum() / total),
        step_time=relative_step_time(1 - freq_hits[active] / layer_totals[active], shape.experts_per_token),
        uniform_hit_rate=float(uniform_hits.sum() / total),
        uniform_step_time=relative_step_time(1 - uniform_hits[active] / layer_totals[active], shape.experts_per_token),
        gpu_set_overlap=float((masks[0] & masks[1]).sum() / union) if union else 1.0,
    )
