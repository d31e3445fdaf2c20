"""Memory bandwidth and dense FP8 (or BF16 where there is no FP8) throughput of known NVIDIA cards, from
NVIDIA's data sheets. NVML reports a card's name and memory but not its bandwidth; the roofline needs both.
Names are matched as substrings of NVML's name, most specific first ("H200" before "H20")."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class KnownGpu:
    key: str  # substring of NVML's name
    bandwidth_gbs: float
    fp8_tflops: float  # dense, no sparsity


KNOWN_GPUS = (
    KnownGpu("B200", 8000.0, 4500.0),
    KnownGpu("H200", 4800.0, 1979.0),
    KnownGpu("H100 NVL", 3900.0, 1671.0),
    KnownGpu("H100 PCIe", 2000.0, 1513.0),
    KnownGpu("H100", 3350.0, 1979.0),  # SXM5
    KnownGpu("H800", 3350.0, 1979.0),
    KnownGpu("H20", 4000.0, 296.0),
    KnownGpu("A100-SXM4-80GB", 2039.0, 312.0),  # no FP8: BF16
    KnownGpu("A100", 1935.0, 312.0),
    KnownGpu("L40S", 864.0, 733.0),
    KnownGpu("RTX 6000 Ada", 960.0, 364.0),
    KnownGpu("RTX 5090", 1792.0, 419.0),
    KnownGpu("RTX 4090", 1008.0, 330.0),
    KnownGpu("RTX 3090", 936.0, 71.0),  # no FP8: BF16
)
UNKNOWN_GPU = KnownGpu("", 1000.0, 300.0)  # an unknown card: a conservative guess, flagged by the probe


def known_gpu(name: str) -> KnownGpu:
    for gpu in KNOWN_GPUS:
        if gpu.key.lower() in name.lower():
            return gpu
    return UNKNOWN_GPU


def is_known(name: str) -> bool:
    return known_gpu(name) is not UNKNOWN_GPU
