"""The simulated engine's expert distribution recorder: sglang-kt 0.7.2's `stat` mode, file for file.

Read from `sglang/srt/eplb/expert_distribution.py` (`_ExpertDistributionRecorderReal`, `_StatAccumulator`,
`_CircularBuffer`, `_InfiniteBuffer`, `_GpuExpertMaskGatherer/Accumulator`):
- Each forward pass while recording appends one int32 [num_layers, num_experts] count row (top-k hits
  of every token in the pass) to a buffer of `--expert-distribution-recorder-buffer-size` rows (None →
  1000). A ring buffer always dumps all its rows in storage order, unused rows zero, and its write index
  survives resets; -1 is unbounded and dumps only the rows written since the last reset.
- `start` resets and records (a second start warns and resets again), `stop` only stops, `dump` writes
  whether or not recording and then resets (recording goes on if it was on).
- The stat dump is `expert_distribution_recorder_{time.time()}.pt` = {rank: 0, logical_count: int32
  [buffer, num_layers, num_experts] saved from "cuda:0", average_utilization_rate_over_window: None (a
  number only with --enable-expert-distribution-metrics, which m3ui does not drive)}.
- With `--record-kt-gpu-expert-distribution` it then writes `gpu_expert_distribution_{time.time()}.pt` =
  {gpu_expert_masks: bool [buffer, num_layers, num_experts]} from "cpu". Only KT MoE layers report
  their mask each pass, so dense layers' rows are False, and every row is False when KT is inactive.
- Without a recorder mode the real server's start/stop/dump raise NOT_CONFIGURED_MESSAGE in the
  scheduler, which kills it; `create_recorder` returns None then and the server must die the same way.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from launch.model_config import ModelShape
from launch.placement import kt_active
from launch.settings import LaunchSettings
from torchzip.writer import save_tensors

RECORDER_DIR_ENV = "SGLANG_EXPERT_DISTRIBUTION_RECORDER_DIR"
DEFAULT_RECORDER_DIR = "/tmp"
DEFAULT_BUFFER_SIZE = 1000
NOT_CONFIGURED_MESSAGE = "Please set ServerArgs.expert_distribution_recorder_mode to use ExpertDistributionRecorder."
_INFINITE_START_ROWS = 128
_STAT_DEVICE = "cuda:0"  # the stat buffer lives on the GPU; the mask buffer on the CPU

logger = logging.getLogger(__name__)


class RecorderModeUnsupported(NotImplementedError):
    """per_pass / per_token dumps hold lists of per-pass dicts, which the simulated engine does not write."""


class _PassBuffer:
    """`_CircularBuffer` (size >= 1) or `_InfiniteBuffer` (size < 0) of per-pass rows."""

    def __init__(self, item_shape: tuple[int, ...], size: int, dtype: type) -> None:
        if size == 0:
            raise ValueError("a recorder buffer size of 0 crashes sglang at the first recorded pass; use -1 or >= 1")
        self._circular = size > 0
        self._rows: np.ndarray = np.zeros((size if self._circular else _INFINITE_START_ROWS, *item_shape), dtype=dtype)
        self._index = 0  # next row to write; for the infinite buffer also the number of rows written

    def append(self, row: np.ndarray) -> None:
        if not self._circular and self._index == len(self._rows):
            self._rows = np.concatenate([self._rows, np.zeros_like(self._rows)])
        self._rows[self._index] = row
        self._index += 1
        if self._circular:
            self._index %= len(self._rows)

    def snapshot(self) -> np.ndarray:
        return (self._rows if self._circular else self._rows[: self._index]).copy()

    def reset(self) -> None:
        self._rows[...] = 0
        if not self._circular:
            self._index = 0  # the ring buffer keeps writing where it was, as sglang's does


class Recorder:
    """Thread-safe: request handlers call `record_pass`, the HTTP endpoints call start/stop/dump."""

    def __init__(
        self,
        mode: str,
        buffer_size: int,
        record_gpu_masks: bool,
        folder: Path,
        shape: ModelShape,
        gpu_mask: np.ndarray | None,
    ) -> None:
        """`gpu_mask` is the placement (`launch.placement.gpu_expert_mask`), or None when KT is inactive."""
        if mode != "stat":
            raise RecorderModeUnsupported(
                f"the simulated engine records only --expert-distribution-recorder-mode stat, not {mode!r}"
            )
        self._folder = Path(folder)
        self.buffer_size = buffer_size
        self._shape = (shape.num_layers, shape.num_routed_experts)
        self._lock = threading.Lock()
        self._recording = False
        self._counts = _PassBuffer(self._shape, buffer_size, np.int32)
        # sglang sizes the mask buffer with `buffer_size or 1000`, the same number once a mode is set.
        self._masks = _PassBuffer(self._shape, buffer_size, np.bool_) if record_gpu_masks else None
        self._mask_row = np.zeros(self._shape, dtype=bool)
        if gpu_mask is not None:
            moe_rows = list(shape.moe_layer_ids)
            self._mask_row[moe_rows] = gpu_mask[moe_rows]

    @property
    def recording(self) -> bool:
        return self._recording

    def start(self) -> None:
        with self._lock:
            if self._recording:
                logger.warning(
                    "SGLang server is already recording expert ids. Did you forget to dump the expert ids "
                    "recorded so far by sending requests to the `/stop_expert_distribution_record` and "
                    "`/dump_expert_distribution_record` endpoints?"
                )
            self._reset()
            self._recording = True

    def stop(self) -> None:
        with self._lock:
            if not self._recording:
                logger.warning(
                    "SGLang server has not been recording expert ids. Did you forget to start recording by "
                    "sending request to the `/start_expert_distribution_record` endpoint?"
                )
            self._recording = False

    def record_pass(self, counts: np.ndarray) -> None:
        """One forward pass: int [num_layers, num_experts] top-k hits of all its tokens (ignored unless recording)."""
        if counts.shape != self._shape:
            raise ValueError(f"counts have shape {counts.shape}, expected {self._shape}")
        with self._lock:
            if not self._recording:
                return
            self._counts.append(counts)
            if self._masks is not None:
                self._masks.append(self._mask_row)

    def dump(self) -> list[Path]:
        """Write the stat file (and the GPU mask file), reset the buffers, return the paths written."""
        with self._lock:
            logical_count = self._counts.snapshot()
            masks = self._masks.snapshot() if self._masks is not None else None
            self._reset()
        paths = [
            self._write(
                f"expert_distribution_recorder_{time.time()}.pt",
                {"rank": 0, "logical_count": logical_count, "average_utilization_rate_over_window": None},
                _STAT_DEVICE,
            )
        ]
        if masks is not None:
            paths.append(self._write(f"gpu_expert_distribution_{time.time()}.pt", {"gpu_expert_masks": masks}, "cpu"))
        return paths

    def _reset(self) -> None:
        logger.info("Resetting ExpertDistributionRecorder...")
        self._counts.reset()
        if self._masks is not None:
            self._masks.reset()

    def _write(self, name: str, data: Mapping[str, int | None | np.ndarray], device: str) -> Path:
        path = self._folder / name
        logger.info(f"Write expert distribution to {path}")
        self._folder.mkdir(parents=True, exist_ok=True)
        save_tensors(path, data, device=device)
        return path


def recorder_folder(environ: Mapping[str, str] = os.environ) -> Path:
    """Where dumps go: $SGLANG_EXPERT_DISTRIBUTION_RECORDER_DIR, else /tmp (sglang's default)."""
    return Path(environ.get(RECORDER_DIR_ENV) or DEFAULT_RECORDER_DIR)


def create_recorder(
    settings: LaunchSettings, shape: ModelShape, gpu_mask: np.ndarray, folder: Path | None = None
) -> Recorder | None:
    """The recorder the settings ask for, or None without a recorder mode (the endpoints must then kill the server)."""
    if settings.expert_distribution_recorder_mode is None:
        return None
    buffer_size = settings.expert_distribution_recorder_buffer_size
    return Recorder(
        mode=settings.expert_distribution_recorder_mode,
        buffer_size=DEFAULT_BUFFER_SIZE if buffer_size is None else buffer_size,
        record_gpu_masks=settings.record_kt_gpu_expert_distribution,
        folder=recorder_folder() if folder is None else folder,
        shape=shape,
        gpu_mask=gpu_mask if kt_active(settings) else None,
    )
