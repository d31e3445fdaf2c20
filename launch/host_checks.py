"""Host settings known to cost a KT hybrid speed, each with the exact command that fixes it and the source that
showed the cost. Pure functions of the text the kernel exposes (launch/host_probe.py reads it), so each rule is
tested on captured values.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from launch.host_file import HostFinding

SOURCES = {
    "numa_balancing": "kvcache-ai/ktransformers#806 (advice on a 2-socket Xeon 6980P: disable NUMA balancing, "
                      "it migrates the pages each NUMA pool reads locally); #769 (NUMA-local pools: 5.2 -> 7.4 tok/s)",
    "thp": "kvcache-ai/ktransformers#848 (THP cuts TLB misses on the streamed expert weights); ikawrakow/ik_llama.cpp"
           "#278 (2 MiB pages: token generation 7.9 -> 9.0 tok/s, ~12%)",
    "governor": "no KT measurement found: a powersave or ondemand governor lowers the clocks the barrier-bound "
                "kt-kernel workers run at; measure with python -m launch tune before and after",
    "hyperthreading": "kvcache-ai/ktransformers#219 (112 threads on 56 cores: 0.6 tok/s, 56: 1.7) and #726 (30 "
                      "threads on 20 CPUs: <0.1 tok/s, 18: 2.9; advice: --cpu_infer = physical cores - 2)",
}


@dataclass(frozen=True)
class HostSettingsText:
    """What the kernel says, as read (None: not readable here)."""

    numa_balancing: str | None  # /proc/sys/kernel/numa_balancing
    thp: str | None  # /sys/kernel/mm/transparent_hugepage/enabled, e.g. "always [madvise] never"
    governors: tuple[str, ...]  # scaling_governor of each CPU that has cpufreq
    smt_active: str | None  # /sys/devices/system/cpu/smt/active


def selected_thp(text: str) -> str | None:
    found = re.search(r"\[(\w+)\]", text)
    return found.group(1) if found else (text.strip() or None)


def host_findings(text: HostSettingsText, numa_nodes: int, physical: int, logical: int) -> tuple[HostFinding, ...]:
    findings: list[HostFinding] = []
    if text.numa_balancing is not None and numa_nodes > 1:
        on = text.numa_balancing.strip() not in ("0", "")
        findings.append(HostFinding(
            "numa_balancing", not on,
            "automatic NUMA balancing is on: the kernel moves expert pages between nodes" if on
            else "automatic NUMA balancing is off",
            "sudo sysctl -w kernel.numa_balancing=0", SOURCES["numa_balancing"]))
    if text.thp is not None:
        mode = selected_thp(text.thp)
        findings.append(HostFinding(
            "thp", mode == "always", f"transparent huge pages: {mode}",
            "echo always | sudo tee /sys/kernel/mm/transparent_hugepage/enabled", SOURCES["thp"]))
    if text.governors:
        slow = sorted({g for g in text.governors if g != "performance"})
        findings.append(HostFinding(
            "governor", not slow,
            f"CPU frequency governor: {', '.join(slow)} on some CPUs" if slow else "CPU governor: performance",
            "sudo cpupower frequency-set -g performance", SOURCES["governor"]))
    if logical > physical:
        findings.append(HostFinding(
            "hyperthreading", True,
            f"hyper-threading on ({logical} threads on {physical} cores): keep --kt-cpuinfer at or below "
            f"{physical} unless a measurement (python -m launch tune) shows more helps",
            f"--kt-cpuinfer {physical}", SOURCES["hyperthreading"]))
    return tuple(findings)
