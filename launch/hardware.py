"""What this machine offers the engine: NVIDIA GPUs (NVML), CPU topology and ISA, RAM, engine packages.

Every `detect_*` function returns a report and never raises: what could not be read is "unknown" and the
report says why. Text from /proc and /sys is parsed by the pure functions of launch/cpuinfo.py, tested on
captured output. `format_report` is the doctor's text: each problem with a hint. `python -m launch.hardware`
prints it for this machine.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import psutil
import pynvml

from launch.cpuinfo import (
    KtKernelIsa,
    format_cpulist,
    parse_cpuinfo,
    parse_cpulist,
    parse_node_mem_total,
    pick_kt_kernel_isa,
    relevant_isa_flags,
    supports_mxfp8,
)
from launch.probe import DEFAULT_TIMEOUT_S, read_text, run_command

CPUINFO_PATH = Path("/proc/cpuinfo")
NODE_ROOT = Path("/sys/devices/system/node")
CPU_ROOT = Path("/sys/devices/system/cpu")

# Variables kt-kernel and CUDA read that change what the engine sees on this same hardware.
KT_VARIANT_ENV = "KT_KERNEL_CPU_VARIANT"
CUDA_VISIBLE_ENV = "CUDA_VISIBLE_DEVICES"

# Distribution names, read from dist-info; "sglang" is upstream (no --kt-* flags), checked to explain its absence.
ENGINE_PACKAGES = ("sglang-kt", "kt-kernel", "torch", "sglang")
_VERSIONS_SCRIPT = """\
import json, sys
from importlib.metadata import PackageNotFoundError, version
def find(name):
    try:
        return version(name)
    except PackageNotFoundError:
        return None
print(json.dumps({"python": sys.version.split()[0], "versions": {n: find(n) for n in sys.argv[1:]}}))
"""


# ---------------------------------------------------------------- reports


@dataclass(frozen=True)
class GpuInfo:
    index: int  # NVML's index: all GPUs, whatever CUDA_VISIBLE_DEVICES says
    name: str
    compute_capability: tuple[int, int]
    memory_total_bytes: int
    memory_free_bytes: int | None = None
    uuid: str | None = None


GpuStatus = Literal["ok", "no_gpu", "unknown"]


@dataclass(frozen=True)
class GpuReport:
    status: GpuStatus
    gpus: tuple[GpuInfo, ...] = ()
    driver_version: str | None = None
    cuda_driver_version: str | None = None  # the newest CUDA the driver supports, e.g. "12.8"
    cuda_visible_devices: str | None = None
    error: str | None = None


@dataclass(frozen=True)
class NumaNode:
    id: int
    cpus: tuple[int, ...]  # empty for a memory-only node (CXL, PMEM)
    mem_total_bytes: int | None = None


@dataclass(frozen=True)
class CpuReport:
    model_name: str | None
    sockets: int | None
    physical_cores: int | None
    logical_cores: int | None
    usable_cpus: int | None  # CPUs this process may run on (taskset / cgroup cpuset)
    numa_nodes: tuple[NumaNode, ...]
    isa_flags: frozenset[str]  # the flags kt-kernel cares about
    kt_kernel_isa: KtKernelIsa
    mxfp8_capable: bool | None
    kt_variant_override: str | None = None
    errors: tuple[str, ...] = ()


@dataclass(frozen=True)
class MemoryReport:
    total_bytes: int | None
    available_bytes: int | None
    error: str | None = None


@dataclass(frozen=True)
class PackageVersions:
    python: str  # the interpreter asked
    python_version: str | None = None
    versions: Mapping[str, str | None] = field(default_factory=dict)  # None: not installed
    error: str | None = None


@dataclass(frozen=True)
class HardwareReport:
    gpu: GpuReport
    cpu: CpuReport
    memory: MemoryReport
    packages: PackageVersions


# ---------------------------------------------------------------- pure parsers


def parse_package_versions(python: str, text: str) -> PackageVersions:
    """The JSON line _VERSIONS_SCRIPT prints (the last line: site hooks may print before it)."""
    lines = text.strip().splitlines()
    try:
        answer = json.loads(lines[-1])
        versions = {str(name): None if v is None else str(v) for name, v in answer["versions"].items()}
        return PackageVersions(python, str(answer["python"]), versions)
    except (IndexError, ValueError, KeyError, TypeError, AttributeError):
        return PackageVersions(python, error=f"{python} gave an unexpected answer: {text.strip()[-200:]!r}")


# ---------------------------------------------------------------- probes (never raise)


def read_numa_nodes(root: Path = NODE_ROOT) -> tuple[tuple[NumaNode, ...], str | None]:
    """NUMA nodes laid out like /sys/devices/system/node, and why not when they cannot be read."""
    try:
        dirs = [p for p in root.iterdir() if re.fullmatch(r"node\d+", p.name)]
    except OSError as err:
        return (), f"NUMA nodes unknown: cannot list {root}: {err.strerror or err}"
    if not dirs:
        return (), f"NUMA nodes unknown: no node entries in {root}"
    nodes = []
    for path in sorted(dirs, key=lambda p: int(p.name[4:])):
        cpulist = read_text(path / "cpulist")
        if not cpulist.ok:
            return (), f"NUMA nodes unknown: {cpulist.error}"
        try:
            cpus = parse_cpulist(cpulist.text)
        except ValueError as err:
            return (), f"NUMA nodes unknown: {path / 'cpulist'}: {err}"
        meminfo = read_text(path / "meminfo")
        nodes.append(NumaNode(int(path.name[4:]), cpus, parse_node_mem_total(meminfo.text)))
    return tuple(nodes), None


def read_socket_count(cpu_root: Path = CPU_ROOT) -> int | None:
    """Distinct physical_package_id in sysfs: sockets when /proc/cpuinfo prints no "physical id"."""
    ids = {read_text(p).text.strip() for p in cpu_root.glob("cpu[0-9]*/topology/physical_package_id")}
    ids.discard("")
    return len(ids) or None


def detect_cpu(cpuinfo_path: Path = CPUINFO_PATH, node_root: Path = NODE_ROOT, cpu_root: Path = CPU_ROOT) -> CpuReport:
    errors: list[str] = []
    cpuinfo = read_text(cpuinfo_path)
    info = parse_cpuinfo(cpuinfo.text)
    if not cpuinfo.ok:
        errors.append(f"CPU model and ISA unknown: {cpuinfo.error}")
    numa_nodes, numa_error = read_numa_nodes(node_root)
    if numa_error:
        errors.append(numa_error)
    sockets = info.sockets or read_socket_count(cpu_root)
    return CpuReport(
        model_name=info.model_name,
        sockets=sockets,
        physical_cores=psutil.cpu_count(logical=False),
        logical_cores=psutil.cpu_count(logical=True),
        usable_cpus=len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        numa_nodes=numa_nodes,
        isa_flags=relevant_isa_flags(info.flags),
        kt_kernel_isa=pick_kt_kernel_isa(info.flags) if cpuinfo.ok else "unknown",
        mxfp8_capable=supports_mxfp8(info.flags) if cpuinfo.ok else None,
        kt_variant_override=os.environ.get(KT_VARIANT_ENV) or None,
        errors=tuple(errors),
    )


def _text(value: str | bytes) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else value  # old pynvml gave bytes


def _nvml_start_failure(err: Exception, visible: str | None) -> GpuReport:
    code = getattr(err, "value", None)
    if code == pynvml.NVML_ERROR_LIBRARY_NOT_FOUND:
        why = "the NVML library (libnvidia-ml.so.1) is not installed, so there is no NVIDIA driver"
    elif code == pynvml.NVML_ERROR_DRIVER_NOT_LOADED:
        why = "the NVIDIA driver is not loaded (no nvidia kernel module, or no GPU passed into this container)"
    else:
        return GpuReport("unknown", cuda_visible_devices=visible, error=f"GPUs unknown: NVML could not start: {err}")
    return GpuReport("no_gpu", cuda_visible_devices=visible, error=f"no NVIDIA GPU: {why}")


def _read_gpu(index: int) -> GpuInfo:
    handle = pynvml.nvmlDeviceGetHandleByIndex(index)
    memory = pynvml.nvmlDeviceGetMemoryInfo(handle)
    major, minor = pynvml.nvmlDeviceGetCudaComputeCapability(handle)
    return GpuInfo(
        index=index,
        name=_text(pynvml.nvmlDeviceGetName(handle)),
        compute_capability=(int(major), int(minor)),
        memory_total_bytes=int(memory.total),
        memory_free_bytes=int(memory.free),
        uuid=_text(pynvml.nvmlDeviceGetUUID(handle)),
    )


def _read_nvml(visible: str | None) -> GpuReport:
    driver = _text(pynvml.nvmlSystemGetDriverVersion())
    cuda = pynvml.nvmlSystemGetCudaDriverVersion()  # 12080 -> "12.8"
    cuda_text = f"{cuda // 1000}.{cuda % 1000 // 10}"
    gpus = tuple(_read_gpu(i) for i in range(pynvml.nvmlDeviceGetCount()))
    if not gpus:
        return GpuReport("no_gpu", (), driver, cuda_text, visible, f"no NVIDIA GPU: driver {driver} lists 0 devices")
    return GpuReport("ok", gpus, driver, cuda_text, visible)


def detect_gpus() -> GpuReport:
    """NVIDIA GPUs through NVML; "no NVIDIA GPU" (and why) when there is none, "unknown" when NVML fails."""
    visible = os.environ.get(CUDA_VISIBLE_ENV)
    try:
        pynvml.nvmlInit()
    except (pynvml.NVMLError, OSError) as err:
        return _nvml_start_failure(err, visible)
    try:
        return _read_nvml(visible)
    except (pynvml.NVMLError, OSError) as err:
        return GpuReport("unknown", cuda_visible_devices=visible, error=f"GPUs unknown: NVML failed: {err}")
    finally:
        with contextlib.suppress(pynvml.NVMLError):  # nothing left to release
            pynvml.nvmlShutdown()


def detect_memory() -> MemoryReport:
    try:
        memory = psutil.virtual_memory()
    except (OSError, RuntimeError) as err:
        return MemoryReport(None, None, f"RAM unknown: {err}")
    return MemoryReport(int(memory.total), int(memory.available))


def detect_packages(python: str | None = None, timeout_s: float = DEFAULT_TIMEOUT_S) -> PackageVersions:
    """Engine package versions in `python`, read from dist-info in that interpreter without importing them."""
    python = python or sys.executable
    answer = run_command([python, "-c", _VERSIONS_SCRIPT, *ENGINE_PACKAGES], timeout_s)
    if not answer.ok:
        return PackageVersions(python, error=f"engine packages unknown: {answer.error}")
    return parse_package_versions(python, answer.text)


def detect_hardware(engine_python: str | None = None) -> HardwareReport:
    return HardwareReport(detect_gpus(), detect_cpu(), detect_memory(), detect_packages(engine_python))


# ---------------------------------------------------------------- the doctor text

GIB = 1024**3
INSTALL_HINT = "install requirements-gpu.txt into this Python (or choose the Python that has the engine)"


def format_report(report: HardwareReport) -> str:
    sections = (
        _gpu_lines(report.gpu),
        _cpu_lines(report.cpu),
        _numa_lines(report.cpu.numa_nodes),
        _memory_lines(report.memory),
        _package_lines(report.packages),
    )
    return "\n\n".join("\n".join(lines) for lines in sections)


def _problem(what: str, hint: str) -> list[str]:
    return [f"  ! {what}", f"    hint: {hint}"]


def _gib(n: int | None) -> str:
    return "unknown" if n is None else f"{n / GIB:.1f} GiB"


def _count(n: int | None, noun: str) -> str:
    return f"unknown {noun}s" if n is None else f"{n} {noun}{'' if n == 1 else 's'}"


def _gpu_lines(gpu: GpuReport) -> list[str]:
    driver = f": driver {gpu.driver_version}, CUDA {gpu.cuda_driver_version}" if gpu.driver_version else ""
    lines = [f"GPUs (NVML){driver}"]
    for g in gpu.gpus:
        free = f", {_gib(g.memory_free_bytes)} free" if g.memory_free_bytes is not None else ""
        cc = f"sm_{g.compute_capability[0]}{g.compute_capability[1]}"
        lines.append(f"  [{g.index}] {g.name}, {cc}, {_gib(g.memory_total_bytes)}{free}, {g.uuid or 'no UUID'}")
    if gpu.status == "no_gpu":
        lines += _problem(gpu.error or "no NVIDIA GPU",
                          "the real engine cannot run here; m3ui will use the simulated engine")
    elif gpu.status == "unknown":
        lines += _problem(gpu.error or "GPUs unknown",
                          "run nvidia-smi to see what the driver says; the real engine needs a working NVIDIA driver")
    if gpu.cuda_visible_devices is not None:
        lines.append(f"  {CUDA_VISIBLE_ENV}={gpu.cuda_visible_devices}: NVML lists all GPUs, the engine only these")
    return lines


def _isa_words(cpu: CpuReport) -> str:
    if cpu.kt_kernel_isa == "amx":
        return "amx (AMX: the fast path)"
    if cpu.kt_kernel_isa in ("none", "unknown"):
        return cpu.kt_kernel_isa
    return f"{cpu.kt_kernel_isa} (no AMX: CPU experts run on the slower AVX path)"


def _isa_flag_words(cpu: CpuReport) -> str:
    if cpu.kt_kernel_isa == "unknown":
        return "unknown"
    return " ".join(sorted(cpu.isa_flags)) or "none of AVX2/FMA/AVX-512/AMX"


def _cpu_lines(cpu: CpuReport) -> list[str]:
    mxfp8 = {True: "yes", False: "no", None: "unknown"}[cpu.mxfp8_capable]
    lines = [
        f"CPU: {cpu.model_name or 'unknown model'}",
        f"  {_count(cpu.sockets, 'socket')}, {_count(cpu.physical_cores, 'core')},"
        f" {_count(cpu.logical_cores, 'thread')}, {_count(cpu.usable_cpus, 'CPU')} usable by this process",
        f"  ISA: {_isa_flag_words(cpu)}",
        f"  kt-kernel build: {_isa_words(cpu)}; MXFP8 experts: {mxfp8}",
    ]
    if cpu.kt_kernel_isa == "none":
        lines += _problem("no AVX2: kt-kernel has no build for this CPU",
                          "CPU experts need an x86-64 CPU with AVX2+FMA, ideally AMX (Intel Sapphire Rapids or newer)")
    if cpu.mxfp8_capable is False:
        lines += _problem("MXFP8 experts unsupported: no AVX2+FMA and no AVX-512 F/BW/BF16/VBMI",
                          "MiniMax-M3's MXFP8 experts fail at load ('MXFP8 backend not available'); use another host")
    if cpu.kt_variant_override and cpu.kt_variant_override.lower() != cpu.kt_kernel_isa:
        lines += _problem(f"{KT_VARIANT_ENV}={cpu.kt_variant_override} overrides kt-kernel's own choice"
                          f" ({cpu.kt_kernel_isa})", f"unset {KT_VARIANT_ENV}: a build above this CPU's ISA crashes")
    if cpu.usable_cpus is not None and cpu.logical_cores and cpu.usable_cpus < cpu.logical_cores:
        lines += _problem(f"this process may use only {cpu.usable_cpus} of {cpu.logical_cores} CPUs (taskset/cpuset)",
                          "size --kt-cpuinfer to the CPUs the engine may use, not to the whole machine")
    for error in cpu.errors:
        lines += _problem(error, "kt-kernel reads these /proc and /sys files too; check that they are readable")
    return lines


def _numa_lines(nodes: tuple[NumaNode, ...]) -> list[str]:
    if not nodes:
        return ["NUMA: unknown (see CPU)"]
    lines = [f"NUMA: {_count(len(nodes), 'node')}"]
    for node in nodes:
        cpus = f"CPUs {format_cpulist(node.cpus)} ({len(node.cpus)})" if node.cpus else "no CPUs (memory only)"
        lines.append(f"  node {node.id}: {cpus}, {_gib(node.mem_total_bytes)}")
    return lines


def _memory_lines(memory: MemoryReport) -> list[str]:
    if memory.error:
        return ["RAM", *_problem(memory.error, "kt-kernel holds every routed expert in RAM; check /proc/meminfo")]
    return [f"RAM: {_gib(memory.total_bytes)} total, {_gib(memory.available_bytes)} available"]


def _package_lines(packages: PackageVersions) -> list[str]:
    version = f" (Python {packages.python_version})" if packages.python_version else ""
    lines = [f"Engine packages in {packages.python}{version}"]
    if packages.error:
        return lines + _problem(packages.error, "give the Python that will run the engine (its venv's bin/python)")
    found = packages.versions
    lines += [f"  {name} {v}" for name, v in found.items() if v is not None]
    sglang_kt, upstream = found.get("sglang-kt"), found.get("sglang")
    if sglang_kt and upstream:
        lines += _problem("both sglang-kt and upstream sglang are installed: they ship the same `sglang` module",
                          "uninstall sglang, then reinstall sglang-kt")
    elif upstream:
        lines += _problem(f"upstream sglang {upstream} is installed, not sglang-kt: no --kt-* flags", INSTALL_HINT)
    elif not sglang_kt:
        lines += _problem("sglang-kt is not installed: the real engine cannot start from this Python", INSTALL_HINT)
    if not found.get("kt-kernel"):
        lines += _problem("kt-kernel is not installed: sglang-kt needs it for the CPU experts", INSTALL_HINT)
    torch = found.get("torch")
    if not torch:
        lines += _problem("torch is not installed", INSTALL_HINT)
    elif torch.endswith("+cpu"):
        lines += _problem(f"torch {torch} is a CPU-only build: the engine needs torch built for CUDA", INSTALL_HINT)
    return lines


if __name__ == "__main__":
    print(format_report(detect_hardware()))
