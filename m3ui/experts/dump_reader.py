"""One recorder dump reduced to what the panels need: per-expert activations and GPU hits per layer.

Facts from sglang-kt 0.7.2 (`_CircularBuffer`, `_StatAccumulator`, `_GpuExpertMaskAccumulator`):
- `logical_count` is a ring of int32 [buffer, layers, experts] rows, one per forward pass. A dump zeroes
  the rows but not the write index, so rows come in ring order with zero rows where nothing was written;
  the sum over rows is the activations since the previous dump (if the ring did not wrap).
- `gpu_expert_masks` is a bool ring of the same size, appended in the same step, so row r of the masks
  tells which experts were on the GPU in the pass that wrote row r of the counts. Only KT MoE layers
  report; dense layers and unwritten rows stay False, and all rows stay False when KT is inactive.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from m3ui.experts.recorder_files import DumpPair
from torchzip.reader import TorchFileError, load_tensors


@dataclass(frozen=True, eq=False)
class DumpReduction:
    counts: np.ndarray  # int64 [layers, experts]: routed activations over the dump's passes
    gpu_hits: np.ndarray | None  # int64 [layers]: those served by GPU-resident experts; None: residency unknown
    residency: np.ndarray | None  # bool [layers, experts]: GPU-resident during these passes; None: unknown
    passes: int  # forward passes recorded
    buffer_rows: int  # rows in the dump: passes == buffer_rows means a ring may have wrapped
    residency_recorded: bool  # residency came from the engine's masks, not from the fallback


def _written_rows(counts: np.ndarray, totals: np.ndarray) -> np.ndarray:
    """bool [rows]: rows a forward pass wrote. Every pass routes tokens through every MoE layer, so one
    MoE layer's slice tells (reading 1/layers of the ring instead of all of it)."""
    active_layers = np.flatnonzero(totals.sum(axis=1))
    if active_layers.size == 0:
        return np.zeros(counts.shape[0], dtype=bool)
    return counts[:, active_layers[0], :].any(axis=1)  # type: ignore[return-value]  # any(axis=1) of a 2-D array is an array


def _same_rows(rows: np.ndarray) -> bool:
    """All rows equal the first; compared 8 bytes at a time when the row length allows."""
    flat = rows.reshape(len(rows), -1)
    if flat.shape[1] % 8 == 0 and flat.flags.c_contiguous:
        flat = flat.view(np.uint64)
    return bool((flat == flat[0]).all())


def _hits_from_masks(
    counts: np.ndarray, masks: np.ndarray, written: np.ndarray, totals: np.ndarray
) -> tuple[np.ndarray, np.ndarray] | None:
    """(gpu hits per layer, residency) from the per-pass masks, or None when no written row reports a mask."""
    everything = bool(written.all())  # a busy ring: use views, not 40 MB of copies
    rows = masks if everything else masks[written]
    if rows.size == 0 or not rows.any():
        return None  # KT reported nothing (inactive, or no pass recorded)
    if _same_rows(rows):  # placement did not change during the dump: the common, cheap case
        return (totals * rows[0]).sum(axis=1), rows[0].copy()
    # int32 again: a layer sees at most tokens x top-k activations per pass (~1e5) over ~1e3 passes
    hits = np.einsum("rle,rle->l", counts if everything else counts[written], rows.view(np.uint8))
    return hits.astype(np.int64), rows.any(axis=0)  # type: ignore[return-value]  # any(axis=0) of a 3-D array is an array


def reduce_dump(
    counts: np.ndarray, masks: np.ndarray | None, fallback_residency: np.ndarray | None = None
) -> DumpReduction:
    """Reduce a dump's `logical_count` and (optional) `gpu_expert_masks` rings.

    `fallback_residency` (bool [layers, experts]) stands in when the dump has no usable masks, e.g. the
    placement computed from the launch settings.
    """
    if counts.ndim != 3:
        raise ValueError(f"logical_count has shape {counts.shape}, expected [buffer, layers, experts]")
    if masks is not None and masks.shape != counts.shape:
        raise ValueError(f"gpu_expert_masks has shape {masks.shape}, logical_count {counts.shape}")
    # int32 sums: 3-4x faster than numpy's default int64 upcast, and an expert sees at most one activation
    # per token per pass (~1e4 tokens x ~1e3 passes << 2**31)
    totals = counts.sum(axis=0, dtype=np.int32).astype(np.int64)
    written = _written_rows(counts, totals)
    if not written.any():  # idle: nothing routed, and nothing learnt about residency
        return DumpReduction(totals, np.zeros(totals.shape[0], dtype=np.int64), None, 0, counts.shape[0], False)
    from_masks = None if masks is None else _hits_from_masks(counts, masks, written, totals)
    if from_masks is not None:
        hits, residency = from_masks
    elif fallback_residency is not None and fallback_residency.shape == totals.shape:
        hits, residency = (totals * fallback_residency).sum(axis=1), fallback_residency
    else:
        hits, residency = None, None
    return DumpReduction(
        counts=totals, gpu_hits=hits, residency=residency, passes=int(written.sum()),
        buffer_rows=counts.shape[0], residency_recorded=from_masks is not None,
    )


def read_dump(pair: DumpPair, fallback_residency: np.ndarray | None = None) -> DumpReduction:
    """Read and reduce one dump's files. Raises TorchFileError (unreadable or unexpected content) or OSError."""
    stat = load_tensors(pair.stat.path, mapped=True)
    counts = stat.get("logical_count")
    if not isinstance(counts, np.ndarray):
        raise TorchFileError(f"{pair.stat.path}: no logical_count tensor (keys: {sorted(stat)})")
    masks = None
    if pair.mask is not None:
        masks = load_tensors(pair.mask.path, mapped=True).get("gpu_expert_masks")
        if not isinstance(masks, np.ndarray) or masks.dtype != np.bool_:
            raise TorchFileError(f"{pair.mask.path}: no bool gpu_expert_masks tensor")
    try:
        return reduce_dump(counts, masks, fallback_residency)  # type: ignore[arg-type]  # an ndarray or None: checked above
    except ValueError as error:
        raise TorchFileError(f"{pair.stat.path}: {error}") from None
