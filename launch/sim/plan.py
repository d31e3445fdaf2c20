"""What the simulated engine would allocate at start: the launch core's sizing applied to simulated hardware.

The numbers an operator sees in the startup log and in /server_info (KV tokens, max_running_requests,
chunked prefill size, ...) follow sglang-kt 0.7.2's own derivations (server_args.py, model_runner*.py),
fed by `launch.sizing.memory_plan`, the same model the admin panel's advice uses.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from launch.model_config import BUNDLED_M3_CONFIG, ModelShape
from launch.placement import kt_active
from launch.settings import LaunchSettings
from launch.sim.args import SimArgs
from launch.sim.config import SimConfig
from launch.sizing import CPU_RAM_HEADROOM, MemoryPlan, gpu_experts_per_layer, memory_plan, model_footprint

GIB = 1 << 30
MAX_PREFILL_TOKENS = 16384  # ServerArgs.max_prefill_tokens
CUDA_CONTEXT_BYTES = 0.6 * GIB  # what "Init torch distributed" takes before any weight
# server_args._handle_gpu_memory_settings: (below this many MiB of VRAM, chunked_prefill_size, graph bs TP<4, TP>=4)
_GPU_MEMORY_BANDS = (
    (20 * 1024, 2048, 8, 8), (35 * 1024, 2048, 24, 80), (60 * 1024, 4096, 32, 160),
    (90 * 1024, 8192, 256, 512), (160 * 1024, 8192, 256, 512),
)


@dataclass(frozen=True)
class ServingPlan:
    settings: LaunchSettings
    shape: ModelShape
    hardware: SimConfig
    memory: MemoryPlan
    model_path: str
    architecture: str  # config.json's architectures[0]: the class name the load log reports
    served_model_name: str
    kt_active: bool
    context_len: int
    context_length_flag: int | None  # --context-length as given; sglang checks max_tokens up front only then
    chunked_prefill_size: int
    cuda_graph_max_bs: int
    graph_bytes: float  # per GPU, taken by CUDA graph capture
    max_total_num_tokens: int
    max_running_requests: int
    max_req_input_len: int
    cpu_ram_needed_bytes: float
    server_flags: frozenset[str] = frozenset()  # on/off sglang flags given outside the settings table, by dest

    @property
    def tp(self) -> int:
        return self.settings.tp_size

    def avail_gib(self, used_bytes: float) -> float:
        """What `get_available_gpu_memory` would report (GiB) with `used_bytes` taken on one GPU."""
        return max(0.0, self.hardware.gpu_bytes - CUDA_CONTEXT_BYTES - used_bytes) / GIB


def _gpu_memory_defaults(gpu_bytes: float, tp: int) -> tuple[int, int]:
    mib = gpu_bytes / (1 << 20)
    for limit, chunk, bs_small, bs_large in _GPU_MEMORY_BANDS:
        if mib < limit:
            return chunk, bs_small if tp < 4 else bs_large
    return 16384, 512


def _architecture(config_dir: Path) -> str:
    try:
        raw = json.loads((config_dir / "config.json").read_text(encoding="utf-8"))
        return str(raw["architectures"][0])
    except (OSError, ValueError, KeyError, IndexError, TypeError):
        return "MiniMaxM3ForCausalLM"


def build_plan(args: SimArgs, shape: ModelShape, hardware: SimConfig, config_dir: Path) -> ServingPlan:
    """`config_dir` is the folder whose config.json gave `shape`."""
    settings = args.settings
    tp = settings.tp_size
    kt_on = kt_active(settings)
    # Without KT every routed expert is a GPU expert: the whole model has to fit in VRAM.
    gpu_experts = (gpu_experts_per_layer(settings.kt_num_gpu_experts, settings.kt_gpu_experts_ratio, shape)
                   if kt_on else shape.num_routed_experts)
    memory = memory_plan(
        shape, tp=tp, gpu_bytes=hardware.gpu_bytes, mem_fraction=settings.mem_fraction_static,
        gpu_experts=gpu_experts, prefill_threshold_on=settings.kt_gpu_prefill_token_threshold is not None,
        quant=settings.quantization,
    )
    chunk_default, graph_bs_default = _gpu_memory_defaults(hardware.gpu_bytes, tp)
    graph_bs = settings.cuda_graph_max_bs or graph_bs_default
    context_arg = args.passthrough_value("context_length")
    context_flag = int(context_arg[0]) if context_arg else None
    context_len = context_flag or shape.max_positions
    kv_tokens = memory.kv_tokens
    if settings.max_total_tokens is not None:
        kv_tokens = min(kv_tokens, settings.max_total_tokens)
    # model_runner: the request pool holds 2048..4096 requests unless --max-running-requests says otherwise.
    pool = settings.max_running_requests or min(max(int(kv_tokens / max(context_len, 1) * 512), 2048), 4096)
    running = min(kv_tokens // 2 if settings.max_running_requests is None else settings.max_running_requests, pool)
    model_path = settings.model_path or str(BUNDLED_M3_CONFIG.parent)
    return ServingPlan(
        settings=settings, shape=shape, hardware=hardware, memory=memory, model_path=model_path,
        architecture=_architecture(config_dir),
        served_model_name=settings.served_model_name or model_path, kt_active=kt_on,
        context_len=context_len, context_length_flag=context_flag,
        chunked_prefill_size=settings.chunked_prefill_size or chunk_default, cuda_graph_max_bs=graph_bs,
        graph_bytes=(0.25 + 0.004 * graph_bs) * GIB,
        max_total_num_tokens=kv_tokens, max_running_requests=max(0, running),
        max_req_input_len=min(context_len - 1, kv_tokens - 1) - 5,
        cpu_ram_needed_bytes=(model_footprint(shape, settings.quantization).cpu_expert_bytes * CPU_RAM_HEADROOM
                              if kt_on else 0.0),
        server_flags=frozenset(dest for dest, words in args.passthrough if not words),
    )
