"""The simulated engine's own knobs: the hardware it pretends to run on and how fast it pretends to be.

Everything comes from the environment (the engine's command line is sglang's, and stays so). The defaults
are the seed's machine: 96 GB Hopper cards, as many as --tp-size, and a host with enough RAM for every
routed expert; a KT hybrid that decodes a few tens of tokens a second and prefills a few hundred.

M3UI_SIM_HOST=FILE (a `python -m launch probe --json` document) makes the sim play that host instead: its
GPUs, RAM, and speeds from m3ui's speed model (`launch.host_speed`) for the launch's --kt-cpuinfer, thread
pools, TP, chunked prefill size and quantization, so the knobs a tuner turns change the speed as the cited
measurements say (docs/TUNING.md). M3UI_SIM_GPU_COUNT / _GPU_MEM_GB / _RAM_GB still override the file's figures.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, replace

from launch.decode_speed import REFERENCE_ALL_CPU_TPS
from launch.host_file import HostFigures, HostFileError, sim_host
from launch.host_speed import DEFAULT_CHUNK, all_cpu_decode_tps, cpu_prefill_tps, gpu_prefill_tps, launch_rates
from launch.model_config import ModelShape
from launch.settings import LaunchSettings

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


def _host(env: Mapping[str, str]) -> HostFigures | None:
    try:
        return sim_host(env)
    except HostFileError as exc:
        raise SimConfigError(str(exc)) from None


def load_sim_config(tp_size: int, env: Mapping[str, str] | None = None, *, settings: LaunchSettings | None = None,
                    shape: ModelShape | None = None) -> SimConfig:
    """The configuration for an engine started with `--tp-size tp_size` (env defaults to os.environ); with a
    host file, `settings` and `shape` give the speeds of that launch on that host."""
    env = os.environ if env is None else env
    host = _host(env)
    config = SimConfig(
        gpu_count=int(_number(env, GPU_COUNT_ENV, len(host.gpus) if host and host.gpus else tp_size, 1)),
        gpu_mem_gb=_number(env, GPU_MEM_ENV, min(g.memory_gb for g in host.gpus) if host and host.gpus else 96.0,
                           1.0),
        ram_gb=_number(env, RAM_ENV, host.memory.total_gb if host else 1024.0, 1.0),
        startup_seconds=_number(env, STARTUP_ENV, 4.0, 0.0),
        decode_tps=_number(env, DECODE_TPS_ENV, REFERENCE_ALL_CPU_TPS, 0.1),
        prefill_tps=_number(env, PREFILL_TPS_ENV, 400.0, 1.0),
        gpu_prefill_tps=_number(env, GPU_PREFILL_TPS_ENV, 4000.0, 1.0),
        unthrottled=env.get(UNTHROTTLED_ENV, "").strip().lower() in ("1", "true", "yes", "on"),
    )
    if host is None or settings is None or shape is None:
        return config
    rates = launch_rates(settings, host)
    return replace(
        config, decode_tps=all_cpu_decode_tps(shape, settings.quantization, rates),
        prefill_tps=cpu_prefill_tps(shape, rates),
        gpu_prefill_tps=gpu_prefill_tps(shape, settings.quantization, rates,
                                        settings.chunked_prefill_size or DEFAULT_CHUNK))
