"""The engine's start, line by line as sglang-kt 0.7.2 logs it, and its failures at the point they happen.

Order (model_runner.py, memory_pool.py, scheduler.py): torch distributed init, weight load (kt-kernel prints
one line per MoE layer while it loads that layer's CPU experts), KV cache, CUDA graph capture, the
max_total_num_tokens summary. The HTTP server (and uvicorn's lines) come after, in `server.py`.
Pacing: the whole sequence takes a share of M3UI_SIM_STARTUP_SECONDS.
"""

from __future__ import annotations

import time

from launch.sim import failures
from launch.sim.logs import EngineLog
from launch.sim.plan import CUDA_CONTEXT_BYTES, GIB, MAX_PREFILL_TOKENS, ServingPlan
from launch.sizing import ACTIVATION_RESERVE

# Share of the startup time spent in each phase (the rest is the HTTP warmup).
INIT_SHARE, LOAD_SHARE, KV_SHARE, GRAPH_SHARE = 0.05, 0.55, 0.05, 0.1
WARMUP_SHARE = 1 - INIT_SHARE - LOAD_SHARE - KV_SHARE - GRAPH_SHARE
# Modes sglang's recorder factory knows (eplb/expert_distribution.py); anything else is a KeyError at start.
RECORDER_MODES = ("stat", "stat_approx", "per_pass", "per_token")


class _Pacer:
    def __init__(self, total_seconds: float) -> None:
        self.total = total_seconds

    def wait(self, share: float) -> float:
        seconds = self.total * share
        if seconds > 0:
            time.sleep(seconds)
        return seconds


# server_args.py: with --kt-weight-path the shared expert stays off the fused MoE (and out of the recorder's
# counts); the launcher warns before anything starts.
SHARED_EXPERTS_FUSION_OFF = ("KTransformers EP is enabled. --disable-shared-experts-fusion is automatically set "
                             "to prevent shared experts from being offloaded to CPU.")


def _kt_line(layer: int) -> str:
    # Deterministic per-layer timings in the shape kt-kernel prints (utils/amx.py NativeMoEWrapper.load_weights).
    parts = {"load_experts": 850 + 37 * (layer % 7), "prepare_tensors": 120 + 11 * (layer % 5), "build_ptrs": 0.4,
             "create_moe": 3.1, "cpp_load_weights": 410 + 23 * (layer % 3), "cleanup": 12.5}
    timings = ", ".join(f"{name}: {ms:.1f}ms" for name, ms in parts.items())
    return f"[NativeMoEWrapper Layer {layer}] {timings}, total: {sum(parts.values()):.1f}ms"


def _init_distributed(plan: ServingPlan, log: EngineLog, pacer: _Pacer) -> None:
    log.each_rank("Init torch distributed begin.")
    elapsed = pacer.wait(INIT_SHARE)
    if plan.hardware.gpu_count < plan.tp:
        exc = ("torch.AcceleratorError: CUDA error: invalid device ordinal\nCUDA kernel errors might be "
               "asynchronously reported at some other API call, so the stacktrace below might be incorrect.\n"
               "For debugging consider passing CUDA_LAUNCH_BLOCKING=1\n"
               "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.\n")
        frames = (failures.SCHEDULER_FRAME, (f"{failures.SGLANG_ROOT}/srt/model_executor/model_runner.py", 825,
                                              "init_torch_distributed", "torch.get_device_module(self.device)"
                                              ".set_device(self.gpu_id)"))
        failures.scheduler_crash(log, failures.traceback_text(frames, exc))
    log.each_rank(f"Init torch distributed ends. elapsed={elapsed:.2f} s, mem usage={CUDA_CONTEXT_BYTES / GIB:.2f} GB")
    mode = plan.settings.expert_distribution_recorder_mode
    if mode is not None and mode not in RECORDER_MODES:
        frames = (failures.SCHEDULER_FRAME, (f"{failures.SGLANG_ROOT}/srt/eplb/expert_distribution.py", 1010,
                                              "init_new", "return {"))
        failures.scheduler_crash(log, failures.traceback_text(frames, f"KeyError: {mode!r}"))


def _load_weights(plan: ServingPlan, log: EngineLog, pacer: _Pacer, placement_error: str | None) -> None:
    memory = plan.memory
    log.each_rank(f"Load weight begin. avail mem={plan.avail_gib(0):.2f} GB")
    if placement_error is not None:  # the KT wrapper computes its GPU expert masks while the model is built
        frames = (*failures.LOAD_FRAMES, (f"{failures.SGLANG_ROOT}/srt/layers/moe/kt_ep_wrapper.py", 4716,
                                          "_init_kt_gpu_experts_masks", "raise ValueError("))
        failures.scheduler_crash(log, failures.traceback_text(frames, f"ValueError: {placement_error}"))
    if plan.settings.kt_weight_path is not None and not plan.kt_active:
        log.warning("Either kt_num_gpu_experts or kt_gpu_experts_ratio is required but not set.", rank=0)
    layers = plan.shape.moe_layer_ids or (0,)
    per_layer_gpu = memory.weight_bytes / len(layers)
    per_layer_ram = plan.cpu_ram_needed_bytes / len(layers)
    capacity = plan.hardware.gpu_bytes - CUDA_CONTEXT_BYTES
    oom_layer = next((i for i in range(len(layers)) if (i + 1) * per_layer_gpu > capacity), len(layers) - 1)
    started = time.perf_counter()
    for i, layer in enumerate(layers):
        pacer.wait(LOAD_SHARE / len(layers))
        if memory.verdict == "oom_at_load" and i == oom_layer:
            used = i * per_layer_gpu
            message = failures.cuda_oom_message(
                tried=per_layer_gpu, total=plan.hardware.gpu_bytes, free=max(0.0, capacity - used),
                in_use=used + CUDA_CONTEXT_BYTES, allocated=used)
            failures.scheduler_crash(log, failures.traceback_text(
                failures.LOAD_FRAMES, f"torch.OutOfMemoryError: {message}"))
        if (i + 1) * per_layer_ram > plan.hardware.ram_bytes:
            failures.scheduler_killed(log)
        if plan.kt_active:
            log.stdout(_kt_line(layer))
    log.each_rank(
        f"Load weight end. elapsed={time.perf_counter() - started:.2f} s, type={plan.architecture}, "
        f"dtype=torch.bfloat16, avail mem={plan.avail_gib(memory.weight_bytes):.2f} GB, "
        f"mem usage={memory.weight_bytes / GIB:.2f} GB.")


def _allocate_kv(plan: ServingPlan, log: EngineLog, pacer: _Pacer) -> None:
    pacer.wait(KV_SHARE)
    if plan.memory.verdict == "kv_pool_too_small" or plan.max_total_num_tokens <= 0:
        failures.scheduler_crash(log, failures.traceback_text(
            failures.KV_FRAMES, f"RuntimeError: {failures.kv_pool_message(plan.memory.mem_fraction)}"))
    half = plan.max_total_num_tokens * plan.memory.kv_bytes_per_token / 2 / GIB
    log.each_rank(f"KV Cache is allocated. #tokens: {plan.max_total_num_tokens}, K size: {half:.2f} GB, "
                  f"V size: {half:.2f} GB")
    log.each_rank(f"Memory pool end. avail mem={plan.avail_gib(plan.memory.static_budget_bytes):.2f} GB")


def _capture_graphs(plan: ServingPlan, log: EngineLog, pacer: _Pacer) -> None:
    static = plan.memory.static_budget_bytes
    log.each_rank(f"Capture cuda graph begin. This can take up to several minutes. "
                  f"avail mem={plan.avail_gib(static):.2f} GB")
    elapsed = pacer.wait(GRAPH_SHARE)
    if plan.memory.verdict == "oom_outside_pool":
        free = max(0.0, plan.hardware.gpu_bytes - CUDA_CONTEXT_BYTES - static)
        message = failures.cuda_oom_message(
            tried=max(plan.graph_bytes, plan.memory.prefill_buffer_bytes + ACTIVATION_RESERVE - free),
            total=plan.hardware.gpu_bytes, free=free, in_use=static + CUDA_CONTEXT_BYTES, allocated=static)
        oom = failures.traceback_text(failures.GRAPH_FRAMES[:1], f"torch.OutOfMemoryError: {message}")
        capture = failures.traceback_text(failures.GRAPH_FRAMES, (
            f"Exception: Capture cuda graph failed: {message}\n{failures.CUDA_GRAPH_CAPTURE_FAILED_MSG}"))
        failures.scheduler_crash(log, failures.chained(oom, capture))
    after = static + plan.graph_bytes
    log.each_rank(f"Capture cuda graph end. Time elapsed: {elapsed:.2f} s. mem usage={plan.graph_bytes / GIB:.2f} "
                  f"GB. avail mem={plan.avail_gib(after):.2f} GB.")


def run_startup(plan: ServingPlan, log: EngineLog, placement_error: str | None = None) -> None:
    """Log the start up to the scheduler's summary line; a failure logs its text and ends the process.

    `placement_error`: why the GPU expert placement cannot be computed (it fails the weight load)."""
    pacer = _Pacer(plan.hardware.startup_seconds)
    if plan.settings.kt_weight_path is not None:
        log.warning(SHARED_EXPERTS_FUSION_OFF)
    _init_distributed(plan, log, pacer)
    _load_weights(plan, log, pacer, placement_error)
    _allocate_kv(plan, log, pacer)
    _capture_graphs(plan, log, pacer)
    log.info(
        f"max_total_num_tokens={plan.max_total_num_tokens}, chunked_prefill_size={plan.chunked_prefill_size}, "
        f"max_prefill_tokens={MAX_PREFILL_TOKENS}, max_running_requests={plan.max_running_requests}, "
        f"context_len={plan.context_len}, "
        f"available_gpu_mem={plan.avail_gib(plan.memory.static_budget_bytes + plan.graph_bytes):.2f} GB",
        rank=0)
