"""`python -m launch probe`: what this host gives a KT hybrid, measured in a few seconds, without root or a GPU.

Memory read bandwidth (all CPUs at once, then each NUMA node's own), physical and logical cores per node, the
ISA and the kt-kernel build and --kt-method values it runs fast, the host settings known to cost speed (each
with its fix and source, launch/host_checks.py) and each GPU's model, memory, PCIe link and memory bandwidth.
The result is the document of launch/host_file.py: `--json` prints it, and --host-file / M3UI_SIM_HOST read it.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import psutil
import pynvml

from launch.cpuinfo import supports_mxfp8
from launch.gpu_table import is_known, known_gpu
from launch.hardware import CPU_ROOT, NumaNode, detect_cpu
from launch.host_checks import HostSettingsText, host_findings
from launch.host_file import HostCpu, HostFigures, HostFinding, HostGpu, HostMemory
from launch.memory_bandwidth import FULL, QUICK, copy_bandwidth_gbs
from launch.probe import read_text

PROC_NUMA_BALANCING = Path("/proc/sys/kernel/numa_balancing")
THP_ENABLED = Path("/sys/kernel/mm/transparent_hugepage/enabled")
MAX_THREADS_PER_RUN = 256


def fast_kt_methods(backend: str, mxfp8: bool) -> tuple[str, ...]:
    """--kt-method values with a fast kernel on this CPU: AMX tiles for AMXINT4/AMXINT8; MXFP8 on AVX-512
    (BF16/VBMI) or AVX2+FMA (kt_kernel/utils/amx.py); LLAMAFILE (GGUF) needs AVX2."""
    methods = ["AMXINT4", "AMXINT8"] if backend == "amx" else []
    if mxfp8:
        methods.append("MXFP8")
    if backend not in ("none", "unknown"):
        methods.append("LLAMAFILE")
    return tuple(methods)


def _core_key(cpu: int, cpu_root: Path) -> tuple[str, str]:
    topology = cpu_root / f"cpu{cpu}" / "topology"
    return read_text(topology / "physical_package_id").text.strip(), read_text(topology / "core_id").text.strip()


def physical_cores_of(cpus: tuple[int, ...], cpu_root: Path = CPU_ROOT) -> int:
    """Distinct (package, core) among `cpus`; hyper-thread siblings share one."""
    return len({_core_key(cpu, cpu_root) for cpu in cpus}) or len(cpus)


def _one_per_core(cpus: tuple[int, ...], usable: set[int], cpu_root: Path = CPU_ROOT) -> list[int]:
    """The first usable CPU of each physical core: a copy kernel gains nothing from a hyper-thread sibling."""
    chosen: dict[tuple[str, str], int] = {}
    for cpu in cpus:
        if cpu in usable:
            chosen.setdefault(_core_key(cpu, cpu_root), cpu)
    return list(chosen.values())[:MAX_THREADS_PER_RUN]


def read_host_settings(cpu_root: Path = CPU_ROOT) -> HostSettingsText:
    balancing, thp = read_text(PROC_NUMA_BALANCING), read_text(THP_ENABLED)
    governors = tuple(read_text(p).text.strip() for p in sorted(cpu_root.glob("cpu[0-9]*/cpufreq/scaling_governor")))
    smt = read_text(cpu_root / "smt" / "active")
    return HostSettingsText(balancing.text if balancing.ok else None, thp.text if thp.ok else None,
                            tuple(g for g in governors if g), smt.text.strip() if smt.ok else None)


def probe_gpus() -> tuple[tuple[HostGpu, ...], tuple[HostFinding, ...]]:
    """Each NVIDIA GPU through NVML; none (and no error) on a host without a driver."""
    try:
        pynvml.nvmlInit()
    except (pynvml.NVMLError, OSError):
        return (), ()
    gpus, findings = [], []
    try:
        for i in range(pynvml.nvmlDeviceGetCount()):
            handle = pynvml.nvmlDeviceGetHandleByIndex(i)
            name = pynvml.nvmlDeviceGetName(handle)
            name = name.decode(errors="replace") if isinstance(name, bytes) else str(name)
            memory = pynvml.nvmlDeviceGetMemoryInfo(handle).total / 1e9
            gen = width = None
            with contextlib.suppress(pynvml.NVMLError):
                gen = int(pynvml.nvmlDeviceGetCurrPcieLinkGeneration(handle))
                width = int(pynvml.nvmlDeviceGetCurrPcieLinkWidth(handle))
                max_gen = int(pynvml.nvmlDeviceGetMaxPcieLinkGeneration(handle))
                max_width = int(pynvml.nvmlDeviceGetMaxPcieLinkWidth(handle))
                if (gen, width) < (max_gen, max_width):
                    findings.append(HostFinding(
                        f"pcie_gpu{i}", False,
                        f"GPU {i} links at PCIe Gen{gen} x{width}, below its Gen{max_gen} x{max_width} (an idle "
                        "card may step down: check again under load)",
                        f"nvidia-smi -q -i {i} -d PERFORMANCE,CLOCK; reseat the card or set the slot to "
                        f"Gen{max_gen} in the BIOS", "the layerwise GPU prefill streams every expert over this link"))
            gpus.append(HostGpu(name, round(memory, 1), gen, width, known_gpu(name).bandwidth_gbs if is_known(name)
                                else None))
    except pynvml.NVMLError as exc:
        findings.append(HostFinding("gpus", False, f"NVML failed while listing GPUs: {exc}", "nvidia-smi", ""))
    finally:
        with contextlib.suppress(pynvml.NVMLError):
            pynvml.nvmlShutdown()
    return tuple(gpus), tuple(findings)


def _nodes(nodes: tuple[NumaNode, ...], usable: set[int]) -> tuple[NumaNode, ...]:
    with_cpus = tuple(n for n in nodes if set(n.cpus) & usable)
    return with_cpus or (NumaNode(0, tuple(sorted(usable))),)


def probe_host(quick: bool = False) -> HostFigures:
    cpu = detect_cpu()
    usable = set(psutil.Process().cpu_affinity() or range(psutil.cpu_count() or 1))
    nodes = _nodes(cpu.numa_nodes, usable)
    size = QUICK if quick else FULL
    available = psutil.virtual_memory().available
    per_node = tuple(round(copy_bandwidth_gbs(_one_per_core(n.cpus, usable), size, available), 1) for n in nodes)
    every = [c for n in nodes for c in _one_per_core(n.cpus, usable)]
    read = round(copy_bandwidth_gbs(every, size, available), 1) if len(nodes) > 1 else per_node[0]
    physical = cpu.physical_cores or sum(physical_cores_of(n.cpus) for n in nodes)
    logical = cpu.logical_cores or len(usable)
    backend = cpu.kt_kernel_isa
    gpus, gpu_findings = probe_gpus()
    findings = host_findings(read_host_settings(), len(nodes), physical, logical) + gpu_findings
    findings += tuple(HostFinding(f"gpu{i}_bandwidth", False, f"{g.name} is not in m3ui's table of known cards: "
                                  "the roofline assumes 1000 GB/s", "add it to launch/gpu_table.py", "")
                      for i, g in enumerate(gpus) if g.bandwidth_gbs is None)
    return HostFigures(
        HostCpu(physical, logical, len(nodes), tuple(sorted(cpu.isa_flags)), backend, cpu.model_name or "",
                fast_kt_methods(backend, supports_mxfp8(cpu.isa_flags)),
                tuple(physical_cores_of(n.cpus) for n in nodes), tuple(len(n.cpus) for n in nodes)),
        HostMemory(round(psutil.virtual_memory().total / 1e9, 1), read, per_node),
        gpus, findings)


def format_probe(host: HostFigures) -> str:
    cpu, memory = host.cpu, host.memory
    lines = [
        f"CPU: {cpu.model or 'unknown model'}: {cpu.physical_cores} cores, {cpu.logical_cores} threads, "
        f"{cpu.numa_nodes} NUMA node(s)",
        f"  kt-kernel build: {cpu.kt_backend}; fast --kt-method values: {', '.join(cpu.kt_methods) or 'none'}",
        "  per NUMA node: " + ", ".join(f"node {i}: {p} cores / {q} threads" for i, (p, q) in
                                        enumerate(zip(cpu.per_node_physical, cpu.per_node_logical, strict=False))),
        f"memory: {memory.total_gb:.0f} GB, read bandwidth {memory.read_gbs:.1f} GB/s (all nodes); per node: "
        + ", ".join(f"{v:.1f}" for v in memory.per_node_read_gbs) + " GB/s",
    ]
    for i, gpu in enumerate(host.gpus):
        link = f"PCIe Gen{gpu.pcie_gen} x{gpu.pcie_width}" if gpu.pcie_gen else "PCIe link unknown"
        bandwidth = f"{gpu.bandwidth_gbs:.0f} GB/s" if gpu.bandwidth_gbs else "bandwidth unknown"
        lines.append(f"GPU {i}: {gpu.name}, {gpu.memory_gb:.0f} GB, {link}, {bandwidth}")
    if not host.gpus:
        lines.append("GPUs: none found (NVML)")
    for finding in host.findings:
        lines.append(f"{'ok ' if finding.ok else '!! '} {finding.message}")
        if not finding.ok:
            lines += [f"     fix: {finding.fix}", f"     source: {finding.source}"]
    return "\n".join(lines)
