"""Memory model of a KT hybrid deployment, and the advice derived from it.

All sizes are decimal bytes (GB = 1e9), as the contract's figures are. The model follows sglang's own
arithmetic: the KV pool is what is left of `mem_fraction_static x VRAM` after the weights
(`profile_max_num_token`), and whatever lies outside that fraction must hold activations, CUDA graphs and,
when `--kt-gpu-prefill-token-threshold` is on, one MoE layer's full expert set for the layerwise prefill.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from launch.model_config import ModelShape

GB = 1e9

# Bytes per weight on the GPU by checkpoint quantization: payload + block scales.
# MXFP8: one e4m3 byte per weight + one ue8m0 byte per 1x32 block.
GPU_BYTES_PER_PARAM: dict[str, float] = {
    "mxfp8": 1 + 1 / 32,
    "fp8": 1 + 4 / (128 * 128),
    "mxfp4": 0.5 + 1 / 32,
    "nvfp4": 0.5 + 1 / 16 + 4 / (16 * 16),
    "awq": 0.5 + 4 / 128,
    "gptq": 0.5 + 4 / 128,
    "bf16": 2.0,
}
# kt-kernel keeps every routed expert in CPU RAM with the block scales widened to fp32.
CPU_BYTES_PER_PARAM: dict[str, float] = {
    "mxfp8": 1 + 4 / 32,
    "fp8": 1 + 4 / (128 * 128),
    "mxfp4": 0.5 + 4 / 32,
    "nvfp4": 0.5 + 4 / 16,
    "bf16": 2.0,
}
EMBEDDING_BYTES_PER_PARAM = 2.0  # embeddings and lm_head stay bf16 in quantized checkpoints
KV_BYTES_PER_VALUE = 2  # bf16 KV cache (sglang's default kv-cache-dtype for M3)
ACTIVATION_RESERVE = 3 * GB  # CUDA context, graphs, activations outside the static pool (per GPU)
DEFAULT_CONTEXT_BUDGET = 32_768  # tokens the KV pool should hold at least, for sizing advice
CPU_RAM_HEADROOM = 1.1  # OS, page cache and the engine's own process on top of the experts

# The seed's rule of thumb for --kt-num-gpu-experts per TP size (TP2 interpolated).
SEED_BANDS: dict[int, tuple[int, int]] = {1: (2, 8), 2: (8, 20), 4: (20, 40), 8: (40, 60)}
# The seed's --mem-fraction-static per TP size, used when the settings leave it unset.
SEED_MEM_FRACTION: dict[int, float] = {1: 0.85, 2: 0.7, 4: 0.6, 8: 0.55}


def band_for_tp(tp: int) -> tuple[int, int]:
    return SEED_BANDS[max(k for k in SEED_BANDS if k <= tp)] if tp >= 1 else SEED_BANDS[1]


def default_mem_fraction(tp: int) -> float:
    return SEED_MEM_FRACTION[max(k for k in SEED_MEM_FRACTION if k <= tp)] if tp >= 1 else 0.85


def _gpu_bytes_per_param(quant: str | None) -> float:
    return GPU_BYTES_PER_PARAM.get((quant or "bf16").lower(), 2.0)


@dataclass(frozen=True)
class ModelFootprint:
    """Sizes that depend on the model alone (not on the hardware or the TP split)."""

    params_per_expert: int
    bytes_per_expert: float
    gpu_expert_unit_bytes: float  # one unit of --kt-num-gpu-experts: one expert in every MoE layer
    non_expert_params: int
    non_expert_bytes: float
    cpu_expert_bytes: float  # every routed expert in CPU RAM, as kt-kernel holds them
    layer_all_experts_bytes: float  # one MoE layer's full expert set (the layerwise-prefill buffer)


def model_footprint(shape: ModelShape, quant: str | None = None) -> ModelFootprint:
    quant = (quant or shape.quant_method or "bf16").lower()
    per_expert = 3 * shape.hidden_size * shape.moe_intermediate_size
    gpu_bpp = _gpu_bytes_per_param(quant)
    embeddings = shape.vocab_size * shape.hidden_size * (1 if shape.tie_word_embeddings else 2)
    attention = shape.hidden_size * shape.head_dim * (2 * shape.num_heads + 2 * shape.num_kv_heads)
    shared = shape.num_shared_experts * per_expert * shape.num_moe_layers
    dense_layers = shape.num_layers - shape.num_moe_layers
    dense_mlp = 3 * shape.hidden_size * shape.dense_intermediate_size * dense_layers
    body = attention * shape.num_layers + shared + dense_mlp
    return ModelFootprint(
        params_per_expert=per_expert,
        bytes_per_expert=per_expert * gpu_bpp,
        gpu_expert_unit_bytes=per_expert * gpu_bpp * shape.num_moe_layers,
        non_expert_params=embeddings + body,
        non_expert_bytes=embeddings * EMBEDDING_BYTES_PER_PARAM + body * gpu_bpp,
        cpu_expert_bytes=per_expert * shape.num_routed_experts * shape.num_moe_layers
        * CPU_BYTES_PER_PARAM.get(quant, gpu_bpp),
        layer_all_experts_bytes=per_expert * gpu_bpp * shape.num_routed_experts,
    )


def kv_bytes_per_token(shape: ModelShape, tp: int) -> int:
    """KV cache per token on one GPU: K and V of the local KV heads (replicated when tp > heads),
    plus the sparse-attention index key, which every GPU keeps whole."""
    local_kv_heads = max(1, math.ceil(shape.num_kv_heads / tp))
    kv = 2 * local_kv_heads * shape.head_dim * shape.num_layers * KV_BYTES_PER_VALUE
    index = shape.sparse_index_dim * len(shape.sparse_layer_ids) * KV_BYTES_PER_VALUE
    return kv + index


def gpu_experts_per_layer(num_gpu_experts: int | None, ratio: float | None, shape: ModelShape) -> int:
    """The per-layer GPU expert count the engine will use (the ratio overrides the count)."""
    if ratio is not None:
        return min(shape.num_routed_experts, int(ratio * shape.num_routed_experts))
    return min(shape.num_routed_experts, num_gpu_experts or 0)


Verdict = Literal["ok", "oom_at_load", "kv_pool_too_small", "oom_outside_pool"]


@dataclass(frozen=True)
class MemoryPlan:
    """Per-GPU memory of one configuration, and what the engine would do with it."""

    tp: int
    gpu_bytes: float
    mem_fraction: float
    gpu_experts_per_layer: int
    non_expert_bytes: float
    gpu_expert_bytes: float
    static_budget_bytes: float
    kv_pool_bytes: float
    kv_bytes_per_token: int
    kv_tokens: int
    outside_pool_bytes: float
    prefill_buffer_bytes: float
    verdict: Verdict

    @property
    def weight_bytes(self) -> float:
        return self.non_expert_bytes + self.gpu_expert_bytes


def memory_plan(
    shape: ModelShape,
    *,
    tp: int,
    gpu_bytes: float,
    mem_fraction: float | None,
    gpu_experts: int,
    prefill_threshold_on: bool,
    quant: str | None = None,
) -> MemoryPlan:
    """Where each GPU's memory goes, and the first thing that fails if it does not fit."""
    fp = model_footprint(shape, quant)
    fraction = mem_fraction if mem_fraction is not None else default_mem_fraction(tp)
    non_expert = fp.non_expert_bytes / tp
    experts = gpu_experts * fp.gpu_expert_unit_bytes / tp
    static = fraction * gpu_bytes
    kv_pool = static - non_expert - experts
    per_token = kv_bytes_per_token(shape, tp)
    outside = (1 - fraction) * gpu_bytes
    prefill = fp.layer_all_experts_bytes / tp if prefill_threshold_on else 0.0
    if non_expert + experts + ACTIVATION_RESERVE > gpu_bytes:
        verdict: Verdict = "oom_at_load"
    elif kv_pool <= 0:
        verdict = "kv_pool_too_small"
    elif outside < prefill + ACTIVATION_RESERVE:
        verdict = "oom_outside_pool"
    else:
        verdict = "ok"
    return MemoryPlan(
        tp=tp, gpu_bytes=gpu_bytes, mem_fraction=fraction, gpu_experts_per_layer=gpu_experts,
        non_expert_bytes=non_expert, gpu_expert_bytes=experts, static_budget_bytes=static,
        kv_pool_bytes=max(0.0, kv_pool), kv_bytes_per_token=per_token,
        kv_tokens=max(0, int(kv_pool // per_token)), outside_pool_bytes=outside,
        prefill_buffer_bytes=prefill, verdict=verdict,
    )


def max_gpu_experts(
    shape: ModelShape, *, tp: int, gpu_bytes: float, mem_fraction: float | None,
    context_tokens: int = DEFAULT_CONTEXT_BUDGET, quant: str | None = None,
) -> int:
    """The most experts per layer that still leave a KV pool of `context_tokens` on every GPU."""
    fp = model_footprint(shape, quant)
    fraction = mem_fraction if mem_fraction is not None else default_mem_fraction(tp)
    room = fraction * gpu_bytes - fp.non_expert_bytes / tp - context_tokens * kv_bytes_per_token(shape, tp)
    room = min(room, gpu_bytes - ACTIVATION_RESERVE - fp.non_expert_bytes / tp)
    if room <= 0:
        return 0
    return max(0, min(shape.num_routed_experts, int(room // (fp.gpu_expert_unit_bytes / tp))))
