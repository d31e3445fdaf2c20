"""The machine's panels: a card per GPU, and the CPU's cores by NUMA node with kt-kernel's expected
placement marked (so cores beyond --kt-cpuinfer or outside --kt-numa-nodes stand out; the legend says it in
words)."""

from __future__ import annotations

from m3ui.monitor.cpu import CoreUsage, CpuSnapshot, NumaUsage
from m3ui.monitor.gpu import GpuSample, GpuSnapshot
from m3ui.monitor.processes import ProcessTreeSample
from m3ui.ui.monitor.format import bar, byte_rate, count, esc, facts, gib, note, notes, pct

_ROLE_CLASS = {"kt": "k", "spare": "s", "outside": "o", "unassigned": "u"}
_ROLE_TEXT = {"kt": "a CPU expert thread should run here", "spare": "spare: more cores than expert threads",
              "outside": "outside the NUMA nodes the expert threads use", "unassigned": ""}
_CORE_LEGEND = ('<div class="m3-legend">' + "".join(
    f'<span class="m3-legend-item"><i class="m3-core {_ROLE_CLASS[role]}"></i>{_ROLE_TEXT[role]}</span>'
    for role in ("kt", "spare", "outside")) + "<span>· the fill shows each core's load</span></div>")


def _share(part: float | None, whole: float | None) -> float | None:
    return part / whole if part is not None and whole else None


def _gauge(label: str, share: float | None, text: str, kind: str = "", overlay: float | None = None) -> str:
    return (f'<div class="m3-gauge"><span>{esc(label)}</span>{bar(share, kind, overlay)}'
            f'<span class="m3-gauge-value">{esc(text)}</span></div>')


def _gpu_card(gpu: GpuSample) -> str:
    used, total = gpu.memory_used_bytes, gpu.memory_total_bytes
    memory = f"{gib(used)} / {gib(total)}"
    if gpu.engine_memory_bytes is not None:
        memory += f" · engine {gib(gpu.engine_memory_bytes)}"
    power = (f"{gpu.power_watts:.0f} / {gpu.power_limit_watts:.0f} W" if gpu.power_watts is not None
             and gpu.power_limit_watts else (f"{gpu.power_watts:.0f} W" if gpu.power_watts is not None else "–"))
    utilization = gpu.utilization_percent / 100 if gpu.utilization_percent is not None else None
    temperature = f"{gpu.temperature_c:.0f} °C" if gpu.temperature_c is not None else "–"
    pcie = (f"rx {byte_rate(gpu.pcie_rx_bytes_per_s)} · tx {byte_rate(gpu.pcie_tx_bytes_per_s)}"
            if gpu.pcie_rx_bytes_per_s is not None else "not reported")
    title = f"GPU {gpu.index} · {esc(gpu.name)}"
    return (f'<div class="m3-card" data-gpu="{gpu.index}"><div class="m3-card-title">{title}</div>'
            + _gauge("Load", utilization, pct(utilization), "gpu")
            + _gauge("Memory", _share(used, total), memory, "gpu", _share(gpu.engine_memory_bytes, total))
            + _gauge("Power", _share(gpu.power_watts, gpu.power_limit_watts), power, "power")
            + facts([("Temperature", temperature), ("PCIe", pcie)]) + "</div>")


def gpu_panel(snapshot: GpuSnapshot, simulated: bool) -> str:
    if snapshot.status == "pending":
        return note("empty", "Waiting for the first sample.")
    sim = note("info", "The simulated engine uses no GPU: this panel shows this machine's real ones.") if simulated \
        else ""
    if snapshot.status != "ok":
        title = "No NVIDIA GPU on this machine." if snapshot.status == "no_gpu" else "The GPUs cannot be read."
        return note("empty", snapshot.reason or "", title) + sim
    cards = "".join(_gpu_card(gpu) for gpu in snapshot.gpus)
    return sim + notes("warn", [snapshot.note] if snapshot.note else []) + f'<div class="m3-cards">{cards}</div>'


def _core(core: CoreUsage) -> str:
    """Terse: a big host has hundreds of CPUs, sent every tick (the role is in the class, the load in l0..l9)."""
    level = min(9, int(core.percent / 10))
    return f'<i class="{_ROLE_CLASS[core.role]} l{level}" title="CPU {core.cpu}: {core.percent:.0f}%"></i>'


def _node(node: NumaUsage) -> str:
    name = "All CPUs (NUMA layout unknown)" if node.node is None else f"NUMA node {node.node}"
    pools = (f" · kt pool{'s' if len(node.kt_pools) > 1 else ''} {', '.join(map(str, node.kt_pools))}"
             if node.kt_pools else "")
    kt = [c.percent for c in node.cores if c.role == "kt"]
    kt_load = f" · kt cores {sum(kt) / len(kt):.0f}%" if kt else ""
    cores = "".join(_core(core) for core in node.cores)
    return (f'<div class="m3-numa"><div class="m3-numa-head">{esc(name)} · {len(node.cores)} CPUs · '
            f'{node.percent:.0f}%{esc(pools + kt_load)}</div><div class="m3-cores">{cores}</div></div>')


def _engine_tree(engine: ProcessTreeSample, fleet: bool) -> str:
    if fleet:  # the app watches a router; its workers' figures are in the headline's table
        return note("info", "A fleet: each worker's figures are in the table at the top.", "Engine processes:")
    if engine.status != "ok":
        return note("empty", engine.reason or "no local engine process", "Engine processes:")
    return facts([("Engine processes", f"{len(engine.pids)}"),
                  ("Engine CPU", f"{engine.cpu_percent:.0f}% ({engine.cpu_percent / 100:.1f} cores)"),
                  ("Engine RSS", gib(engine.rss_bytes)), ("Engine threads", count(engine.threads))])


def cpu_panel(snapshot: CpuSnapshot, simulated: bool, fleet: bool = False) -> str:
    if snapshot.status != "ok":
        return note("empty", "Waiting for the first sample.")
    ram = _share(snapshot.ram_used_bytes, snapshot.ram_total_bytes)
    body = (_gauge("All CPUs", snapshot.total_percent / 100, pct(snapshot.total_percent / 100), "cpu")
            + _gauge("RAM", ram, f"{gib(snapshot.ram_used_bytes)} / {gib(snapshot.ram_total_bytes)}", "ram")
            + _engine_tree(snapshot.engine, fleet))
    body += "".join(_node(node) for node in snapshot.nodes)
    if any(c.role != "unassigned" for n in snapshot.nodes for c in n.cores):
        body += _CORE_LEGEND
        if simulated:
            body += note("info", "The simulated engine runs no kt-kernel workers: the marks show where its "
                                 "settings would place them on this machine.")
    return body + notes("warn", snapshot.notes)
