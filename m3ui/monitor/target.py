"""What the monitor watches: the engine's URL and key, its process, its recorder folder, its CPU threads.

The app builds one per engine (they change when the engine restarts) and hands it to `Sampler.set_target`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from launch.health import engine_url
from launch.model_config import ModelShape
from launch.placement import PlacementError, gpu_expert_mask, kt_active
from launch.settings import LaunchSettings


@dataclass(frozen=True)
class KtThreads:
    """kt-kernel's CPU workers: `cpuinfer` threads split over `threadpool_count` pools, pool i on NUMA node
    `numa_nodes[i]` (nodes 0, 1, ... when unset), as `kt_kernel/experts_base.py` does."""

    cpuinfer: int
    threadpool_count: int
    numa_nodes: tuple[int, ...] | None = None

    @classmethod
    def from_settings(cls, settings: LaunchSettings) -> KtThreads | None:
        if not kt_active(settings) or settings.kt_cpuinfer is None or not settings.kt_threadpool_count:
            return None
        return cls(settings.kt_cpuinfer, settings.kt_threadpool_count, settings.kt_numa_nodes)

    def pool_nodes(self) -> tuple[int, ...]:
        return self.numa_nodes if self.numa_nodes is not None else tuple(range(self.threadpool_count))

    def pool_threads(self) -> tuple[int, ...]:
        """Threads per pool: the first `cpuinfer % count` pools get one more (kt-kernel's own split)."""
        base, extra = divmod(self.cpuinfer, self.threadpool_count)
        return tuple(base + (1 if i < extra else 0) for i in range(self.threadpool_count))


@dataclass(frozen=True)
class MonitorTarget:
    engine_url: str | None = None  # e.g. http://127.0.0.1:30000; None: no engine to watch
    api_key: str | None = field(default=None, repr=False)
    engine_pid: int | None = None  # the engine's root process on this machine; None: remote or unknown
    # Where this machine sees the engine's $SGLANG_EXPERT_DISTRIBUTION_RECORDER_DIR; None: not visible here
    # (an attached engine writes on its own host), so its recorder is never driven: each dump would leave
    # tens of MB there that nobody reads or deletes.
    recorder_dir: Path | None = None
    kt_threads: KtThreads | None = None
    # bool [layers, experts] from the launch settings, used when the engine does not dump its GPU masks.
    assumed_gpu_mask: np.ndarray | None = field(default=None, compare=False, repr=False)


def target_for_launch(
    settings: LaunchSettings, engine_pid: int | None, recorder_dir: Path | None, shape: ModelShape | None = None
) -> MonitorTarget:
    """The target for an engine this app started with `settings` (`shape`: the model's, for the GPU mask)."""
    mask = None
    if shape is not None:
        try:
            mask = gpu_expert_mask(shape, settings)
        except PlacementError:
            mask = None  # the engine refuses these settings anyway
    return MonitorTarget(
        engine_url=engine_url(settings), api_key=settings.api_key, engine_pid=engine_pid,
        recorder_dir=recorder_dir, kt_threads=KtThreads.from_settings(settings), assumed_gpu_mask=mask,
    )
