"""The CPU panel's source: per-core load grouped by NUMA node, RAM, and the engine's process tree.

Cores carry the role kt-kernel's settings give them (see cpu_layout.py), so cores beyond --kt-cpuinfer or
outside --kt-numa-nodes show up. The topology is read once; per-CPU load is measured between two samples
(the first from the source's creation).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Literal

import psutil

from launch.hardware import NumaNode, read_numa_nodes
from m3ui.monitor.cpu_layout import CoreRole, plan_core_roles, read_thread_siblings
from m3ui.monitor.processes import ProcessTreeSample
from m3ui.monitor.target import KtThreads

_UNKNOWN_NODE = -1  # the one group of every CPU when /sys has no NUMA nodes; reported as node None

@dataclass(frozen=True)
class CoreUsage:
    cpu: int
    percent: float
    role: CoreRole


@dataclass(frozen=True)
class NumaUsage:
    node: int | None  # None: the NUMA layout is unknown and this group holds every CPU
    cores: tuple[CoreUsage, ...]
    percent: float  # mean over the node's CPUs
    kt_pools: tuple[int, ...]  # kt-kernel pools placed on this node


@dataclass(frozen=True)
class CpuSnapshot:
    time: float
    status: Literal["pending", "ok"]
    total_percent: float = 0.0
    nodes: tuple[NumaUsage, ...] = ()
    ram_used_bytes: int = 0
    ram_total_bytes: int = 0
    engine: ProcessTreeSample = ProcessTreeSample("not_configured")
    notes: tuple[str, ...] = ()  # topology unknown, pools that do not fit, ...

    @property
    def kt_percent(self) -> float | None:
        """Mean load of the cores expected to host kt-kernel workers; None without kt-kernel settings."""
        loads = [c.percent for n in self.nodes for c in n.cores if c.role == "kt"]
        return sum(loads) / len(loads) if loads else None


@dataclass(frozen=True)
class CpuPoint:
    """What the history keeps per tick (per-core figures would be hundreds of values per tick)."""

    time: float
    total_percent: float
    node_percents: tuple[float, ...]
    kt_percent: float | None
    engine_cpu_percent: float
    engine_rss_bytes: int
    ram_used_bytes: int

    @classmethod
    def of(cls, snapshot: CpuSnapshot) -> CpuPoint:
        return cls(
            snapshot.time, snapshot.total_percent, tuple(n.percent for n in snapshot.nodes), snapshot.kt_percent,
            snapshot.engine.cpu_percent, snapshot.engine.rss_bytes, snapshot.ram_used_bytes,
        )


def _busy_and_total() -> list[tuple[float, float]]:
    """(busy, total) CPU seconds per CPU, psutil's formula, with our own baseline: psutil.cpu_percent()
    keeps one per process, which any other caller would reset."""
    result = []
    for times in psutil.cpu_times(percpu=True):
        total = sum(times) - getattr(times, "guest", 0.0) - getattr(times, "guest_nice", 0.0)  # already in user
        result.append((total - times.idle - getattr(times, "iowait", 0.0), total))
    return result


class CpuSource:
    """Not thread-safe: the sampler's local thread owns it."""

    def __init__(self) -> None:
        nodes, numa_error = read_numa_nodes()
        self._numa_error = numa_error
        # memory-only nodes (CXL, PMEM) have no cores to show; without NUMA facts, one group of every CPU
        every_cpu = NumaNode(_UNKNOWN_NODE, tuple(range(psutil.cpu_count() or 0)))
        self._nodes = tuple(n for n in nodes if n.cpus) or (every_cpu,)
        self._siblings = read_thread_siblings(tuple(c for n in self._nodes for c in n.cpus))
        self._layout = plan_core_roles(self._nodes, self._siblings, None)
        self._last_times = _busy_and_total()  # baseline: the first sample measures from here

    def set_kt_threads(self, kt: KtThreads | None) -> None:
        """Mark the cores kt-kernel's settings give its workers (not possible without the NUMA layout)."""
        self._layout = plan_core_roles(self._nodes, self._siblings, None if self._numa_error else kt)

    def sample(self, engine: ProcessTreeSample) -> CpuSnapshot:
        times = _busy_and_total()  # index = CPU id on a machine with every CPU online
        per_cpu = [
            min(100.0, max(0.0, 100.0 * (busy - busy0) / (total - total0))) if total > total0 else 0.0
            for (busy, total), (busy0, total0) in zip(times, self._last_times, strict=False)
        ]
        self._last_times = times
        memory = psutil.virtual_memory()
        nodes = tuple(self._node_usage(node, per_cpu) for node in self._nodes)
        return CpuSnapshot(
            time=time.time(), status="ok", total_percent=sum(per_cpu) / len(per_cpu) if per_cpu else 0.0,
            nodes=nodes, ram_used_bytes=int(memory.total - memory.available), ram_total_bytes=int(memory.total),
            engine=engine, notes=((self._numa_error,) if self._numa_error else ()) + self._layout.notes,
        )

    def _node_usage(self, node: NumaNode, per_cpu: list[float]) -> NumaUsage:
        cores = tuple(
            CoreUsage(cpu, per_cpu[cpu], self._layout.roles.get(cpu, "unassigned"))
            for cpu in node.cpus if cpu < len(per_cpu)
        )
        mean = sum(c.percent for c in cores) / len(cores) if cores else 0.0
        node_id = None if node.id == _UNKNOWN_NODE else node.id
        return NumaUsage(node_id, cores, mean, self._layout.pool_by_node.get(node.id, ()))
