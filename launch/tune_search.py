"""What the tuner tries, and in which order: candidate values of each KT knob for a host, and the speed the
roofline predicts for each (m3ui's one speed model, launch/roofline.py).

Pure: no process is launched here. The runner (launch/tune.py) measures what this module proposes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from launch.host_file import HostFigures
from launch.host_speed import NEVER, PER_THREAD_GBS, RESERVED_CPUS, best_threshold, launch_rates
from launch.model_config import ModelShape
from launch.roofline import prefill_tps, roofline
from launch.settings import LaunchSettings
from launch.sizing import GB, max_gpu_experts

DECODE_KNOBS = ("kt_cpuinfer", "kt_threadpool_count", "kt_num_gpu_experts")
PREFILL_KNOBS = ("chunked_prefill_size", "kt_gpu_prefill_token_threshold")
TUNABLE = DECODE_KNOBS + PREFILL_KNOBS
TRIAL_PROMPTS = (1024, 8192)  # the prompt lengths a trial's prefill figure averages (geometric mean)
CHUNK_SIZES = (4096, 8192, 16384)


@dataclass(frozen=True)
class Prediction:
    decode: float  # one request alone, tok/s
    prefill: float  # geometric mean over TRIAL_PROMPTS, tok/s


@dataclass(frozen=True)
class Candidate:
    settings: LaunchSettings
    changes: tuple[tuple[str, Any], ...]  # (knob, value) against the settings it was derived from
    predicted: Prediction


def knob_values(settings: LaunchSettings, knobs: tuple[str, ...]) -> dict[str, Any]:
    return {k: getattr(settings, k) for k in knobs}


def predict(shape: ModelShape, settings: LaunchSettings, host: HostFigures) -> Prediction:
    rates = launch_rates(settings, host)
    prefill = math.prod(prefill_tps(shape, settings, rates, n) for n in TRIAL_PROMPTS) ** (1 / len(TRIAL_PROMPTS))
    return Prediction(roofline(shape, settings, host).decode_tok_s["1"], prefill)


def gpu_expert_ceiling(shape: ModelShape, settings: LaunchSettings, host: HostFigures) -> int | None:
    """The most GPU experts per layer that leave a KV pool on every GPU (None: the host lists no GPU)."""
    if not host.gpus:
        return None
    gpu_bytes = min(g.memory_gb for g in host.gpus) * GB
    return max_gpu_experts(shape, tp=settings.tp_size, gpu_bytes=gpu_bytes, mem_fraction=settings.mem_fraction_static,
                           quant=settings.quantization)


def candidate_values(knob: str, shape: ModelShape, settings: LaunchSettings, host: HostFigures) -> list[Any]:
    """Values worth measuring for one knob on this host, the current one excluded."""
    cpu = host.cpu
    values: list[Any]
    if knob == "kt_cpuinfer":
        saturation = host.memory.read_gbs / PER_THREAD_GBS  # threads that saturate the memory (host_speed)
        values = [cpu.physical_cores, cpu.physical_cores - 2, cpu.logical_cores - RESERVED_CPUS,
                  round(saturation), cpu.physical_cores * 3 // 4, cpu.physical_cores // 2]
        values = [max(1, min(v, cpu.logical_cores)) for v in values]
    elif knob == "kt_threadpool_count":
        values = [cpu.numa_nodes, 1, 2]
    elif knob == "kt_num_gpu_experts":
        ceiling = gpu_expert_ceiling(shape, settings, host)
        values = [] if ceiling is None else [ceiling, ceiling * 3 // 4, ceiling // 2]
    elif knob == "chunked_prefill_size":
        values = list(CHUNK_SIZES)
    elif knob == "kt_gpu_prefill_token_threshold":
        rates = launch_rates(settings, host)
        chunk = settings.chunked_prefill_size or CHUNK_SIZES[1]
        crossover = best_threshold(shape, settings.quantization, rates, chunk)
        values = [None if crossover >= NEVER else crossover, 500, 2048]
    else:
        raise ValueError(f"{knob} is not a tunable knob; choose from {', '.join(TUNABLE)}")
    current = getattr(settings, knob)
    return sorted({v for v in values if v != current}, key=lambda v: (v is None, v or 0))


def pool_candidates(shape: ModelShape, settings: LaunchSettings, host: HostFigures) -> tuple[tuple[int, int], list[int],
                                                                                        list[int]]:
    """The start (kt_cpuinfer, kt_threadpool_count) and the values of each worth timing with kt-kernel's own
    kernel (launch/microbench.py): the same candidates the relaunches would try."""
    start = (settings.kt_cpuinfer or host.cpu.physical_cores, settings.kt_threadpool_count or 1)
    return (start, candidate_values("kt_cpuinfer", shape, settings, host),
            candidate_values("kt_threadpool_count", shape, settings, host))


def variations(shape: ModelShape, base: LaunchSettings, host: HostFigures, knobs: tuple[str, ...]) -> list[Candidate]:
    """Every single-knob change of `base`, best predicted first (decode knobs by decode, prefill knobs by
    prefill)."""
    out = []
    for knob in knobs:
        for value in candidate_values(knob, shape, base, host):
            settings = base.replace(**{knob: value})
            out.append(Candidate(settings, ((knob, value),), predict(shape, settings, host)))
    reference = predict(shape, base, host)
    return sorted(out, key=lambda c: -predicted_gain(c, reference))


def predicted_gain(candidate: Candidate, reference: Prediction) -> float:
    """The share a candidate should add to what it is judged on (decode; prefill for the prefill knobs, as long
    as decode does not drop)."""
    knob = candidate.changes[0][0] if candidate.changes else DECODE_KNOBS[0]
    decode_gain = candidate.predicted.decode / reference.decode - 1
    if knob in DECODE_KNOBS or len(candidate.changes) > 1:
        return decode_gain
    return candidate.predicted.prefill / reference.prefill - 1 if decode_gain > -0.01 else decode_gain


def model_optimum(shape: ModelShape, base: LaunchSettings, host: HostFigures, knobs: tuple[str, ...]) -> Candidate:
    """Each knob in turn set to its best predicted value (two rounds, since the knobs interact): the point the
    roofline expects to be fastest, measured first."""
    settings = base
    for _ in range(2):
        for knob in knobs:
            reference = predict(shape, settings, host)
            best = max(variations(shape, settings, host, (knob,)), key=lambda c: predicted_gain(c, reference),
                       default=None)
            if best is not None and predicted_gain(best, reference) > 0:
                settings = best.settings
    changes = tuple((k, getattr(settings, k)) for k in knobs if getattr(settings, k) != getattr(base, k))
    return Candidate(settings, changes, predict(shape, settings, host))
