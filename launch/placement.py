"""Which routed experts sit on the GPU: sglang-kt 0.7.2's placement rules, reproduced bit for bit.

Read from `sglang/srt/layers/moe/kt_ep_wrapper.py` (`_init_kt_gpu_experts_masks` and the
`generate_*_masks` helpers) and `kt_kernel/experts_base.py` (`generate_gpu_experts_masks`):
- KT is active only with `--kt-weight-path` and one of `--kt-gpu-experts-ratio` / `--kt-num-gpu-experts`.
- The total over all MoE layers is `int(L * E * ratio)` when the ratio is set (the count is then ignored),
  else `num_gpu_experts * L` (L = MoE layers, E = routed experts per layer).
- uniform: every MoE layer gets `total // L` experts, the first `total % L` MoE layers one more, always
  the ids 0..k-1 (capped at E).
- front-loading: whole layers from the first MoE layer on, ids 0..k-1 of the last partial layer.
- random: the first `total` entries of `torch.randperm(L * E)` seeded 42, over the (layer, expert) pairs
  of MoE layers in row-major order.
- frequency: `torch.topk(sorted=False)` of `logical_count.sum(0).float()` from `--init-expert-location`
  (a `.pt` with `logical_count` [buffer, layers, experts]) over ALL layers' rows, dense rows included;
  without a `.pt` file every MoE entry is 1.0 and the all-tie selection is whatever libstdc++'s
  nth_element leaves, which `launch.torch_compat` reproduces.
- Dense (non-MoE) layers' rows are all True: they never reach the KT wrapper.
MoE layers here are `ModelShape.moe_layer_ids`; the real code derives them as
`i >= first_k_dense_replace and i % moe_layer_freq == 0` (a list-form freq becomes "from its first 1 on"),
which is the same set for MiniMax-M3's config.
"""

from __future__ import annotations

import numpy as np

from launch.model_config import ModelShape
from launch.settings import LaunchSettings
from launch.torch_compat import torch_randperm, torch_topk_indices
from torchzip.reader import TorchFileError, load_tensors

RANDOM_PLACEMENT_SEED = 42  # hard-coded in sglang-kt (`generate_random_masks(..., seed=42)`)


class PlacementError(ValueError):
    """The engine would refuse to start with these placement settings (message as the engine says it)."""


def kt_active(settings: LaunchSettings) -> bool:
    """KT splits experts between GPU and CPU only with a weight path and a GPU expert count or ratio."""
    has_amount = settings.kt_num_gpu_experts is not None or settings.kt_gpu_experts_ratio is not None
    return settings.kt_weight_path is not None and has_amount


def total_gpu_experts(shape: ModelShape, settings: LaunchSettings) -> int | None:
    """GPU experts summed over all MoE layers, as sglang-kt computes it; None when KT is inactive."""
    if not kt_active(settings):
        return None
    if settings.kt_gpu_experts_ratio is not None:
        return int(shape.num_moe_layers * shape.num_routed_experts * settings.kt_gpu_experts_ratio)
    assert settings.kt_num_gpu_experts is not None  # kt_active guarantees one of the two
    return settings.kt_num_gpu_experts * shape.num_moe_layers


def gpu_expert_mask(shape: ModelShape, settings: LaunchSettings) -> np.ndarray:
    """bool [num_layers, num_routed_experts]: True where the expert runs on the GPU.

    With KT inactive plain sglang keeps every expert on the GPU, so the mask is all True. Raises
    PlacementError for what stops the real engine at startup (bad strategy, unreadable frequency file).
    """
    total = total_gpu_experts(shape, settings)
    if total is None:
        return np.ones((shape.num_layers, shape.num_routed_experts), dtype=bool)
    strategy = settings.kt_expert_placement_strategy
    frequency = activation_frequency(shape, settings.init_expert_location) if strategy == "frequency" else None
    return strategy_masks(shape, strategy, total, frequency)


def strategy_masks(shape: ModelShape, strategy: str, total: int, activation_freq: np.ndarray | None) -> np.ndarray:
    """bool [num_layers, num_routed_experts] for `total` GPU experts over the MoE layers, dense rows True.

    `activation_freq` (float32 [num_layers, num_experts], as `activation_frequency` reads it) is used by
    "frequency" only.
    """
    if strategy == "uniform":
        masks = uniform_masks(shape, total)
    elif strategy == "front-loading":
        masks = front_loading_masks(shape, total)
    elif strategy == "random":
        masks = random_masks(shape, total)
    elif strategy == "frequency" and activation_freq is not None:
        masks = frequency_masks(activation_freq, total)
    else:
        raise PlacementError(f"Unknown kt_expert_placement_strategy: {strategy}")
    masks[_dense_rows(shape)] = True
    return masks


def uniform_masks(shape: ModelShape, total: int) -> np.ndarray:
    masks = _empty(shape)
    per_layer, remainder = divmod(total, max(shape.num_moe_layers, 1))
    for position, layer in enumerate(shape.moe_layer_ids):
        masks[layer, : min(per_layer + (position < remainder), shape.num_routed_experts)] = True
    return masks


def front_loading_masks(shape: ModelShape, total: int) -> np.ndarray:
    masks = _empty(shape)
    remaining = total
    for layer in shape.moe_layer_ids:
        take = min(remaining, shape.num_routed_experts)
        masks[layer, :take] = True
        remaining -= take
    return masks


def random_masks(shape: ModelShape, total: int, seed: int = RANDOM_PLACEMENT_SEED) -> np.ndarray:
    masks = _empty(shape)
    num_positions = shape.num_moe_layers * shape.num_routed_experts
    if num_positions == 0:
        return masks
    chosen = torch_randperm(num_positions, seed)[: min(total, num_positions)]
    layers = np.asarray(shape.moe_layer_ids)[chosen // shape.num_routed_experts]
    masks[layers, chosen % shape.num_routed_experts] = True
    return masks


def frequency_masks(activation_freq: np.ndarray, total: int) -> np.ndarray:
    """The global top-`total` of a float32 [num_layers, num_experts] frequency table (dense rows not yet set)."""
    flat = activation_freq.astype(np.float32).ravel()
    k = min(max(total, 0), flat.size)
    if 0 < k < flat.size and not np.isnan(flat).any():
        kth = np.partition(flat, flat.size - k)[flat.size - k]  # the k-th largest value
        above, at = flat > kth, flat == kth
        if int(above.sum() + at.sum()) == k:  # no tie straddles the cut: every top-k picks this very set
            return (above | at).reshape(activation_freq.shape)
    chosen = torch_topk_indices(flat, k)  # ties at the cut: only torch's own selection order says which
    masks = np.zeros(flat.size, dtype=bool)
    masks[chosen] = True
    return masks.reshape(activation_freq.shape)


def activation_frequency(shape: ModelShape, init_expert_location: str | None) -> np.ndarray:
    """float32 [num_layers, num_experts]: `logical_count` summed over its buffer axis, from a `.pt` file.

    Any other value (none, a `.json`, "trivial") gives 1.0 on every MoE entry, as sglang-kt falls back to.
    Summing int counts in int64 before the float32 cast matches torch (`sum` widens int32 to int64).
    """
    if not (init_expert_location and init_expert_location.endswith(".pt")):
        freq = np.zeros((shape.num_layers, shape.num_routed_experts), dtype=np.float32)
        freq[list(shape.moe_layer_ids)] = 1.0
        return freq
    counts = _read_logical_count(init_expert_location)
    if counts.ndim != 3:
        raise PlacementError(
            "Expected activation counts tensor with 3 dims [buffer_size, num_layers, num_experts], "
            f"got {counts.ndim} dims with shape {tuple(counts.shape)}"
        )
    _, file_layers, file_experts = counts.shape
    if file_layers != shape.num_layers:
        raise PlacementError(
            f"Activation counts num_layers ({file_layers}) doesn't match model num_layers ({shape.num_layers})"
        )
    if file_experts != shape.num_routed_experts:
        raise PlacementError(
            f"Activation counts num_experts ({file_experts}) doesn't match "
            f"model num_experts ({shape.num_routed_experts})"
        )
    wide = np.int64 if np.issubdtype(counts.dtype, np.integer) or counts.dtype == bool else counts.dtype
    return counts.sum(axis=0, dtype=wide).astype(np.float32)


def _read_logical_count(path: str) -> np.ndarray:
    try:
        loaded = load_tensors(path)
    except (OSError, TorchFileError) as error:
        raise PlacementError(f"cannot read --init-expert-location {path}: {error}") from None
    counts = loaded.get("logical_count")
    if not isinstance(counts, np.ndarray):
        raise PlacementError(f"Loaded dict does not contain 'logical_count' key. Available keys: {list(loaded.keys())}")
    return counts


def _empty(shape: ModelShape) -> np.ndarray:
    return np.zeros((shape.num_layers, shape.num_routed_experts), dtype=bool)


def _dense_rows(shape: ModelShape) -> list[int]:
    moe = set(shape.moe_layer_ids)
    return [layer for layer in range(shape.num_layers) if layer not in moe]
