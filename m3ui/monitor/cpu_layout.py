"""Where kt-kernel's CPU inference threads should run, so the CPU panel can show a misconfiguration.

kt-kernel (`kt_kernel/experts_base.py`) makes `--kt-threadpool-count` worker pools, pool i on NUMA node
`--kt-numa-nodes[i]` (default i) with its share of `--kt-cpuinfer` threads, and its extension binds each
worker to a core of that node with hwloc. Which cores exactly is not visible from Python; this module
assumes the node's first cores, one hardware thread each (what an hwloc "singlified" core binding
gives), and calls them "expected". Roles:
- "kt": expected to host a kt-kernel worker;
- "spare": in a node kt-kernel uses, beyond --kt-cpuinfer's share (or a second hardware thread);
- "outside": in a node no pool uses (busy "outside" cores while the engine decodes mean the engine's
  threads are not where --kt-numa-nodes says);
- "unassigned": kt-kernel is not in use or its settings are unknown.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from launch.cpuinfo import parse_cpulist
from launch.hardware import CPU_ROOT, NumaNode
from launch.probe import read_text
from m3ui.monitor.target import KtThreads

CoreRole = Literal["kt", "spare", "outside", "unassigned"]


@dataclass(frozen=True)
class CoreLayout:
    roles: Mapping[int, CoreRole]  # by CPU id
    pool_by_node: Mapping[int, tuple[int, ...]]  # NUMA node -> the kt-kernel pools placed on it
    notes: tuple[str, ...] = ()  # what could not be placed as configured


def read_thread_siblings(cpus: tuple[int, ...], cpu_root: Path = CPU_ROOT) -> dict[int, tuple[int, ...]]:
    """CPU id -> the hardware threads of its core (itself alone when sysfs does not say)."""
    siblings = {}
    for cpu in cpus:
        probe = read_text(cpu_root / f"cpu{cpu}" / "topology" / "thread_siblings_list")
        try:
            siblings[cpu] = parse_cpulist(probe.text) if probe.ok else (cpu,)
        except ValueError:
            siblings[cpu] = (cpu,)
    return siblings


def _first_thread_per_core(node: NumaNode, siblings: Mapping[int, tuple[int, ...]]) -> list[int]:
    """One CPU per physical core of `node`, in core order, then the cores' other hardware threads."""
    firsts, others, seen_cores = [], [], set()
    for cpu in node.cpus:
        core = tuple(sorted(siblings.get(cpu, (cpu,))))
        if core in seen_cores:
            others.append(cpu)
        else:
            seen_cores.add(core)
            firsts.append(cpu)
    return firsts + others


def plan_core_roles(
    nodes: tuple[NumaNode, ...], siblings: Mapping[int, tuple[int, ...]], kt: KtThreads | None
) -> CoreLayout:
    all_cpus = [cpu for node in nodes for cpu in node.cpus]
    if kt is None:
        return CoreLayout(dict.fromkeys(all_cpus, "unassigned"), {})
    roles: dict[int, CoreRole] = dict.fromkeys(all_cpus, "outside")
    by_id = {node.id: node for node in nodes}
    pools: dict[int, list[int]] = {}
    notes = []
    for pool, (node_id, threads) in enumerate(zip(kt.pool_nodes(), kt.pool_threads(), strict=False)):
        node = by_id.get(node_id)
        if node is None:
            notes.append(f"pool {pool}: NUMA node {node_id} does not exist here")
            continue
        pools.setdefault(node_id, []).append(pool)
        order = _first_thread_per_core(node, siblings)
        for cpu in order:
            roles[cpu] = roles[cpu] if roles[cpu] == "kt" else "spare"
        taken = sum(1 for cpu in order if roles[cpu] == "kt")  # pools sharing a node continue after each other
        wanted = order[taken : taken + threads]
        for cpu in wanted:
            roles[cpu] = "kt"
        if taken + threads > len(order):
            notes.append(f"pool {pool}: {threads} threads but NUMA node {node_id} has only {len(order) - taken} "
                         "CPUs left: workers share CPUs")
    return CoreLayout(roles, {node: tuple(p) for node, p in pools.items()}, tuple(notes))
