"""`python -m launch microbench` and the tuner's use of it: kt-kernel's own MoE layer, timed in the engine's
Python for a few (kt_cpuinfer, kt_threadpool_count) settings, one child process each.

The real kernel runs wherever the cached kt-kernel 0.7.2 wheel loads (CPython 3.11, AVX2): no GPU, no torch.
The stand-in in tests/data/fake_kt_kernel has the same objects and calls and a known fastest setting: it proves
the choice and the tuner's use of it deterministically, on any host."""

from __future__ import annotations

import json
import sys
import zipfile
from pathlib import Path

import pytest

from launch.command import Engine
from launch.host_file import load_host_file
from launch.microbench import KernelShape, MicrobenchError, PoolSetting, detect, run_microbench
from launch.model_config import BUNDLED_M3_CONFIG, load_model_shape
from launch.presets import single_gpu
from launch.profile import ProfileStore
from launch.supervisor import Supervisor
from launch.tune import Tuner, TuneRequest
from tests.sim_process import free_port
from tests.speed_cli import HOSTS, ROOT, cli_env, launch_cli, stop_left_engine
from tests.wheel_cache import find_wheel

FAKE = ROOT / "tests" / "data" / "fake_kt_kernel"
TINY = KernelShape(experts=16, hidden_size=512, intermediate_size=256, top_k=4, moe_layers=57)
BUNDLED = str(BUNDLED_M3_CONFIG.parent)  # what `--engine sim --preset` runs on
KERNELS = {"AMXMXFP8_KGroup_MOE", "AVX2MXFP8_MOE"}  # kt-kernel 0.7.2's MXFP8 kernels


def _unpack_real_kernel(into: Path) -> Path:
    """kt_kernel's package (extension builds, detector, bundled libs) from the cached wheel; no torch needed."""
    wheel = find_wheel("kt-kernel", "0.7.2")
    if wheel is None:
        pytest.skip("kt-kernel 0.7.2 wheel not provisioned: run `python -m tests.provision`")
    if sys.version_info[:2] != (3, 11):
        pytest.skip(f"the kt-kernel 0.7.2 wheel is built for CPython 3.11, this is {sys.version.split()[0]}")
    with zipfile.ZipFile(wheel) as zf:
        names = [n for n in zf.namelist() if n.startswith(("kt_kernel.libs/", "kt_kernel-0.7.2.dist-info/"))
                 or n in ("kt_kernel/__init__.py", "kt_kernel/_cpu_detect.py")
                 or (n.startswith("kt_kernel/_kt_kernel_ext_") and n.endswith(".so"))]
        zf.extractall(into, names)
    for lib in (into / "kt_kernel.libs").iterdir():
        lib.chmod(0o755)
    return into


def test_the_real_kernel_times_an_mxfp8_layer_per_setting(tmp_path, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(_unpack_real_kernel(tmp_path)))
    try:
        found = detect(sys.executable)
    except MicrobenchError as exc:
        pytest.skip(f"kt-kernel's extension does not load on this CPU: {exc}")
    assert found["kt_kernel"] == "0.7.2" and found["variant"] in (
        "amx", "avx512_bf16", "avx512_vbmi", "avx512_vnni", "avx512_base", "avx2")
    lines: list[str] = []
    result = run_microbench(sys.executable, TINY, threads=[2], pools=[1], start=PoolSetting(1, 1),
                            prefill_tokens=16, seconds=0.2, progress=lines.append)
    assert result.kernel in KERNELS and result.variant == found["variant"]
    assert [(t.setting.kt_cpuinfer, t.setting.kt_threadpool_count) for t in result.times] == [(1, 1), (2, 1)]
    assert all(t.ok and t.decode_ms and t.decode_ms > 0 and t.prefill_tok_s for t in result.times), result.times
    assert result.best in result.times
    assert "kt-kernel 0.7.2" in lines[0] and len(lines) == 3


def test_the_fastest_setting_is_chosen_and_a_refused_one_is_reported(monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(FAKE))
    monkeypatch.setenv("FAKE_KT_BEST", "8,2")
    monkeypatch.setenv("FAKE_KT_NODES", "2")
    result = run_microbench(sys.executable, TINY, threads=[4, 8, 12], pools=[1, 2, 4], start=PoolSetting(6, 1),
                            prefill_tokens=4, seconds=0.2, progress=lambda _: None)
    tried = [(t.setting.kt_cpuinfer, t.setting.kt_threadpool_count) for t in result.times]
    assert tried == [(4, 1), (6, 1), (8, 1), (12, 1), (8, 2), (8, 4)]  # threads at the start's pools, then pools
    assert result.best is not None and (result.best.setting.kt_cpuinfer, result.best.setting.kt_threadpool_count) \
        == (8, 2)
    refused = result.times[-1]
    assert not refused.ok and "NUMA node 2 does not exist" in refused.reason
    doc = result.to_json()
    assert doc["best"] == {"kt_cpuinfer": 8, "kt_threadpool_count": 2} and doc["shape"]["experts"] == 16


def test_the_launchs_numa_nodes_place_the_pools_of_a_setting_with_as_many(monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(FAKE))
    monkeypatch.setenv("FAKE_KT_NODES", "4")
    result = run_microbench(sys.executable, TINY, threads=[], pools=[2], start=PoolSetting(4, 1), prefill_tokens=2,
                            seconds=0.05, progress=lambda _: None, numa_nodes=(0, 5))
    one_pool, two_pools = result.times
    assert one_pool.ok  # one pool: node 0, as the engine places it
    assert not two_pools.ok and "NUMA node 5 does not exist" in two_pools.reason


def test_another_kt_method_is_refused_before_any_child():
    with pytest.raises(MicrobenchError, match="MXFP8 layers .* not AMXINT4"):
        run_microbench("/nonexistent/python", TINY, [1], [1], PoolSetting(1, 1), method="AMXINT4")


def test_the_child_never_runs_kt_kernels_package_init(monkeypatch):
    # the stand-in's __init__ raises (the real one imports torch): detect() works all the same
    monkeypatch.setenv("PYTHONPATH", str(FAKE))
    assert detect(sys.executable)["variant"] == "avx2"


def test_kt_kernel_absent_is_a_clear_error_and_exit_1(tmp_path):
    env = cli_env(tmp_path)
    env.pop("PYTHONPATH", None)
    done = launch_cli("microbench", "--preset", "single-gpu", "--python", sys.executable, env=env)
    assert done.returncode == 1
    assert f"error: kt-kernel cannot be loaded in the engine's Python: kt-kernel is not installed in " \
           f"{sys.executable}" in done.stderr


def test_the_cli_prints_the_fastest_setting_as_json(tmp_path):
    env = cli_env(tmp_path, PYTHONPATH=str(FAKE), FAKE_KT_BEST="46,4")
    done = launch_cli("microbench", "--preset", "single-gpu", "--python", sys.executable, "--experts", "16",
                      "--threads", "24", "46", "--pools", "1", "4", "--seconds", "0.05", "--prefill-tokens", "2",
                      "--json", env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    doc = json.loads(done.stdout)
    assert doc["best"] == {"kt_cpuinfer": 46, "kt_threadpool_count": 4}
    assert {(s["kt_cpuinfer"], s["kt_threadpool_count"]) for s in doc["settings"]} == {
        (24, 2), (46, 2), (64, 2), (46, 1), (46, 4)}  # the preset's start is timed too
    assert "kt_cpuinfer=46, kt_threadpool_count=4: decode" in done.stderr


@pytest.mark.parametrize("bad", [["--threads", "0"], ["--seconds", "0"]])
def test_bad_microbench_input_is_refused_before_any_child(tmp_path, bad):
    done = launch_cli("microbench", "--preset", "single-gpu", *bad, env=cli_env(tmp_path))
    assert done.returncode == 2 and "error:" in done.stderr


def sim_settings():
    return single_gpu().replace(port=free_port(), model_path=BUNDLED, kt_weight_path=BUNDLED)


def test_tune_confirms_the_kernels_choice_with_one_relaunch_instead_of_searching(tmp_path, monkeypatch):
    """On the sim playing a 48-core, 4-node host, the speed model would try 94 threads first; the (stand-in)
    kernel ran 46 threads in 4 pools fastest, so that is the one trial, and no other thread or pool count runs."""
    for key, value in cli_env(tmp_path, PYTHONPATH=str(FAKE), FAKE_KT_BEST="46,4").items():
        monkeypatch.setenv(key, value)
    host = load_host_file(HOSTS / "two-socket-h200.json")
    lines: list[str] = []
    request = TuneRequest(sim_settings(), Engine("sim", sys.executable),
                          load_model_shape(None), host, ("kt_cpuinfer", "kt_threadpool_count"), 180.0, "single-gpu",
                          microbench=True, kernel=TINY, microbench_s=0.05)
    try:
        result = Tuner(request, Supervisor(tmp_path), ProfileStore(tmp_path / "profiles"), tmp_path,
                       lines.append).run()
    finally:
        stop_left_engine(tmp_path)
    doc = result.to_json()
    assert doc["microbench"]["best"] == {"kt_cpuinfer": 46, "kt_threadpool_count": 4}
    assert [t["settings"] for t in doc["trials"]] == [{"kt_cpuinfer": 46, "kt_threadpool_count": 4}]
    assert doc["trials"][0]["ok"] and doc["best"]["settings"] == {"kt_cpuinfer": 46, "kt_threadpool_count": 4}
    assert result.relaunches <= 3  # the baseline, the confirmation, the final relaunch of the best
    assert any("relaunches confirm it" in line for line in lines)


def test_tune_without_kt_kernel_falls_back_to_relaunches(tmp_path, monkeypatch):
    for key, value in cli_env(tmp_path).items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("PYTHONPATH", raising=False)
    lines: list[str] = []
    request = TuneRequest(sim_settings(), Engine("sim", sys.executable),
                          load_model_shape(None), load_host_file(HOSTS / "two-socket-h200.json"),
                          ("kt_threadpool_count",), 180.0, "single-gpu", microbench=True, kernel=TINY)
    try:
        result = Tuner(request, Supervisor(tmp_path), ProfileStore(tmp_path / "profiles"), tmp_path,
                       lines.append).run()
    finally:
        stop_left_engine(tmp_path)
    assert any("no microbenchmark (kt-kernel cannot be loaded" in line for line in lines)
    assert result.microbench is None and result.trials  # the relaunches searched the pools instead
