"""What the kernel says about CPUs (/proc/cpuinfo, CPU lists, node meminfo) and which kt-kernel build it implies.

Pure functions of captured text: no I/O here (launch/hardware.py reads the files).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

KtKernelIsa = Literal["amx", "avx512_bf16", "avx512_vbmi", "avx512_vnni", "avx512_base", "avx2", "none", "unknown"]

# kt_kernel/_cpu_detect.py (0.7.2): the first variant whose flags are all in /proc/cpuinfo is the build it loads.
KT_KERNEL_VARIANTS: tuple[tuple[KtKernelIsa, tuple[str, ...]], ...] = (
    ("amx", ("amx_tile", "amx_int8", "amx_bf16", "avx512f", "avx512bw", "avx512_vnni", "avx512_vbmi", "avx512_bf16")),
    ("avx512_bf16", ("avx512f", "avx512bw", "avx512_vnni", "avx512_vbmi", "avx512_bf16")),
    ("avx512_vbmi", ("avx512f", "avx512bw", "avx512_vnni", "avx512_vbmi")),
    ("avx512_vnni", ("avx512f", "avx512bw", "avx512_vnni")),
    ("avx512_base", ("avx512f", "avx512bw")),
    ("avx2", ("avx2",)),
)
# kt_kernel/utils/amx.py: the MXFP8 experts run on the AVX-512 backend or on the AVX2+FMA fallback.
MXFP8_ISA_OPTIONS: tuple[tuple[str, ...], ...] = (
    ("avx512f", "avx512bw", "avx512_bf16", "avx512_vbmi"),
    ("avx2", "fma"),
)


@dataclass(frozen=True)
class CpuInfoText:
    """What /proc/cpuinfo says that psutil does not."""

    model_name: str | None
    sockets: int | None  # distinct "physical id"; None when the kernel does not print it
    flags: frozenset[str]  # all flags of the first CPU, lower case, as kt-kernel reads them


def parse_cpulist(text: str) -> tuple[int, ...]:
    """The kernel's CPU list format ("0-3,8-11", "" for none) as sorted CPU ids; ValueError if malformed."""
    cpus: set[int] = set()
    for part in text.strip().split(","):
        if not part:
            continue
        first, dash, last = part.partition("-")
        low = int(first)
        high = int(last) if dash else low
        if low < 0 or high < low:
            raise ValueError(f"bad CPU range {part!r}")
        cpus.update(range(low, high + 1))
    return tuple(sorted(cpus))


def format_cpulist(cpus: tuple[int, ...]) -> str:
    """The inverse of parse_cpulist: (0, 1, 2, 3, 8) -> "0-3,8"."""
    ranges: list[list[int]] = []
    for cpu in sorted(set(cpus)):
        if ranges and cpu == ranges[-1][1] + 1:
            ranges[-1][1] = cpu
        else:
            ranges.append([cpu, cpu])
    return ",".join(f"{a}" if a == b else f"{a}-{b}" for a, b in ranges)


def parse_cpuinfo(text: str) -> CpuInfoText:
    model_name: str | None = None
    flags: frozenset[str] | None = None
    packages: set[str] = set()
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if not sep:
            continue
        key, value = key.strip().lower(), value.strip()
        if key == "model name" and model_name is None:
            model_name = value
        elif key == "flags" and flags is None:
            flags = frozenset(value.lower().split())
        elif key == "physical id":
            packages.add(value)
    return CpuInfoText(model_name, len(packages) or None, flags or frozenset())


def parse_node_mem_total(text: str) -> int | None:
    """Bytes from a NUMA node's meminfo line "Node 0 MemTotal:  7301324 kB"."""
    found = re.search(r"^Node\s+\d+\s+MemTotal:\s+(\d+)\s*kB", text, re.MULTILINE)
    return int(found.group(1)) * 1024 if found else None


def _has_flag(flags: frozenset[str], name: str) -> bool:
    # kt-kernel accepts both spellings: the kernel prints "avx512_bf16" but "avx512vbmi".
    return name in flags or name.replace("_", "") in flags


def pick_kt_kernel_isa(flags: frozenset[str]) -> KtKernelIsa:
    for variant, required in KT_KERNEL_VARIANTS:
        if all(_has_flag(flags, name) for name in required):
            return variant
    return "none"  # kt-kernel would still try its avx2 build, and crash


def supports_mxfp8(flags: frozenset[str]) -> bool:
    return any(all(_has_flag(flags, name) for name in option) for option in MXFP8_ISA_OPTIONS)


def relevant_isa_flags(flags: frozenset[str]) -> frozenset[str]:
    return frozenset(f for f in flags if f.startswith(("amx", "avx512")) or f in ("avx2", "avx_vnni", "fma"))
