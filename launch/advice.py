"""Sizing advice: recommended KT values, each with the numbers behind it and a sentence of why."""

from __future__ import annotations

from dataclasses import dataclass

from launch.model_config import ModelShape
from launch.sizing import (
    DEFAULT_CONTEXT_BUDGET,
    GB,
    band_for_tp,
    default_mem_fraction,
    kv_bytes_per_token,
    max_gpu_experts,
    memory_plan,
    model_footprint,
)


@dataclass(frozen=True)
class Figure:
    label: str
    value: str


@dataclass(frozen=True)
class Advice:
    field: str  # LaunchSettings field name
    value: int | float
    why: str
    breakdown: tuple[Figure, ...]


@dataclass(frozen=True)
class SizingInputs:
    tp: int
    gpu_bytes: float
    mem_fraction: float | None
    physical_cores: int | None
    numa_nodes: int | None
    ram_bytes: float | None
    context_tokens: int = DEFAULT_CONTEXT_BUDGET
    prefill_threshold_on: bool = True


def _gb(value: float) -> str:
    return f"{value / GB:.2f} GB"


def advise(shape: ModelShape, inputs: SizingInputs) -> tuple[Advice, ...]:
    """Advice for --kt-num-gpu-experts, --kt-cpuinfer and --kt-threadpool-count."""
    advice = [_gpu_experts_advice(shape, inputs)]
    if inputs.physical_cores:
        advice.append(Advice(
            "kt_cpuinfer", inputs.physical_cores,
            "kt-kernel runs one inference thread per physical core; hyper-threads share the AMX/AVX units "
            "and slow it down.",
            (Figure("physical cores", str(inputs.physical_cores)),),
        ))
    if inputs.numa_nodes:
        advice.append(Advice(
            "kt_threadpool_count", inputs.numa_nodes,
            "One thread pool per NUMA node keeps each pool's expert weights in its local memory.",
            (Figure("NUMA nodes", str(inputs.numa_nodes)),),
        ))
    return tuple(advice)


def _gpus(tp: int) -> str:
    return "one GPU" if tp == 1 else f"{tp} GPUs (TP{tp})"


def _gpu_experts_advice(shape: ModelShape, inputs: SizingInputs) -> Advice:
    fp = model_footprint(shape)
    fraction = inputs.mem_fraction if inputs.mem_fraction is not None else default_mem_fraction(inputs.tp)
    ceiling = max_gpu_experts(shape, tp=inputs.tp, gpu_bytes=inputs.gpu_bytes, mem_fraction=fraction,
                              context_tokens=inputs.context_tokens)
    lo, hi = band_for_tp(inputs.tp)
    value = min(hi, ceiling)
    plan = memory_plan(shape, tp=inputs.tp, gpu_bytes=inputs.gpu_bytes, mem_fraction=fraction,
                       gpu_experts=value, prefill_threshold_on=inputs.prefill_threshold_on)
    usual = f"MiniMax-M3's reference deployments on {_gpus(inputs.tp)} keep {lo}-{hi} of each MoE layer's experts"
    room = (f"room for a {inputs.context_tokens:,}-token KV cache (the GPU memory that holds the conversations) "
            "on each GPU")
    if ceiling >= lo:
        why = (f"{usual} on the GPU (more there means less work for the CPU, so faster answers). {value} is the most "
               f"in that range that fits: at most {ceiling} fit while leaving {room}.")
    else:
        why = (f"Only {ceiling} experts per layer fit on the GPU while leaving {room}; {usual} there, so answers "
               "will be slower than theirs. Give the engine more of each GPU (raise --mem-fraction-static), add "
               "GPUs (a larger --tp-size), or accept a shorter context.")
    cpu_ram = fp.cpu_expert_bytes
    ram_note = _gb(inputs.ram_bytes) if inputs.ram_bytes else "unknown"
    breakdown = (
        Figure("bytes per routed expert", f"{fp.bytes_per_expert / 1e6:.1f} MB"),
        Figure("one GPU-expert unit (x MoE layers) across the TP group", _gb(fp.gpu_expert_unit_bytes)),
        Figure("  per GPU", _gb(fp.gpu_expert_unit_bytes / inputs.tp)),
        Figure("non-expert weights per GPU", _gb(plan.non_expert_bytes)),
        Figure(f"GPU experts per GPU ({value}/layer)", _gb(plan.gpu_expert_bytes)),
        Figure("static budget per GPU (mem-fraction x VRAM)", f"{fraction:.2f} x {_gb(inputs.gpu_bytes)} = "
               f"{_gb(plan.static_budget_bytes)}"),
        Figure("KV cache per token per GPU", f"{kv_bytes_per_token(shape, inputs.tp) / 1e3:.1f} KB"),
        Figure("KV pool per GPU", f"{_gb(plan.kv_pool_bytes)} ({plan.kv_tokens:,} tokens)"),
        Figure("layerwise-prefill buffer per GPU", _gb(plan.prefill_buffer_bytes)),
        Figure("outside the static pool per GPU", _gb(plan.outside_pool_bytes)),
        Figure("largest --kt-num-gpu-experts that fits", str(ceiling)),
        Figure("CPU RAM for all routed experts", f"{_gb(cpu_ram)} (host has {ram_note})"),
    )
    return Advice("kt_num_gpu_experts", value, why, breakdown)


def format_advice(advice: tuple[Advice, ...]) -> str:
    lines: list[str] = []
    for item in advice:
        lines.append(f"--{item.field.replace('_', '-')} {item.value}")
        lines.append(f"  why: {item.why}")
        lines.extend(f"    {fig.label}: {fig.value}" for fig in item.breakdown)
    return "\n".join(lines)
