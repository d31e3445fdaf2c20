"""A recorded window of expert routing: one or more `stat` dumps (and the GPU masks of the run, if given).

A dump's `logical_count` is int [rows, layers, experts], one row per forward pass (sglang-kt 0.7.2's
`expert_distribution.py`): with the default ring of 1,000 rows a busy engine keeps only its last passes,
and `--expert-distribution-recorder-buffer-size -1` keeps every pass since the previous dump. Rows no pass
wrote are zero. Each dump is one *segment* of the recording (a stretch of time, or a conversation when the
recorder is dumped after each one); a single dump is cut into chronological segments of its rows, so the
profile's stability can still be measured on held-out parts.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from launch.model_config import ModelShape
from torchzip.reader import TorchFileError, load_tensors

SEGMENTS_OF_ONE_DUMP = 8
DEFAULT_RING_ROWS = 1000  # --expert-distribution-recorder-buffer-size when unset


class RecordingError(ValueError):
    """A dump that cannot be used, said in the operator's terms."""


@dataclass(frozen=True, eq=False)
class Recording:
    segments: tuple[np.ndarray, ...]  # int64 [layers, experts] each, in time order
    dumps: int
    passes: int
    ring_full: bool  # a dump holds exactly the default ring's passes: older ones may have been overwritten
    recorded_mask: np.ndarray | None  # bool [layers, experts]: the run's GPU experts, from its mask dump

    @property
    def counts(self) -> np.ndarray:
        return np.sum(self.segments, axis=0)

    def tokens(self, shape: ModelShape) -> int:
        """Tokens routed (prefill and decode): each token activates k experts in every MoE layer."""
        first_moe = shape.moe_layer_ids[0] if shape.moe_layer_ids else 0
        return int(self.counts[first_moe].sum()) // max(1, shape.experts_per_token)


def _written(rows: np.ndarray) -> np.ndarray:
    return rows.reshape(rows.shape[0], -1).any(axis=1)  # type: ignore[return-value]  # any(axis=1) of a 2-D array is an array


def _check_shape(path: Path, array: np.ndarray, shape: ModelShape) -> None:
    expected = (shape.num_layers, shape.num_routed_experts)
    if array.ndim != 3 or array.shape[1:] != expected:
        raise RecordingError(f"{path}: shape {tuple(array.shape)} does not fit the model "
                             f"([rows, {expected[0]} layers, {expected[1]} experts])")


def read_recording(paths: list[Path], shape: ModelShape) -> Recording:
    """Read stat dumps (`logical_count`) and at most one mask dump (`gpu_expert_masks`), in the order given."""
    per_dump: list[list[np.ndarray]] = []  # each dump's chronological pieces
    passes, ring_full, mask = 0, False, None
    for path in paths:
        try:
            content = load_tensors(path, mapped=True)
        except (OSError, TorchFileError) as error:
            raise RecordingError(f"cannot read {path}: {error}") from None
        if isinstance(content.get("gpu_expert_masks"), np.ndarray):
            masks: np.ndarray = content["gpu_expert_masks"]  # type: ignore[assignment]  # an ndarray: checked above
            _check_shape(path, masks, shape)
            mask = masks[_written(masks)].any(axis=0) if masks.any() else None
            continue
        counts = content.get("logical_count")
        if not isinstance(counts, np.ndarray):
            raise RecordingError(f"{path}: neither logical_count nor gpu_expert_masks (keys: {sorted(content)}); "
                                 "per_pass dumps must be converted to a stat dump first")
        _check_shape(path, counts, shape)
        written = _written(counts)
        passes += int(written.sum())
        # A ring dumps all its rows, unused ones zero; -1 dumps only the rows written. A dump whose rows are
        # all written and exactly the default ring's size most likely wrapped.
        ring_full = ring_full or (bool(written.all()) and counts.shape[0] == DEFAULT_RING_ROWS)
        rows = np.asarray(counts[written], dtype=np.int64)
        pieces = np.array_split(rows, min(SEGMENTS_OF_ONE_DUMP, len(rows))) if len(rows) else []
        per_dump.append([piece.sum(axis=0) for piece in pieces])
    if not per_dump:
        raise RecordingError("no stat dump (expert_distribution_recorder_*.pt with logical_count) among the files")
    if passes == 0:
        raise RecordingError("the dumps hold no routed tokens: record while the engine serves traffic")
    written_dumps = [pieces for pieces in per_dump if pieces]
    segments = written_dumps[0] if len(written_dumps) == 1 else [np.sum(pieces, axis=0) for pieces in written_dumps]
    return Recording(tuple(segments), len(per_dump), passes, ring_full, mask)
