"""The speed a launch can reach on a host: decode tok/s with 1 and N requests and prefill tok/s, with where the
bytes of a token go and the bandwidth each part uses.

It reads the model's config.json (layers, experts, top-k, expert bytes at the quantization), the settings (TP,
GPU experts and their placement, --kt-cpuinfer, thread pools, chunked prefill, the GPU prefill threshold) and
the host's figures (the probe's JSON), and applies m3ui's one speed model: `launch.host_speed` for the all-CPU
decode step and prefill rates, `launch.decode_speed` for what GPU experts and batching change. The simulated
engine plays the same model (M3UI_SIM_HOST), so on the sim a benchmark lands at ~100% of this figure; on a
real host the share says how far the engine is from what its memory allows.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from launch.decode_speed import batch_decode_tps, decode_tps
from launch.host_file import HostFigures
from launch.host_speed import (
    DEFAULT_CHUNK,
    PREFILL_OVERHEAD_S,
    CpuKnobs,
    HostRates,
    all_cpu_decode_tps,
    cpu_expert_bytes,
    cpu_knobs,
    cpu_prefill_tps,
    gpu_active_bytes,
    gpu_prefill_tps,
    launch_rates,
    oversubscription_note,
)
from launch.model_config import ModelShape
from launch.placement import gpu_expert_mask, kt_active
from launch.settings import LaunchSettings
from launch.sizing import GB, model_footprint

CONCURRENCY = (1, 4, 16)
PROMPT_LENGTHS = (1024, 8192, 32768)


@dataclass(frozen=True)
class Roofline:
    decode_tok_s: dict[str, float]  # by concurrency ("1", "4", "16"): all requests together
    prefill_tok_s: dict[str, float]  # by prompt length ("1024", ...)
    gpu_experts_per_layer: float
    gpu_hit_share: float  # share of routed activations on GPU experts (uniform routing)
    cpu_bytes_per_token: float
    gpu_bytes_per_token: float
    rates: HostRates
    knobs: CpuKnobs
    warnings: tuple[str, ...] = ()  # what costs most of the ceiling and has a plain fix

    def to_json(self) -> dict[str, object]:
        r = self.rates
        return {
            "decode_tok_s": self.decode_tok_s, "prefill_tok_s": self.prefill_tok_s,
            "gpu_experts_per_layer": self.gpu_experts_per_layer, "gpu_hit_share": self.gpu_hit_share,
            "cpu_bytes_per_token": self.cpu_bytes_per_token, "gpu_bytes_per_token": self.gpu_bytes_per_token,
            "cpu_read_gbs": r.cpu_read_gbs, "cpu_bandwidth_share": r.cpu_share,
            "cpu_effective_gbs": r.cpu_effective_gbs, "gpu_read_gbs": r.gpu_read_gbs, "pcie_gbs": r.pcie_gbs,
            "kt_cpuinfer": self.knobs.threads, "kt_threadpool_count": self.knobs.pools,
            "warnings": list(self.warnings),
        }


def _layer_misses(shape: ModelShape, settings: LaunchSettings) -> np.ndarray:
    """Per MoE layer: the share of activations on CPU experts when routing is near-balanced (mixed traffic)."""
    if not kt_active(settings):
        return np.zeros(shape.num_moe_layers)
    mask = gpu_expert_mask(shape, settings)[list(shape.moe_layer_ids)]
    return 1.0 - mask.mean(axis=1)


def prefill_tps(shape: ModelShape, settings: LaunchSettings, rates: HostRates, prompt_tokens: int) -> float:
    """The rate a prompt of `prompt_tokens` reaches, its fixed overhead included (as the sim paces it)."""
    rate = prefill_rate(shape, settings, rates, prompt_tokens)
    return prompt_tokens / (PREFILL_OVERHEAD_S + prompt_tokens / rate)


def prefill_rate(shape: ModelShape, settings: LaunchSettings, rates: HostRates, prompt_tokens: int) -> float:
    """Tokens a second of the prefill path a prompt takes: layerwise GPU above the threshold, else CPU experts."""
    threshold = settings.kt_gpu_prefill_token_threshold
    if threshold is not None and prompt_tokens > threshold:
        return gpu_prefill_tps(shape, settings.quantization, rates, settings.chunked_prefill_size or DEFAULT_CHUNK)
    return cpu_prefill_tps(shape, rates)


def roofline(shape: ModelShape, settings: LaunchSettings, host: HostFigures) -> Roofline:
    rates = launch_rates(settings, host)
    misses = _layer_misses(shape, settings)
    quant = settings.quantization
    alone = decode_tps(all_cpu_decode_tps(shape, quant, rates), misses, shape.experts_per_token)
    miss = float(misses.mean()) if misses.size else 0.0
    expert_reads = shape.experts_per_token * shape.num_moe_layers
    fp = model_footprint(shape, quant)
    knobs = cpu_knobs(settings, host)
    note = oversubscription_note(host, knobs.threads)
    return Roofline(
        decode_tok_s={str(n): batch_decode_tps(alone, n) for n in CONCURRENCY},
        prefill_tok_s={str(n): prefill_tps(shape, settings, rates, n) for n in PROMPT_LENGTHS},
        gpu_experts_per_layer=shape.num_routed_experts * (1 - miss),
        gpu_hit_share=1 - miss,
        cpu_bytes_per_token=expert_reads * miss * cpu_expert_bytes(shape, quant),
        # summed over the TP GPUs, which split it; their bandwidths add up the same way
        gpu_bytes_per_token=gpu_active_bytes(shape, quant) + expert_reads * (1 - miss) * fp.bytes_per_expert,
        rates=rates, knobs=knobs, warnings=(note,) if note else (),
    )


def format_roofline(result: Roofline, settings: LaunchSettings) -> str:
    r = result.rates
    # three significant figures: an oversubscribed host's ceiling is a fraction of a token a second, not "0.0"
    decode = ", ".join(f"{n} req {v:.3g}" for n, v in result.decode_tok_s.items())
    prefill = ", ".join(f"{int(n) // 1024}K {v:.0f}" for n, v in result.prefill_tok_s.items())
    cpu_s = result.cpu_bytes_per_token / (r.cpu_effective_gbs * GB)
    gpu_s = result.gpu_bytes_per_token / (r.gpu_read_gbs * GB)
    return "\n".join([
        *(f"!!  {warning}" for warning in result.warnings),
        f"decode ceiling, tok/s (all requests together): {decode}",
        f"prefill ceiling, tok/s by prompt length: {prefill}",
        f"  GPU experts per layer: {result.gpu_experts_per_layer:.1f} of the routed ones; "
        f"{result.gpu_hit_share:.0%} of the activations hit them (near-balanced routing)",
        f"  CPU: {result.cpu_bytes_per_token / GB:.2f} GB per token at {r.cpu_effective_gbs:.3g} GB/s "
        f"({r.cpu_share:.2g} of {r.cpu_read_gbs:.0f} GB/s measured, with --kt-cpuinfer {result.knobs.threads} "
        f"in {result.knobs.pools} pool(s)) = {cpu_s * 1000:.4g} ms",
        f"  GPU: {result.gpu_bytes_per_token / GB:.2f} GB per token at {r.gpu_read_gbs:.0f} GB/s "
        f"(TP{settings.tp_size}) = {gpu_s * 1000:.2f} ms",
        f"  prefill: CPU experts {r.cpu_prefill_tflops:.1f} TFLOP/s; layerwise GPU prefill streams the experts "
        f"over {r.pcie_gbs:.0f} GB/s of PCIe per {settings.chunked_prefill_size or DEFAULT_CHUNK}-token chunk"
        + (f" above {settings.kt_gpu_prefill_token_threshold} tokens" if settings.kt_gpu_prefill_token_threshold
           else " (off: no --kt-gpu-prefill-token-threshold)"),
    ])
