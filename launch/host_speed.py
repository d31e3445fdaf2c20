"""How fast a host runs a KT hybrid with given knobs: the CPU side of m3ui's one speed model.

`launch.decode_speed` says how a decode step scales with where the expert activations land; this module says
how fast the all-CPU step is on a host (its memory bandwidth, cores, NUMA nodes) with given --kt-cpuinfer and
--kt-threadpool-count, and how fast prefill runs. The roofline (`launch.roofline`), the tuner's trial order
and the simulated engine (M3UI_SIM_HOST) all read these functions, so they agree by construction.

CPU experts stream their weights from DRAM once per token, so decode is bandwidth-bound: the share of the
host's read bandwidth that the CPU experts reach is

    share = use(threads) * numa(pools) / ((1 + SYNC_PER_THREAD * threads / pools) * (1 + OVERSUBSCRIPTION * over) ** 2)

- use: threads pull at most PER_THREAD_GBS each until the host's bandwidth is saturated; a hyper-thread counts
  HT_GAIN of a core;
- numa: one pool per NUMA node reads local memory; fewer pools than nodes read across sockets (NUMA_SPLIT);
- sync: each pool's threads meet at a barrier every layer, a cost that grows with the threads of a pool;
- over: threads plus the engine's own RESERVED_CPUS beyond the logical CPUs; spinning workers that lose their
  CPU stall every barrier, which is catastrophic (squared).
The constants are fitted to published measurements (docs/TUNING.md cites each, and tests/test_host_speed.py
replays them): kvcache-ai/ktransformers #806 (best at 56 of 112 cores, more threads slower), #219 (112, 56, 24
threads: 0.6, 1.7, 1.87 tok/s), #726 (30 threads on 20 CPUs: <0.1 tok/s, 18: 2.9), #1816 (28 -> 52 threads on a
28-core AMX part: 10.3 -> 11.8 tok/s) and #769 (NUMA-aware pools on 2 sockets: 5.2 -> 7.4 tok/s).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from launch.gpu_table import known_gpu
from launch.host_file import HostFigures
from launch.model_config import ModelShape
from launch.settings import LaunchSettings
from launch.sizing import CPU_BYTES_PER_PARAM, GB, model_footprint

PER_THREAD_GBS = 7.0  # what one kt-kernel worker streams, GB/s
HT_GAIN = 0.4  # a hyper-thread's worth of a physical core
SYNC_PER_THREAD = 0.006  # the per-layer barrier's cost, per thread of a pool (relative to the step)
OVERSUBSCRIPTION = 30.0
RESERVED_CPUS = 2  # the engine's scheduler, tokenizer and GPU-launch threads
NUMA_SPLIT = 5.2 / 7.4  # one pool spanning two sockets over one pool per socket (#769)
# Effective CPU throughput of kt-kernel's MoE kernels per worker thread in prefill (GFLOP/s), by the build
# it loads. Assumptions of the right order (AMX tiles are ~4x AVX-512 VNNI), not measurements.
PREFILL_GFLOPS_PER_THREAD = {"amx": 400.0, "avx512_bf16": 120.0, "avx512_vbmi": 100.0, "avx512_vnni": 100.0,
                             "avx512_base": 80.0, "avx2": 50.0}
DEFAULT_PREFILL_GFLOPS = 50.0
PCIE_GBS_PER_LANE = {1: 0.25, 2: 0.5, 3: 0.985, 4: 1.97, 5: 3.94, 6: 7.56}  # usable, per direction
DEFAULT_PCIE_GBS = 25.0  # unknown link: a Gen4 x16 that reaches ~80% of 31.5 GB/s
DEFAULT_CHUNK = 8192  # sglang's --chunked-prefill-size on a 80-160 GB GPU
PREFILL_OVERHEAD_S = 0.06  # scheduling, tokenization and the first sampling step of a prompt
NEVER = 10_000_000  # a threshold no prompt reaches: the GPU prefill never wins
GPU_MFU = 0.4  # share of a GPU's dense FP8 peak a prefill reaches


@dataclass(frozen=True)
class CpuKnobs:
    threads: int  # --kt-cpuinfer
    pools: int  # --kt-threadpool-count


def effective_threads(host: HostFigures, threads: int) -> float:
    """Physical cores count 1, hyper-threads HT_GAIN; threads beyond the logical CPUs add nothing."""
    cpu = host.cpu
    return min(threads, cpu.physical_cores) + HT_GAIN * max(0, min(threads, cpu.logical_cores) - cpu.physical_cores)


def numa_factor(host: HostFigures, pools: int) -> float:
    nodes = host.cpu.numa_nodes
    if nodes <= 1 or pools >= nodes:
        return 1.0
    return NUMA_SPLIT + (1 - NUMA_SPLIT) * (pools - 1) / (nodes - 1)


def oversubscription_penalty(host: HostFigures, threads: int) -> float:
    over = max(0.0, (threads + RESERVED_CPUS) / host.cpu.logical_cores - 1)
    return (1 + OVERSUBSCRIPTION * over) ** 2


def oversubscription_note(host: HostFigures, threads: int) -> str | None:
    """What an operator must read first when the workers outnumber the CPUs, or None when they fit."""
    logical = host.cpu.logical_cores
    if threads + RESERVED_CPUS <= logical:
        return None
    fit = max(1, min(host.cpu.physical_cores, logical - RESERVED_CPUS))
    return (f"--kt-cpuinfer {threads} and the engine's {RESERVED_CPUS} own threads want more than the {logical} "
            f"logical CPUs here: the workers take CPUs from each other at every layer's barrier "
            f"(ktransformers#726: 30 threads on 20 CPUs decoded under 0.1 tok/s, 18 threads 2.9 tok/s); "
            f"try --kt-cpuinfer {fit}")


def bandwidth_share(host: HostFigures, knobs: CpuKnobs) -> float:
    """The share of the host's read bandwidth the CPU experts reach with these knobs (0..1)."""
    saturation = host.memory.read_gbs / PER_THREAD_GBS
    use = min(1.0, effective_threads(host, knobs.threads) / saturation)
    sync = 1 + SYNC_PER_THREAD * knobs.threads / max(1, knobs.pools)
    return use * numa_factor(host, knobs.pools) / (sync * oversubscription_penalty(host, knobs.threads))


def cpu_expert_bytes(shape: ModelShape, quant: str | None) -> float:
    """One routed expert's weights as kt-kernel holds them in RAM."""
    fp = model_footprint(shape, quant)
    return fp.params_per_expert * CPU_BYTES_PER_PARAM.get((quant or shape.quant_method or "bf16").lower(), 2.0)


def gpu_active_bytes(shape: ModelShape, quant: str | None) -> float:
    """What the GPUs read per decoded token besides routed experts: attention, shared experts, dense layers,
    the output head (the embedding is a lookup)."""
    fp = model_footprint(shape, quant)
    head = shape.vocab_size * shape.hidden_size * 2.0
    return fp.non_expert_bytes - (head if shape.tie_word_embeddings else 2 * head) + head


@dataclass(frozen=True)
class HostRates:
    """The hardware's side of a launch: what its CPU and GPUs stream and compute with these knobs."""

    cpu_read_gbs: float  # the host's measured read bandwidth
    cpu_share: float  # bandwidth_share of these knobs
    gpu_read_gbs: float  # summed over the tensor-parallel GPUs
    pcie_gbs: float  # summed over the tensor-parallel GPUs' links
    cpu_prefill_tflops: float
    gpu_prefill_tflops: float  # summed, at GPU_MFU

    @property
    def cpu_effective_gbs(self) -> float:
        return self.cpu_read_gbs * self.cpu_share


def _gpu_figure(host: HostFigures, tp: int) -> tuple[float, float]:
    """Summed memory bandwidth and FP8 TFLOPS of the first `tp` GPUs (an unknown card's when none is listed)."""
    gpus = host.gpus[:tp]
    if not gpus:
        unknown = known_gpu("")
        return unknown.bandwidth_gbs * tp, unknown.fp8_tflops * tp
    return (sum(g.bandwidth_gbs or known_gpu(g.name).bandwidth_gbs for g in gpus),
            sum(known_gpu(g.name).fp8_tflops for g in gpus))


def host_rates(host: HostFigures, knobs: CpuKnobs, tp: int) -> HostRates:
    gpu_bw, gpu_tflops = _gpu_figure(host, tp)
    links = host.gpus[:tp]
    pcie = sum(PCIE_GBS_PER_LANE.get(g.pcie_gen or 0, 0.0) * (g.pcie_width or 0) or DEFAULT_PCIE_GBS
               for g in links) if links else DEFAULT_PCIE_GBS * tp
    gflops = PREFILL_GFLOPS_PER_THREAD.get(host.cpu.kt_backend, DEFAULT_PREFILL_GFLOPS)
    cpu_tflops = effective_threads(host, knobs.threads) * gflops / 1000 / oversubscription_penalty(host, knobs.threads)
    return HostRates(host.memory.read_gbs, bandwidth_share(host, knobs), gpu_bw, pcie, cpu_tflops,
                     gpu_tflops * GPU_MFU)


def cpu_knobs(settings: LaunchSettings, host: HostFigures) -> CpuKnobs:
    """The settings' CPU knobs; an unset --kt-cpuinfer is what kt-kernel takes then (every logical CPU)."""
    return CpuKnobs(settings.kt_cpuinfer or host.cpu.logical_cores, max(1, settings.kt_threadpool_count or 1))


def launch_rates(settings: LaunchSettings, host: HostFigures) -> HostRates:
    return host_rates(host, cpu_knobs(settings, host), settings.tp_size)


def all_cpu_decode_tps(shape: ModelShape, quant: str | None, rates: HostRates) -> float:
    """One request alone with every routed expert on the CPU: the reference of `launch.decode_speed`."""
    cpu_bytes = shape.experts_per_token * shape.num_moe_layers * cpu_expert_bytes(shape, quant)
    seconds = cpu_bytes / (rates.cpu_effective_gbs * GB) + gpu_active_bytes(shape, quant) / (rates.gpu_read_gbs * GB)
    return 1.0 / seconds


def cpu_prefill_tps(shape: ModelShape, rates: HostRates) -> float:
    """Prompt tokens a second with the routed experts computed on the CPU (prompts under the threshold)."""
    flops = 2.0 * shape.experts_per_token * shape.num_moe_layers * model_footprint(shape).params_per_expert
    return rates.cpu_prefill_tflops * 1e12 / flops


def gpu_prefill_tps(shape: ModelShape, quant: str | None, rates: HostRates, chunk: int) -> float:
    """The layerwise full-GPU prefill: every chunk streams each MoE layer's experts over PCIe, then computes."""
    fp = model_footprint(shape, quant)
    stream_s = fp.layer_all_experts_bytes * shape.num_moe_layers / (rates.pcie_gbs * GB)
    active = fp.non_expert_params + (shape.experts_per_token * shape.num_moe_layers * fp.params_per_expert)
    compute_s_per_token = 2.0 * active / (rates.gpu_prefill_tflops * 1e12)
    return 1.0 / (stream_s / max(1, chunk) + compute_s_per_token)


def best_threshold(shape: ModelShape, quant: str | None, rates: HostRates, chunk: int) -> int:
    """The prompt length from which the layerwise GPU prefill beats the CPU one (its first chunk streams
    every expert, so short prompts are faster on the CPU)."""
    cpu, gpu = cpu_prefill_tps(shape, rates), gpu_prefill_tps(shape, quant, rates, chunk)
    if gpu <= cpu:
        return NEVER
    fp = model_footprint(shape, quant)
    stream_s = fp.layer_all_experts_bytes * shape.num_moe_layers / (rates.pcie_gbs * GB)
    # one chunk's stream against the CPU's per-token time saved: stream_s = n * (1/cpu - compute per token)
    per_token_gain = 1 / cpu - (1 / gpu - stream_s / max(1, chunk))
    return min(NEVER, max(1, math.ceil(stream_s / per_token_gain))) if per_token_gain > 0 else NEVER
