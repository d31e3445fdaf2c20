"""The GPU experts each placement strategy gives at N experts per MoE layer, by sglang-kt 0.7.2's exact rules.

The rules themselves are `launch/placement.py` (tested against the wheel); this only feeds them the way
`--kt-num-gpu-experts N` does (N x MoE layers in all) and, for frequency, the counts exactly as the engine
will read them back from the saved profile (`logical_count` summed over its rows, as float32).
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from launch.model_config import ModelShape
from launch.placement import strategy_masks

Strategy = Literal["uniform", "frequency", "front-loading", "random"]
STRATEGIES: tuple[Strategy, ...] = ("uniform", "frequency", "front-loading", "random")


def strategy_mask(shape: ModelShape, strategy: Strategy, per_layer: int, counts: np.ndarray) -> np.ndarray:
    """bool [layers, experts]: the GPU experts; `counts` int [layers, experts] is the recorded profile."""
    frequency = counts.astype(np.int64).astype(np.float32) if strategy == "frequency" else None
    return strategy_masks(shape, strategy, per_layer * shape.num_moe_layers, frequency)


def hit_rate(counts: np.ndarray, mask: np.ndarray, shape: ModelShape) -> float:
    """Share of the MoE layers' activations that land on GPU experts (0 when nothing was routed)."""
    moe = list(shape.moe_layer_ids)
    total = counts[moe].sum()
    return float((counts[moe] * mask[moe]).sum() / total) if total else 0.0
