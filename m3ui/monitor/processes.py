"""The engine's process tree on this machine: CPU, RSS and threads summed, and its PIDs for the GPU panel.

sglang runs a launcher, one scheduler per TP rank (where kt-kernel's CPU inference threads live) and a
detokenizer. Listing descendants walks all of /proc, so the tree is re-listed every `relist_s` only; the
psutil.Process objects are kept between ticks because cpu_percent() measures since the previous call.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Literal

import psutil

ProcessTreeStatus = Literal["not_configured", "ok", "gone"]


@dataclass(frozen=True)
class ProcessTreeSample:
    status: ProcessTreeStatus
    pids: frozenset[int] = frozenset()
    cpu_percent: float = 0.0  # summed over processes: 100 = one core busy
    rss_bytes: int = 0  # summed; pages shared between the processes count once per process
    threads: int = 0
    reason: str | None = None


class EngineProcesses:
    """Not thread-safe: the sampler's local thread owns it."""

    def __init__(self, relist_s: float = 5.0) -> None:
        self._relist_s = relist_s
        self._root: int | None = None
        self._processes: dict[int, psutil.Process] = {}
        self._listed_at = float("-inf")

    def set_root(self, pid: int | None) -> None:
        if pid != self._root:
            self._root, self._processes, self._listed_at = pid, {}, float("-inf")

    def _relist(self) -> bool:
        """Refresh the tree from the root; False when the root is gone."""
        assert self._root is not None
        try:
            root = self._processes.get(self._root) or psutil.Process(self._root)
            members = [root, *root.children(recursive=True)]
        except psutil.Error:
            return False
        # keep the objects already known so their cpu_percent() baselines survive
        self._processes = {p.pid: self._processes.get(p.pid, p) for p in members}
        self._listed_at = time.monotonic()
        return True

    def sample(self) -> ProcessTreeSample:
        if self._root is None:
            return ProcessTreeSample("not_configured", reason="no local engine process to watch")
        if time.monotonic() - self._listed_at >= self._relist_s and not self._relist():
            self._processes = {}
            return ProcessTreeSample("gone", reason=f"engine process {self._root} is not running")
        cpu, rss, threads, alive = 0.0, 0, 0, []
        for pid, proc in self._processes.items():
            try:
                with proc.oneshot():
                    cpu += proc.cpu_percent(None)
                    rss += proc.memory_info().rss
                    threads += proc.num_threads()
                alive.append(pid)
            except psutil.Error:
                continue  # exited since the last listing
        if self._root not in alive:
            self._listed_at = float("-inf")  # find out at the next tick whether the root is gone
        return ProcessTreeSample("ok", frozenset(alive), cpu, rss, threads)
