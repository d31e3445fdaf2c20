"""When a tune goes wrong: Ctrl-C in the middle leaves the last-good engine (the best measured so far) running and
answering; a trial the engine cannot run is marked failed with its reason and the search goes on."""

import json
import signal
import subprocess
import sys
import time

import httpx

from launch.run_state import read_run_state
from tests.sim_process import free_port
from tests.speed_cli import ROOT, cli_env, json_out, launch_cli, stop_left_engine


def test_sigint_mid_tune_leaves_the_last_good_engine_running(tmp_path):
    port = free_port()
    env = cli_env(tmp_path, M3UI_SIM_STARTUP_SECONDS="2")
    tune = subprocess.Popen(
        [sys.executable, "-m", "launch", "tune", "--engine", "sim", "--preset", "single-gpu", "--set", f"port={port}",
         "--budget-min", "5", "--json"], cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        seen = []
        deadline = time.monotonic() + 90
        while not any(line.lstrip().startswith("[") and "start:" in line for line in seen):
            assert time.monotonic() < deadline and tune.poll() is None, "".join(seen)
            seen.append(tune.stderr.readline())
        time.sleep(1.0)  # the next trial is relaunching the engine now
        tune.send_signal(signal.SIGINT)
        out, err = tune.communicate(timeout=90)
        assert tune.returncode == 130, err
        result = json.loads(out)
        assert result["interrupted"] is True
        assert "interrupted: relaunching the best settings measured so far" in err
        state = read_run_state(tmp_path)
        assert result["trials"] == []  # the interrupted trial never finished
        assert state is not None and state.settings.kt_cpuinfer == 64  # the start settings: the last good ones
        assert result["best"]["settings"]["kt_cpuinfer"] == 64
        assert httpx.get(f"http://127.0.0.1:{port}/health", timeout=5, trust_env=False).status_code == 200
        assert httpx.get(f"http://127.0.0.1:{port}/v1/models", timeout=5, trust_env=False).status_code == 200
    finally:
        if tune.poll() is None:
            tune.kill()
            tune.wait()
        stop_left_engine(tmp_path)


def test_a_trial_that_cannot_run_is_marked_failed_and_the_search_goes_on(tmp_path):
    # the host file promises 141 GB GPUs, the simulated engine has 96 GB: the largest GPU expert counts do not fit
    env = cli_env(tmp_path, M3UI_SIM_GPU_MEM_GB="96")
    port = free_port()
    try:
        result = json_out(launch_cli("tune", "--engine", "sim", "--preset", "single-gpu", "--set", f"port={port}",
                                     "--knobs", "kt_num_gpu_experts", "--budget-min", "3", "--json", env=env))
    finally:
        stop_left_engine(tmp_path)
    failed = [t for t in result["trials"] if not t["ok"]]
    assert failed and all("out of memory" in t["reason"] or "Not enough memory" in t["reason"] for t in failed)
    assert any(t["ok"] for t in result["trials"])  # it went on after the failures
    assert result["best"]["settings"]["kt_num_gpu_experts"] > 4 and result["best"]["gain"] > 0
    assert result["profile"] == "tuned-single-gpu"
