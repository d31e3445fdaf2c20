"""GPU hit rate and expert rankings from activation counts and a GPU-residency mask.

The GPU hit rate is the share of routed expert activations served by GPU-resident experts: with KT the
rest run on the CPU, so it is the figure `--kt-num-gpu-experts` and the placement strategy try to raise.
The rankings take `counts` int [layers, experts] and `residency` bool [layers, experts]. Layers with
no activations (dense layers, or idle) have no hit rate and are left out of the rankings.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class HitRate:
    gpu_activations: int
    total_activations: int

    @property
    def rate(self) -> float | None:
        """Share served by the GPU; None when nothing was routed."""
        return self.gpu_activations / self.total_activations if self.total_activations else None

    def __add__(self, other: HitRate) -> HitRate:
        return HitRate(self.gpu_activations + other.gpu_activations, self.total_activations + other.total_activations)


@dataclass(frozen=True)
class ExpertRank:
    layer: int
    expert: int
    activations: int
    share: float  # of all activations in its layer


def layer_hit_rates(gpu_hits: np.ndarray, layer_totals: np.ndarray) -> tuple[float | None, ...]:
    """Per layer: GPU hits / activations, None where the layer routed nothing."""
    return tuple(float(h) / float(t) if t else None for h, t in zip(gpu_hits, layer_totals, strict=True))


def _ranked(counts: np.ndarray, candidates: np.ndarray, n: int, hottest: bool) -> tuple[ExpertRank, ...]:
    layer_totals = counts.sum(axis=1)
    cells = np.flatnonzero(candidates & (layer_totals > 0)[:, None])  # flat layer * experts + expert
    if cells.size == 0 or n <= 0:
        return ()
    values = counts.ravel()[cells].astype(np.int64)
    # one unique key per cell, smallest first: the count (negated for the hottest), ties to the lower cell
    keys = (-values if hottest else values) * counts.size + cells
    picked = np.argpartition(keys, n - 1)[:n] if n < cells.size else np.arange(cells.size)
    experts = counts.shape[1]
    return tuple(
        ExpertRank(int(layer), int(expert), int(values[i]), float(values[i]) / float(layer_totals[layer]))
        for i in picked[np.argsort(keys[picked])]
        for layer, expert in [divmod(int(cells[i]), experts)]
    )


def hottest_cpu_experts(counts: np.ndarray, residency: np.ndarray, n: int = 10) -> tuple[ExpertRank, ...]:
    """The most activated CPU-resident experts: the best candidates for the GPU."""
    return tuple(rank for rank in _ranked(counts, ~residency, n, hottest=True) if rank.activations > 0)


def coldest_gpu_experts(counts: np.ndarray, residency: np.ndarray, n: int = 10) -> tuple[ExpertRank, ...]:
    """The least activated GPU-resident experts in layers that routed anything: VRAM spent on little work."""
    return _ranked(counts, residency.astype(bool), n, hottest=False)
