"""The reference deployment's two commands (checked against tests/data/seed_presets.md) as settings."""

from __future__ import annotations

from collections.abc import Callable

from launch.settings import LaunchSettings

PLACEHOLDER_PATH = "/path/to/MiniMax-M3-MXFP8"


def tp8_hybrid(model_path: str = PLACEHOLDER_PATH, kt_weight_path: str | None = None) -> LaunchSettings:
    """Hybrid on 8x H20/H100 (TP8): 40 GPU experts per layer, the rest on 64 CPU threads."""
    return LaunchSettings(
        model_path=model_path,
        kt_weight_path=kt_weight_path or model_path,
        kt_method="MXFP8",
        kt_cpuinfer=64,
        kt_threadpool_count=2,
        kt_num_gpu_experts=40,
        kt_gpu_prefill_token_threshold=500,
        tp_size=8,
        quantization="mxfp8",
        moe_runner_backend="triton",
        trust_remote_code=True,
        host="0.0.0.0",
        port=8000,
        mem_fraction_static=0.55,
        chunked_prefill_size=8192,
        cuda_graph_max_bs=1,
        tool_call_parser="minimax-m3",
        reasoning_parser="minimax-m3",
        served_model_name="MiniMax-M3",
    )


def single_gpu(model_path: str = PLACEHOLDER_PATH, kt_weight_path: str | None = None) -> LaunchSettings:
    """Hybrid on a single 96 GB Hopper GPU: 4 GPU experts per layer."""
    return tp8_hybrid(model_path, kt_weight_path).replace(
        kt_num_gpu_experts=4, tp_size=1, mem_fraction_static=0.85, chunked_prefill_size=4096,
    )


PRESETS: dict[str, Callable[..., LaunchSettings]] = {"tp8-hybrid": tp8_hybrid, "single-gpu": single_gpu}
PRESET_TITLES = {"tp8-hybrid": "hybrid, 8x H20/H100 (TP8)", "single-gpu": "hybrid, single 96 GB Hopper GPU"}


def preset(name: str, model_path: str = PLACEHOLDER_PATH, kt_weight_path: str | None = None) -> LaunchSettings:
    try:
        factory = PRESETS[name]
    except KeyError:
        raise ValueError(f"unknown preset {name!r}; choose one of {', '.join(PRESETS)}") from None
    return factory(model_path, kt_weight_path)


def with_expert_monitoring(settings: LaunchSettings, buffer_size: int = 1000) -> LaunchSettings:
    """Turn on what the expert-utilization panel needs: the `stat` recorder, GPU-residency masks and
    /metrics. The buffer counts forward passes (batched requests share one): a KT hybrid runs well under
    200 a second, so 1000 cannot wrap between dumps a few seconds apart; a dump is 1000 x layers x
    experts x 4 B (31 MB for M3), which is also what the panel reads per dump."""
    return settings.replace(
        expert_distribution_recorder_mode="stat",
        expert_distribution_recorder_buffer_size=buffer_size,
        record_kt_gpu_expert_distribution=True,
        enable_metrics=True,
    )
