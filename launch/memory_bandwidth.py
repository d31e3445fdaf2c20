"""Memory read bandwidth in a few seconds: a STREAM-like copy (numpy, which copies without the GIL) in one
thread per CPU, each pinned to its CPU and touching its own buffers first, so a node's threads read the node's
own memory. Figures are STREAM's convention: bytes read plus bytes written, over the best of a few passes.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

MB = 1 << 20


@dataclass(frozen=True)
class BandwidthSize:
    bytes_per_thread: int
    passes: int


QUICK = BandwidthSize(64 * MB, 5)
FULL = BandwidthSize(256 * MB, 4)
MAX_TOTAL_BYTES = 4 << 30  # both buffers of every thread together


def _pin(cpu: int | None) -> None:
    if cpu is not None and hasattr(os, "sched_setaffinity"):
        with contextlib.suppress(OSError):  # a CPU outside our cpuset: run unpinned rather than fail
            os.sched_setaffinity(0, {cpu})  # Linux: 0 is the calling thread


def copy_bandwidth_gbs(cpus: Sequence[int | None], size: BandwidthSize, available_bytes: int | None = None) -> float:
    """GB/s of all threads copying at once, one per entry of `cpus` (None: unpinned)."""
    threads = max(1, len(cpus))
    per_thread = size.bytes_per_thread
    budget = min(MAX_TOTAL_BYTES, (available_bytes or MAX_TOTAL_BYTES) // 4)
    per_thread = max(MB, min(per_thread, budget // (2 * threads)))
    n = per_thread // 8
    start = threading.Barrier(threads + 1)
    done = threading.Barrier(threads + 1)
    errors: list[BaseException] = []
    # Each copy's own start and end: a pass lasts from the first copy's start to the last one's end. (The caller's
    # clock after the barrier was late when a busy host ran the copies before the caller: 188 GB/s on 2 cores.)
    spans: list[list[tuple[float, float]]] = [[] for _ in range(size.passes)]

    def work(cpu: int | None) -> None:
        try:
            _pin(cpu)
            src = np.ones(n)  # first touch from the pinned thread: the pages land on its node
            dst = np.zeros(n)
            for copy_pass in spans:
                start.wait()
                began = time.perf_counter()
                np.copyto(dst, src)
                copy_pass.append((began, time.perf_counter()))  # list.append is atomic under the GIL
                done.wait()
        except BaseException as exc:  # surfaced in the caller; the barriers are aborted so no one waits
            errors.append(exc)
            start.abort()
            done.abort()

    workers = [threading.Thread(target=work, args=(cpu,), daemon=True) for cpu in (cpus or [None])]
    for worker in workers:
        worker.start()
    try:
        for _ in range(size.passes):
            start.wait()
            done.wait()
    except threading.BrokenBarrierError:
        pass
    for worker in workers:
        worker.join()
    if errors:
        raise RuntimeError(f"bandwidth measurement failed: {errors[0]!r}")
    best = min(max(end for _, end in copies) - min(began for began, _ in copies) for copies in spans)
    return 2 * n * 8 * threads / best / 1e9
