"""The Monitor tab's history charts as small long-format DataFrames (time, value, series) for gr.LinePlot.

Each chart is thinned to about ROW_BUDGET rows (~30 bytes each on the wire), so a refresh stays a few kB
whatever the number of GPUs or NUMA nodes.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TypeVar

import pandas as pd

from m3ui.experts.window import HitRatePoint
from m3ui.monitor.cpu import CpuPoint
from m3ui.monitor.engine import EngineSnapshot
from m3ui.monitor.gpu import GpuSample, GpuSnapshot
from m3ui.ui.monitor.format import GIB

ROW_BUDGET = 150
COLUMNS = ("time", "value", "series")
_T = TypeVar("_T")


def _thin(items: Sequence[_T], series: int) -> Sequence[_T]:
    """Every k-th item, the newest kept, so that `series` lines stay within the row budget."""
    most = max(20, ROW_BUDGET // max(1, series))
    step = -(-len(items) // most)  # ceil
    return items[::-1][::step][::-1] if step > 1 else items


def _frame(times: Sequence[float], lines: dict[str, Sequence[float | None]]) -> pd.DataFrame | None:
    """Unknown values stay as NaN rows: a Gradio 6.31 LinePlot keeps the series of its first value for good, so
    every line must be in every frame. None when there is nothing to draw: a LinePlot whose first value is
    an empty frame never draws a line after, while None shows its empty state."""
    if all(v is None for values in lines.values() for v in values):
        return None
    rows = [(t, math.nan if v is None else round(float(v), 2), name) for name, values in lines.items()
            for t, v in zip(times, values, strict=True)]
    frame = pd.DataFrame(rows, columns=list(COLUMNS))
    frame["time"] = pd.to_datetime(frame["time"], unit="s")
    return frame


def _lines(items: Sequence[_T], when: Callable[[_T], float],
           lines: dict[str, Callable[[_T], float | None]]) -> pd.DataFrame | None:
    kept = _thin(items, len(lines))
    return _frame([when(item) for item in kept], {name: [read(item) for item in kept] for name, read in lines.items()})


def expert_hit_history(points: Sequence[HitRatePoint]) -> pd.DataFrame | None:
    """GPU hit rate (%) per recorder dump."""
    return _lines(points, lambda p: p.time,
                  {"GPU hit rate": lambda p: p.hit_rate * 100 if p.hit_rate is not None else None})


def engine_throughput(history: Sequence[EngineSnapshot]) -> pd.DataFrame | None:
    return _lines(history, lambda s: s.time, {
        "generated tok/s": lambda s: s.load.gen_throughput if s.load else None,
        "prompt tok/s": lambda s: s.rates.prompt_tokens_per_s if s.rates else None,
    })


def engine_requests(history: Sequence[EngineSnapshot]) -> pd.DataFrame | None:
    return _lines(history, lambda s: s.time, {
        "running": lambda s: s.load.running_requests if s.load else None,
        "queued": lambda s: s.load.queued_requests if s.load else None,
    })


def _per_gpu(history: Sequence[GpuSnapshot], read: Callable[[GpuSample], float | None]) -> pd.DataFrame | None:
    indexes = sorted({g.index for s in history for g in s.gpus})

    def reader(index: int) -> Callable[[GpuSnapshot], float | None]:
        def value(snapshot: GpuSnapshot) -> float | None:
            found = [read(g) for g in snapshot.gpus if g.index == index]
            return found[0] if found else None
        return value

    return _lines(history, lambda s: s.time, {f"GPU {i}": reader(i) for i in indexes})


def gpu_load(history: Sequence[GpuSnapshot]) -> pd.DataFrame | None:
    return _per_gpu(history, lambda g: g.utilization_percent)


def gpu_memory(history: Sequence[GpuSnapshot]) -> pd.DataFrame | None:
    """GiB used per GPU."""
    return _per_gpu(history, lambda g: g.memory_used_bytes / GIB if g.memory_used_bytes is not None else None)


def cpu_load(history: Sequence[CpuPoint], node_names: Sequence[str]) -> pd.DataFrame | None:
    """Load (%) of all CPUs, of each NUMA node, and of the cores expected to run kt-kernel's workers."""
    lines: dict[str, Callable[[CpuPoint], float | None]] = {"all CPUs": lambda p: p.total_percent}
    if len(node_names) > 1:
        for i, name in enumerate(node_names):
            lines[name] = lambda p, i=i: p.node_percents[i] if i < len(p.node_percents) else None  # type: ignore[misc]  # a default argument binds the loop's index
    if any(p.kt_percent is not None for p in history):
        lines["kt cores"] = lambda p: p.kt_percent
    return _lines(history, lambda p: p.time, lines)
