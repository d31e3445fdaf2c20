"""Each way the real engine fails at start, with its real text, at its real point, with its real exit status."""

from __future__ import annotations

import contextlib
import signal
import socket
import subprocess
import sys

import httpx

from launch.presets import tp8_hybrid
from tests.sim_process import ROOT, free_port, sim_settings, start_sim  # noqa: F401  (fixture)

KILLED = -signal.SIGKILL  # sglang's kill_process_tree(os.getpid()) SIGKILLs the launcher itself
LAUNCHER_SIGQUIT = "Received sigquit from a child process. It usually means the child failed."


def _run_sim_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "launch.sim", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=30)


def test_an_unknown_flag_is_rejected_like_argparse_does() -> None:
    proc = _run_sim_cli("--port", "1", "--no-such-flag", "3")
    assert proc.returncode == 2
    assert "usage:" in proc.stderr and "error: unrecognized arguments: --no-such-flag 3" in proc.stderr


def test_a_value_outside_a_flags_choices_is_rejected_like_argparse_does() -> None:
    proc = _run_sim_cli("--tool-call-parser", "nonsense")
    assert proc.returncode == 2 and "argument --tool-call-parser: invalid choice: 'nonsense'" in proc.stderr


def test_any_other_real_sglang_flag_is_accepted_and_shown_in_server_info(start_sim) -> None:  # noqa: F811
    sim = start_sim(sim_settings(free_port(), extra_args="--context-length 8192 --disable-cuda-graph"))
    sim.wait_ready()
    info = httpx.get(f"{sim.url}/server_info", timeout=5).json()
    assert info["context_length"] == 8192 and info["disable_cuda_graph"] is True


def test_too_many_gpu_experts_die_with_the_cuda_oom_while_loading(start_sim) -> None:  # noqa: F811
    sim = start_sim(sim_settings(free_port(), kt_num_gpu_experts=40))
    assert sim.wait_exit() == KILLED
    out = sim.output
    assert "Scheduler hit an exception: Traceback (most recent call last):" in out
    assert "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate " in out
    assert "If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments" in out
    assert LAUNCHER_SIGQUIT in out
    assert "Load weight begin" in out and "Load weight end" not in out


def test_a_tp8_preset_with_every_expert_on_gpu_fails_when_its_weights_outgrow_the_static_share(
        start_sim) -> None:  # noqa: F811
    # 55 GB of weights per card fit the 96 GB card but not 0.55 of it: sglang's misleading KV-pool message.
    sim = start_sim(tp8_hybrid().replace(host="127.0.0.1", port=free_port(), kt_num_gpu_experts=128))
    assert sim.wait_exit() == KILLED
    assert "Not enough memory. Please try to increase --mem-fraction-static. Current value: " \
           "self.server_args.mem_fraction_static=0.55" in sim.output


def test_a_kv_pool_that_does_not_fit_asks_to_raise_mem_fraction_static(start_sim) -> None:  # noqa: F811
    sim = start_sim(sim_settings(free_port(), mem_fraction_static=0.25))
    assert sim.wait_exit() == KILLED
    out = sim.output
    assert ("RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. "
            "Current value: self.server_args.mem_fraction_static=0.25") in out
    assert "Load weight end" in out and "KV Cache is allocated" not in out


def test_too_high_a_mem_fraction_runs_out_of_memory_capturing_cuda_graphs(start_sim) -> None:  # noqa: F811
    sim = start_sim(sim_settings(free_port(), mem_fraction_static=0.98))
    assert sim.wait_exit() == KILLED
    out = sim.output
    assert "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate" in out
    assert "Exception: Capture cuda graph failed: CUDA out of memory." in out
    assert "Possible solutions:\n1. set --mem-fraction-static to a smaller value (e.g., 0.8 or 0.7)" in out
    assert "KV Cache is allocated" in out and "Capture cuda graph end" not in out


def test_a_busy_port_fails_only_after_loading_with_uvicorns_bind_error(start_sim) -> None:  # noqa: F811
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        sim = start_sim(sim_settings(port))
        assert sim.wait_exit() == 3
    lines = [line for _, line in sim.lines]
    error = next(i for i, line in enumerate(lines) if "error while attempting to bind" in line)
    assert lines[error].endswith(f"ERROR:    [Errno 98] error while attempting to bind on address "
                                 f"('127.0.0.1', {port}): address already in use")
    assert any("max_total_num_tokens=" in line for line in lines[:error])


def test_too_little_host_ram_for_the_cpu_experts_kills_the_scheduler(start_sim) -> None:  # noqa: F811
    sim = start_sim(sim_settings(free_port()), env={"M3UI_SIM_RAM_GB": "128"})
    assert sim.wait_exit() == 1
    out = sim.output
    assert "Rank 0 scheduler is dead. Please check if there are relevant logs." in out
    assert "Exit code: -9" in out and "EOFError" in [line for _, line in sim.lines]
    assert "[NativeMoEWrapper Layer 3]" in out and "Load weight end" not in out


def test_fewer_gpus_than_tp_size_fail_at_distributed_init(start_sim) -> None:  # noqa: F811
    sim = start_sim(tp8_hybrid().replace(host="127.0.0.1", port=free_port()), env={"M3UI_SIM_GPU_COUNT": "4"})
    assert sim.wait_exit() == KILLED
    assert "CUDA error: invalid device ordinal" in sim.output and "Load weight begin" not in sim.output


def test_recorder_endpoints_without_a_recorder_mode_take_the_server_down(start_sim) -> None:  # noqa: F811
    sim = start_sim(sim_settings(free_port()))
    sim.wait_ready()
    with contextlib.suppress(httpx.TransportError):  # the server dies while answering
        httpx.post(f"{sim.url}/start_expert_distribution_record", timeout=5)
    assert sim.wait_exit() == KILLED
    assert ("Exception: Please set ServerArgs.expert_distribution_recorder_mode to use ExpertDistributionRecorder."
            in sim.output)
    assert "It usually means one child failed." in sim.output
