"""`python -m launch fleet ...`: the preview's exit codes, bad input refused before anything starts, and a pinned
worker's GPUs reaching its engine process."""

from __future__ import annotations

import io
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from launch.command import Engine
from launch.fleet.cli import start_fleet
from launch.fleet.router_settings import RouterSettings
from launch.fleet.spec import Fleet, LaunchedWorker
from launch.fleet.supervisor import FleetSupervisor
from tests.fleet_process import free_block
from tests.sim_process import FAST_ENV, ROOT, free_port, sim_settings


def run_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "launch", "fleet", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, env={**os.environ, **FAST_ENV, **(env or {})})


def test_fleet_command_prints_the_router_and_every_worker_and_exits_0() -> None:
    done = run_cli("command", "--engine", "sglang", "--workers", "2", "--attach", "http://10.0.0.3:30000",
                   "--set", "router_port=31000", "--set", "kt_cpuinfer=30")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "# router on this host: http://127.0.0.1:31000" in out
    assert "--prometheus-host 127.0.0.1" in out and "--prometheus-port 31001" in out
    assert "--worker-urls http://127.0.0.1:31010 http://127.0.0.1:31011 http://10.0.0.3:30000" in out
    assert "CUDA_VISIBLE_DEVICES=0 python -m sglang.launch_server" in out
    assert "CUDA_VISIBLE_DEVICES=1 python -m sglang.launch_server" in out
    assert out.count("--kt-cpuinfer 15") == 2  # the 30 threads shared out between the two workers
    assert "# worker 3: attached, http://10.0.0.3:30000" in out


def test_fleet_command_of_a_multi_node_fleet_file(tmp_path: Path) -> None:
    path = tmp_path / "fleet.json"
    path.write_text(json.dumps({"base": {"preset": "tp8-hybrid", "model_path": "/models/M3"}, "workers": [
        {"nodes": ["gpu-a", "gpu-b"], "dist_init_addr": "gpu-a:5000", "port": 30000, "set": {"tp_size": 16},
         "gpus": [0, 1, 2, 3, 4, 5, 6, 7]}]}))
    done = run_cli("command", "--fleet", str(path))
    assert done.returncode == 0, done.stderr
    assert "# worker 1, node 0 of 2 on gpu-a: http://gpu-a:30000" in done.stdout
    assert "--node-rank 1" in done.stdout and "--dist-init-addr gpu-a:5000" in done.stdout
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"workers": [{"nodes": ["gpu-a", "gpu-b"], "dist_init_addr": "gpu-b:5000",
                                            "set": {"tp_size": 3}}]}))
    done = run_cli("command", "--fleet", str(bad))
    assert done.returncode == 1
    assert "not divisible by 2 nodes" in done.stderr and "not on node rank 0 (gpu-a)" in done.stderr


def test_bad_input_is_refused_with_a_clear_error_and_exit_2() -> None:
    for args, message in ((["--workers", "0"], "a fleet needs workers"),
                          (["--workers", "1", "--set", "router_prot=1"], "unknown router setting 'prot'"),
                          (["--workers", "1", "--set", "router_port=x"], "--port: 'x' is not a valid int"),
                          (["--workers", "1", "--set", "tp_size=x"], "--tp-size")):
        done = run_cli("command", *args)
        assert done.returncode == 2 and message in done.stderr, (args, done.stderr)


def test_fleet_serve_refuses_a_busy_router_port_before_starting_anything(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        done = run_cli("serve", "--engine", "sim", "--workers", "2", "--set", f"router_port={port}",
                       "--set", f"router_prometheus_port={free_port()}", "--first-port", str(free_block(2)),
                       "--run-root", str(tmp_path))
    assert done.returncode == 1
    assert f"[router.port] port {port} on 127.0.0.1 is already in use" in done.stdout
    assert not (tmp_path / "fleets").exists()  # nothing was started


def test_a_pinned_worker_gets_its_gpus_in_its_engine_environment(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in FAST_ENV.items():
        monkeypatch.setenv(key, value)
    worker = LaunchedWorker(sim_settings(free_port()), gpus=(3, 5))
    supervisor = FleetSupervisor(Fleet(RouterSettings(port=free_block(2)), (worker,), Engine("sim")), tmp_path)
    supervisor.start()
    try:
        deadline = time.monotonic() + 30
        while (pid := supervisor.worker_supervisor(0).snapshot().pid) is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert pid is not None
        assert psutil.Process(pid).environ()["CUDA_VISIBLE_DEVICES"] == "3,5"
    finally:
        supervisor.stop()
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


def test_serve_names_the_workers_it_does_not_start_and_stops_at_a_failed_check(tmp_path: Path) -> None:
    remote = LaunchedWorker(sim_settings(30000), machine="gpu-b")
    local = LaunchedWorker(sim_settings(free_port()))
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        fleet = Fleet(RouterSettings(port=busy.getsockname()[1]), (local, remote), Engine("sim"))
        out = io.StringIO()
        assert start_fleet(fleet, tmp_path, out) is None
    assert "worker 2 runs on gpu-b: start it there" in out.getvalue()
    assert "[router.port]" in out.getvalue() and "already in use" in out.getvalue()
    assert not (tmp_path / "fleets").exists()
