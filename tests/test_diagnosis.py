"""The failure classifier on sglang-kt / kt-kernel 0.7.2's exact failure texts (ENGINE_CONTRACT.md §2)."""

import socket

import pytest

from launch.diagnosis import FailureCause, SizingContext, diagnose, last_error_line
from launch.model_config import load_model_shape
from launch.phases import Phase
from launch.presets import single_gpu, tp8_hybrid
from launch.sizing import max_gpu_experts

SINGLE = single_gpu("/models/m3")  # 4 GPU experts, mem-fraction 0.85, chunked prefill 4096, TP1


def scheduler_traceback(*last_lines: str, rank: int = 0) -> list[str]:
    return [
        f"[2026-11-29 19:17:14 TP{rank}] Scheduler hit an exception: Traceback (most recent call last):",
        '  File "/venv/lib/python3.11/site-packages/sglang/srt/managers/scheduler.py", line 3245, in '
        "run_scheduler_process",
        "    scheduler = Scheduler(",
        *last_lines,
        "",
    ]


SCHEDULER_DEAD = [
    "[2026-11-29 19:17:15] Rank 0 scheduler is dead. Please check if there are relevant logs.",
    "[2026-11-29 19:17:15] Exit code: -9",
]
KV_POOL = scheduler_traceback(
    "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. "
    "Current value: self.server_args.mem_fraction_static=0.55") + SCHEDULER_DEAD
CUDA_OOM = scheduler_traceback(
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.38 GiB. GPU 0 has a total capacity of "
    "94.50 GiB of which 1.02 GiB is free. Including non-PyTorch memory, this process has 93.47 GiB memory in use.")
GRAPH_FAILED = scheduler_traceback(
    "Exception: Capture cuda graph failed: CUDA out of memory. Tried to allocate 1.00 GiB.",
    "Possible solutions:",
    "1. set --mem-fraction-static to a smaller value (e.g., 0.8 or 0.7)",
    "2. set --cuda-graph-max-bs to a smaller value (e.g., 16)",
    "3. disable torch compile by not using --enable-torch-compile",
    "4. disable CUDA graph by --disable-cuda-graph. (Not recommended. Huge performance loss)",
)


def test_kv_pool_too_small_asks_for_more_static_memory_or_fewer_gpu_experts():
    d = diagnose(KV_POOL, tp8_hybrid("/models/m3"), phase=Phase.KV_CACHE, exit_code=1)
    assert d.cause is FailureCause.KV_POOL_TOO_SMALL
    assert dict(d.changes) == {"mem_fraction_static": 0.6, "kt_num_gpu_experts": 20}
    assert any("Not enough memory" in line for line in d.evidence)


def test_oom_at_load_halves_gpu_experts_when_the_model_is_unknown():
    d = diagnose(CUDA_OOM, SINGLE.replace(kt_num_gpu_experts=100), phase=Phase.LOADING_WEIGHTS)
    assert d.cause is FailureCause.CUDA_OOM_AT_LOAD
    assert d.changes == (("kt_num_gpu_experts", 50),)


def test_oom_at_load_computes_the_expert_count_that_fits_when_the_model_and_gpu_are_known():
    shape = load_model_shape(None)
    d = diagnose(CUDA_OOM, SINGLE.replace(kt_num_gpu_experts=100), phase=Phase.LOADING_WEIGHTS,
                 sizing=SizingContext(shape, 96e9))
    fits = max_gpu_experts(shape, tp=1, gpu_bytes=96e9, mem_fraction=0.85)
    assert 0 < fits < 100
    assert d.changes == (("kt_num_gpu_experts", fits),)


def test_oom_at_load_lowers_the_ratio_when_the_ratio_is_what_places_experts():
    d = diagnose(CUDA_OOM, SINGLE.replace(kt_gpu_experts_ratio=0.5), phase=Phase.LOADING_WEIGHTS)
    assert d.changes == (("kt_gpu_experts_ratio", 0.25),)


def test_oom_while_serving_asks_for_less_static_memory_the_opposite_of_a_small_kv_pool():
    serving = diagnose(CUDA_OOM, SINGLE, phase=Phase.READY)
    pool = diagnose(KV_POOL, SINGLE, phase=Phase.KV_CACHE)
    assert serving.cause is FailureCause.CUDA_OOM_ACTIVATION
    assert dict(serving.changes)["mem_fraction_static"] < SINGLE.mem_fraction_static
    assert dict(pool.changes)["mem_fraction_static"] > SINGLE.mem_fraction_static
    assert dict(serving.changes)["chunked_prefill_size"] == 2048


def test_graph_capture_failure_lowers_graph_batch_size_and_static_memory():
    d = diagnose(GRAPH_FAILED, SINGLE.replace(cuda_graph_max_bs=8), phase=Phase.CUDA_GRAPHS)
    assert d.cause is FailureCause.GRAPH_CAPTURE
    assert d.changes == (("cuda_graph_max_bs", 4), ("mem_fraction_static", 0.8))
    assert any("Capture cuda graph failed" in line for line in d.evidence)


def test_graph_capture_at_batch_size_one_can_only_lower_static_memory():
    d = diagnose(GRAPH_FAILED, SINGLE, phase=Phase.CUDA_GRAPHS)  # the seed already captures bs 1 only
    assert d.changes == (("mem_fraction_static", 0.8),)


def test_a_plain_cuda_oom_during_graph_capture_is_a_graph_capture_failure():
    assert diagnose(CUDA_OOM, SINGLE, phase=Phase.CUDA_GRAPHS).cause is FailureCause.GRAPH_CAPTURE


def test_busy_port_suggests_a_port_that_is_free():
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        line = (f"[2026-11-29 19:17:19] ERROR:    [Errno 98] error while attempting to bind on address "
                f"('127.0.0.1', {port}): address already in use")
        d = diagnose(["[2026-11-29 19:17:19] INFO:     Waiting for application startup.", line],
                     SINGLE.replace(host="127.0.0.1", port=port))
        assert d.cause is FailureCause.PORT_BUSY
        (name, new_port), = d.changes
        assert name == "port" and new_port != port
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", new_port))


@pytest.mark.parametrize("line", [
    "RuntimeError: The installed kt-kernel extension requires a newer CPU ISA than this host: detected=avx2, "
    "loaded=amx. Install a multi-variant wheel or rebuild for this machine.",
    "RuntimeError: MXFP8 backend not available. Required ISA (any one of):",
])
def test_kt_kernel_isa_failures_are_recognised(line):
    d = diagnose(scheduler_traceback(line) + SCHEDULER_DEAD, SINGLE, phase=Phase.LOADING_WEIGHTS)
    assert d.cause is FailureCause.KT_KERNEL_CPU
    assert "CPU" in d.title


def test_missing_kt_kernel_is_an_install_problem():
    line = "ImportError: kt_kernel is not installed. To use KTransformers EP wrapper, please install kt_kernel."
    d = diagnose(scheduler_traceback(line), SINGLE)
    assert d.cause is FailureCause.KT_KERNEL_CPU and "not installed" in d.title


@pytest.mark.parametrize("line", [
    "huggingface_hub.errors.HFValidationError: Repo id must be in the form 'repo_name' or "
    "'namespace/repo_name': '/path/to/MiniMax-M3-MXFP8'. Use `repo_type` argument if needed.",
    "OSError: /models/m3 does not appear to have a file named config.json. Checkout "
    "'https://huggingface.co//models/m3/tree/main' for available files.",
    "FileNotFoundError: [Errno 2] No such file or directory: '/models/m3/model-00001-of-00020.safetensors'",
])
def test_model_path_failures_are_recognised(line):
    d = diagnose(["Traceback (most recent call last):", line], SINGLE)
    assert d.cause is FailureCause.MODEL_PATH
    assert "/models/m3" in d.explanation


def test_a_missing_file_outside_the_model_folders_is_not_a_model_path_problem():
    d = diagnose(["FileNotFoundError: [Errno 2] No such file or directory: '/tmp/elsewhere.json'"], SINGLE)
    assert d.cause is FailureCause.UNKNOWN


def test_scheduler_death_names_the_tracebacks_last_line():
    d = diagnose(scheduler_traceback("ValueError: Unsupported quantization: mxfp9") + SCHEDULER_DEAD, SINGLE,
                 phase=Phase.LOADING_WEIGHTS)
    assert d.cause is FailureCause.SCHEDULER_DEATH
    assert d.title == "The scheduler died: ValueError: Unsupported quantization: mxfp9"
    assert any("Rank 0 scheduler is dead" in line for line in d.evidence)


def test_the_same_line_from_every_tp_rank_is_one_piece_of_evidence():
    lines = [line for rank in range(8) for line in scheduler_traceback(KV_POOL[3], rank=rank)]
    d = diagnose(lines, tp8_hybrid("/models/m3"), phase=Phase.KV_CACHE)
    assert d.evidence == (KV_POOL[3],)


def test_an_unexplained_sigkill_hints_at_the_kernel_oom_killer():
    d = diagnose(["[2026-11-29 19:07:14 TP0] Load weight begin. avail mem=93.12 GB"], SINGLE, exit_code=-9)
    assert d.cause is FailureCause.UNKNOWN
    assert "SIGKILL" in d.title and "OOM killer" in d.explanation
    assert d.evidence == ("Load weight begin. avail mem=93.12 GB",)


def test_render_shows_title_evidence_and_flags_to_try():
    text = diagnose(KV_POOL, SINGLE, phase=Phase.KV_CACHE).render()
    assert "KV cache" in text and "Not enough memory" in text and "--mem-fraction-static 0.9" in text


def test_last_error_line_skips_trailing_noise():
    assert last_error_line(["Traceback (most recent call last):", "KeyError: 'stat_approx'", "",
                            "[2026-11-29] Exit code: 1"]) == "KeyError: 'stat_approx'"


def test_a_scheduler_killed_outright_points_at_cpu_ram_and_the_oom_killer():
    lines = [*SCHEDULER_DEAD, "Traceback (most recent call last):",
             '  File "/venv/lib/python3.11/site-packages/sglang/launch_server.py", line 121, in <module>', "EOFError"]
    d = diagnose(lines, SINGLE, phase=Phase.LOADING_WEIGHTS, exit_code=1)
    assert d.cause is FailureCause.SCHEDULER_DEATH
    assert "SIGKILL" in d.title and "CPU RAM" in d.explanation


@pytest.mark.parametrize(("lines", "phase", "exit_code", "plain"), [
    (["Load weight begin. avail mem=93.12 GB"], Phase.LOADING_WEIGHTS, -9,
     "The engine was killed by SIGKILL — probably the out-of-memory killer"),
    (SCHEDULER_DEAD, Phase.LOADING_WEIGHTS, 1, "The engine was killed by SIGKILL — probably the out-of-memory killer"),
    (KV_POOL, Phase.KV_CACHE, 1, "The engine stopped: it had too little GPU memory left for its cache"),
    (CUDA_OOM, Phase.READY, 1, "The engine stopped: it ran out of GPU memory while answering"),
    (["Segmentation fault"], Phase.READY, 3, "The engine exited with code 3 unexpectedly"),
])
def test_the_plain_line_for_chat_users_names_the_cause_without_flags_or_log_text(lines, phase, exit_code, plain):
    assert diagnose(lines, SINGLE, phase=phase, exit_code=exit_code).plain == plain
