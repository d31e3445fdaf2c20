"""The simulated engine's own knobs: the hardware it pretends to run on and how fast it pretends to be.

Everything comes from the environment (the engine's command line is sglang's, and stays so). The defaults
are the seed's machine: 96 GB Hopper cards, as many as --tp-size, and a host with enough RAM for every
routed expert; a KT hybrid that decodes a few tens of tokens a second and prefills a few hundred.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from launch.decode_speed import REFERENCE_ALL_CPU_TPS

ENV_PREFIX = "M3UI_SIM_"
GPU_COUNT_ENV = "M3UI_SIM_GPU_COUNT"
GPU_MEM_ENV = "M3UI_SIM_GPU_MEM_GB"
RAM_ENV = "M3UI_SIM_RAM_GB"
STARTUP_ENV = "M3UI_SIM_STARTUP_SECONDS"
DECODE_TPS_ENV = "M3UI_SIM_DECODE_TPS"
PREFILL_TPS_ENV = "M3UI_SIM_PREFILL_TPS"
GPU_PREFILL_TPS_ENV = "M3UI_SIM_GPU_PREFILL_TPS"
UNTHROTTLED_ENV = "M3UI_SIM_UNTHROTTLED"


class SimConfigError(ValueError):
    """An M3UI_SIM_* variable holds something that is not a usable number."""


@dataclass(frozen=True)
class SimConfig:
    gpu_count: int
    gpu_mem_gb: float
    ram_gb: float
    startup_seconds: float
    # Decode speed of one request alone with every routed expert on the CPU; launch.decode_speed scales it up
    # by where the expert activations land.
    decode_tps: float
    prefill_tps: float  # CPU-expert prefill (KT hybrid, short prompts)
    gpu_prefill_tps: float  # layerwise full-GPU prefill above --kt-gpu-prefill-token-threshold
    unthrottled: bool  # no sleeping at all: for benchmarks of the client side

    @property
    def gpu_bytes(self) -> float:
        return self.gpu_mem_gb * 1e9

    @property
    def ram_bytes(self) -> float:
        return self.ram_gb * 1e9


def _number(env: Mapping[str, str], name: str, default: float, lo: float) -> float:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise SimConfigError(f"{name}={raw!r} is not a number") from None
    if value < lo:
        raise SimConfigError(f"{name}={raw!r} must be at least {lo:g}")
    return value


def load_sim_config(tp_size: int, env: Mapping[str, str] | None = None) -> SimConfig:
    """The configuration for an engine started with `--tp-size tp_size` (env defaults to os.environ)."""
    env = os.environ if env is None else env
    return SimConfig(
        gpu_count=int(_number(env, GPU_COUNT_ENV, tp_size, 1)),
        gpu_mem_gb=_number(env, GPU_MEM_ENV, 96.0, 1.0),
        ram_gb=_number(env, RAM_ENV, 1024.0, 1.0),
        startup_seconds=_number(env, STARTUP_ENV, 4.0, 0.0),
        decode_tps=_number(env, DECODE_TPS_ENV, REFERENCE_ALL_CPU_TPS, 0.1),
        prefill_tps=_number(env, PREFILL_TPS_ENV, 400.0, 1.0),
        gpu_prefill_tps=_number(env, GPU_PREFILL_TPS_ENV, 4000.0, 1.0),
        unthrottled=env.get(UNTHROTTLED_ENV, "").strip().lower() in ("1", "true", "yes", "on"),
    )
