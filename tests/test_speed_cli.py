"""probe, roofline and bench as real processes: the probe's JSON is a valid host file (no root, no GPU needed)
and its bandwidth is a plain numpy copy's; the bench measures what the simulated engine was set to; bad input
gets one clear line."""

import json
import os
import time

import numpy as np
import pytest

from launch.__main__ import main
from launch.bench import histogram_quantile_ms
from launch.host_checks import HostSettingsText, host_findings
from launch.host_file import host_from_mapping
from tests.sim_process import free_port, running_sim, sim_settings
from tests.speed_cli import HOSTS, cli_env, json_out, launch_cli


def plain_copy_gbs(n_bytes: int = 256 << 20, passes: int = 4) -> float:
    src, dst = np.ones(n_bytes // 8), np.zeros(n_bytes // 8)
    best = float("inf")
    for _ in range(passes):
        began = time.perf_counter()
        np.copyto(dst, src)
        best = min(best, time.perf_counter() - began)
    return 2 * n_bytes / best / 1e9


def test_probe_json_is_a_host_file_and_its_bandwidth_is_a_numpy_copys(tmp_path):
    # this machine is shared: a plain copy just before and just after the probe brackets what it could see
    plain = [plain_copy_gbs()]
    host = json_out(launch_cli("probe", "--json", "--quick", env=cli_env(tmp_path, host=None)))
    plain.append(plain_copy_gbs())
    figures = host_from_mapping(host)  # the same checks a --host-file passes
    threads = len(os.sched_getaffinity(0))  # the probe copies with one thread per CPU, the plain copy with one
    assert min(plain) / 2 <= figures.memory.read_gbs <= max(plain) * 2 * threads, (figures.memory, plain)
    assert len(figures.memory.per_node_read_gbs) == figures.cpu.numa_nodes
    assert sum(figures.cpu.per_node_physical) <= figures.cpu.physical_cores
    assert sum(figures.cpu.per_node_logical) <= figures.cpu.logical_cores  # a cpuset may hide some
    assert set(host) >= {"cpu", "memory", "gpus", "findings"}
    assert {"physical_cores", "logical_cores", "numa_nodes", "isa", "kt_backend"} <= set(host["cpu"])
    for finding in host["findings"]:
        assert {"id", "ok", "fix", "source"} <= set(finding)


def test_host_settings_that_cost_speed_are_listed_with_their_fix_and_source():
    text = HostSettingsText(numa_balancing="1\n", thp="always [madvise] never\n", governors=("powersave",) * 4,
                            smt_active="1")
    found = {f.id: f for f in host_findings(text, numa_nodes=2, physical=64, logical=128)}
    assert not found["numa_balancing"].ok and found["numa_balancing"].fix == "sudo sysctl -w kernel.numa_balancing=0"
    assert not found["thp"].ok and "transparent_hugepage/enabled" in found["thp"].fix
    assert not found["governor"].ok and "performance" in found["governor"].fix
    assert "#219" in found["hyperthreading"].source and found["hyperthreading"].fix == "--kt-cpuinfer 64"
    assert all(f.source for f in found.values())
    tuned = HostSettingsText("0", "[always] madvise never", ("performance",), "0")
    assert all(f.ok for f in host_findings(tuned, numa_nodes=2, physical=64, logical=64))


def test_roofline_cli_reads_a_host_file_and_refuses_a_broken_one(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("M3UI_SIM_HOST", raising=False)
    assert main(["roofline", "--preset", "tp8-hybrid", "--host-file", str(HOSTS / "two-socket-8xh20.json"),
                 "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["decode_tok_s"]["1"] < result["decode_tok_s"]["16"]
    assert result["gpu_read_gbs"] == 32_000 and result["cpu_read_gbs"] == 400
    assert result["cpu_bytes_per_token"] > 0 and result["gpu_bytes_per_token"] > 0
    broken = json.loads((HOSTS / "two-socket-8xh20.json").read_text())
    del broken["memory"]["read_gbs"]
    (tmp_path / "broken.json").write_text(json.dumps(broken))
    assert main(["roofline", "--preset", "tp8-hybrid", "--host-file", str(tmp_path / "broken.json")]) == 2
    assert capsys.readouterr().err.strip() == "error: host file: memory.read_gbs is missing"


def test_bench_measures_the_decode_speed_the_sim_was_set_to(tmp_path):
    # every expert on the CPU: the sim decodes one request at exactly M3UI_SIM_DECODE_TPS
    settings = sim_settings(free_port(), kt_num_gpu_experts=0)
    sim_env = {"M3UI_SIM_UNTHROTTLED": "", "M3UI_SIM_DECODE_TPS": "30", "M3UI_SIM_PREFILL_TPS": "50000"}
    with running_sim(settings, sim_env) as sim:
        result = json_out(launch_cli("bench", "--endpoint", sim.url, "--concurrency", "1", "--prompt-lengths", "1024",
                                     "--json", env=cli_env(tmp_path, host=None)))
    assert result["decode_tok_s"]["1"] == pytest.approx(30, rel=0.05)
    assert result["prefill_tok_s"]["1024"] > 0
    assert result["itl_ms"]["p50"] == pytest.approx(1000 / 30, rel=0.15)
    assert list((tmp_path / "bench" / "endpoint").glob("*.json"))  # kept for comparison


def test_bench_on_an_unreachable_endpoint_says_so_in_one_line(capsys):
    assert main(["bench", "--endpoint", f"http://127.0.0.1:{free_port()}"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: cannot reach http://127.0.0.1:") and len(err.splitlines()) == 1


def test_histogram_quantiles_come_from_the_observations_between_two_scrapes():
    before = ((0.01, 0.0), (0.05, 10.0), (float("inf"), 10.0))
    after = ((0.01, 0.0), (0.05, 20.0), (float("inf"), 30.0))  # 10 new at <=50 ms, 10 above
    assert histogram_quantile_ms(before, after, 50) == pytest.approx(50.0)
    assert histogram_quantile_ms(before, after, 99) is None  # past the last finite bucket: unknown
