"""The admin actions on real engine processes (the simulated engine under the real supervisor): start, stop,
restart, preflight, an OOM diagnosis fixed in one click, roll back to the last good launch, attach, profiles,
and fields full of shell metacharacters that reach the engine as literal arguments."""

import shlex
import shutil
import socket
from pathlib import Path

import httpx
import psutil
import pytest

from launch.command import Engine
from launch.diagnosis import FailureCause
from launch.model_config import BUNDLED_M3_CONFIG
from launch.preflight import free_port
from launch.presets import preset
from launch.supervisor import COMMAND_FILE_NAME, EngineState
from m3ui.access import AccessPolicy
from m3ui.admin.console import AdminConsole, url_problem
from m3ui.services import AppServices
from tests.sim_process import FAST_ENV, launch_sim, sim_settings

BUNDLED = str(BUNDLED_M3_CONFIG.parent)
SIM = Engine("sim")
READY_S = 60


@pytest.fixture
def console(tmp_path, monkeypatch):
    for key, value in FAST_ENV.items():
        monkeypatch.setenv(key, value)
    services = AppServices.create(tmp_path / "data", AccessPolicy("127.0.0.1", "pw"))
    try:
        yield AdminConsole(services)
    finally:
        services.close()


def settings(**changes):
    return preset("single-gpu", BUNDLED).replace(host="127.0.0.1", port=free_port(), **changes)


def wait(console: AdminConsole, state: EngineState, timeout: float = READY_S) -> None:
    supervisor = console.services.supervisor
    supervisor.wait_ready(timeout)
    snap = console.snapshot()
    assert snap.state is state, (snap.state, snap.phase_detail, snap.diagnosis and snap.diagnosis.render(),
                                 "\n".join(supervisor.log_tail(30)))


def test_start_reaches_ready_then_stop_and_a_second_start_is_refused_while_it_runs(console):
    first = settings()
    outcome = console.start(first, SIM)
    assert outcome.ok, outcome
    wait(console, EngineState.READY)
    refused = console.start(settings(), SIM)
    assert refused.level == "error" and "already running" in refused.message
    assert console.services.link.settings == first
    assert console.stop().ok
    assert console.services.supervisor.state is EngineState.STOPPED
    assert console.stop().level == "info"  # nothing left to stop: said, not an error


def test_stop_then_start_again_on_the_same_port_after_clients_were_connected(console):
    same = settings()
    console.start(same, SIM)
    wait(console, EngineState.READY)
    with httpx.Client(trust_env=False) as keep_alive:  # connections the stop leaves in TIME_WAIT
        for _ in range(3):
            keep_alive.get(f"http://127.0.0.1:{same.port}/v1/models")
        console.stop()
    again = console.start(same, SIM)
    assert again.ok, again
    wait(console, EngineState.READY)


def test_restart_relaunches_with_new_settings_but_settings_with_errors_stop_nothing(console):
    console.start(settings(), SIM)
    wait(console, EngineState.READY)
    run_before = console.snapshot().run_dir
    bad = console.restart(settings(kt_num_gpu_experts=None), SIM)
    assert bad.level == "error" and any(f.field == "kt_num_gpu_experts" for f in bad.findings)
    assert console.snapshot().state is EngineState.READY and console.snapshot().run_dir == run_before
    changed = settings(kt_num_gpu_experts=6)
    assert console.restart(changed, SIM).ok
    wait(console, EngineState.READY)
    assert console.snapshot().run_dir != run_before and console.services.link.settings == changed


def test_preflight_accepts_the_port_of_the_engine_running_now_as_a_restart_target(console):
    running = settings()
    console.start(running, SIM)
    wait(console, EngineState.READY)
    outcome = console.preflight(running, SIM)
    assert outcome.ok
    assert [f.level for f in outcome.findings if f.check == "port"] == ["warning"]
    with socket.socket() as other:  # a port someone else listens on stays an error
        other.bind(("127.0.0.1", 0))
        other.listen()
        busy = console.preflight(running.replace(port=other.getsockname()[1]), SIM)
    assert busy.level == "error" and any(f.check == "port" and f.is_error for f in busy.findings)


def test_an_oom_is_diagnosed_and_the_suggested_change_relaunches_to_ready_then_roll_back(console):
    good = settings()
    console.start(good, SIM)
    wait(console, EngineState.READY)
    assert console.last_good.load().settings == good
    console.stop()
    too_many = settings(kt_num_gpu_experts=60)
    refused = console.start(too_many, SIM)
    assert refused.level == "error" and {f.check for f in refused.findings if f.is_error} == {"memory"}
    assert console.start(too_many, SIM, override_estimate=True).ok
    wait(console, EngineState.FAILED)
    diagnosis = console.diagnosis()
    assert diagnosis.cause is FailureCause.CUDA_OOM_AT_LOAD
    assert any("CUDA out of memory" in line for line in diagnosis.evidence)
    name, value = diagnosis.changes[0]
    assert name == "kt_num_gpu_experts" and value < 60
    fixed = console.apply_and_relaunch(diagnosis.changes[0])
    assert fixed.ok and fixed.settings == too_many.replace(kt_num_gpu_experts=value)
    wait(console, EngineState.READY)
    assert console.last_good.load().settings.kt_num_gpu_experts == value
    # A later bad change is rolled back to the launch that last reached ready.
    console.stop()
    assert console.start(settings(kt_num_gpu_experts=60), SIM, override_estimate=True).ok
    wait(console, EngineState.FAILED)
    rolled = console.roll_back()
    assert rolled.ok and rolled.settings.kt_num_gpu_experts == value
    wait(console, EngineState.READY)


NASTY = "m3; rm -rf / $(touch PWNED) `touch PWNED2` 'single' \"double\" | & > <"


def test_fields_with_shell_metacharacters_reach_the_engine_as_literal_arguments(console, tmp_path):
    model = tmp_path / "models" / "m3 $(touch PWNED); 'x' && echo"
    model.mkdir(parents=True)
    shutil.copy(BUNDLED_M3_CONFIG, model / "config.json")
    s = settings(model_path=str(model), kt_weight_path=str(model), served_model_name=NASTY)
    assert console.start(s, SIM).ok
    wait(console, EngineState.READY)
    snap = console.snapshot()
    argv = psutil.Process(snap.pid).cmdline()  # what the operating system ran
    assert argv[argv.index("--served-model-name") + 1] == NASTY
    assert argv[argv.index("--model-path") + 1] == str(model)
    written = (snap.run_dir / COMMAND_FILE_NAME).read_text()
    assert shlex.quote(NASTY) in written and shlex.split(written.replace("\\\n", " "))[1:].count(NASTY) == 1
    info = httpx.get(f"{snap.url}/server_info", timeout=5).json()
    assert info["served_model_name"] == NASTY and info["model_path"] == str(model)
    for where in (tmp_path, Path.cwd(), model.parent):
        assert not list(where.glob("PWNED*"))


def test_attach_watches_an_external_engine_and_stop_only_detaches(console):
    port = free_port()
    from launch.command import build_command

    sim = launch_sim(build_command(sim_settings(port), SIM).argv, port)
    try:
        sim.wait_ready()
        outcome = console.attach(f"http://127.0.0.1:{port}/v1", "")
        assert outcome.ok, outcome
        wait(console, EngineState.READY, 20)
        assert console.services.link.status().mode == "attached"
        assert console.attach(f"http://127.0.0.1:{port}", "").level == "error"  # one engine at a time
        console.stop()
        assert sim.proc.poll() is None  # someone else's engine keeps running
    finally:
        sim.stop()


@pytest.mark.parametrize("url", ["gpu-box:30000", "ftp://gpu-box", "http://", "http://a b", "http://h/?x=1"])
def test_attach_refuses_what_is_not_a_base_url(url):
    assert url_problem(url)


def test_profiles_save_load_delete_and_one_starts_with_the_app(console):
    a, b = settings(kt_num_gpu_experts=6), settings(tp_size=1)
    assert console.save_profile("box a", a, SIM, True).ok
    assert console.save_profile("box b", b, Engine("sglang", "/venv/bin/python"), False).ok
    assert console.save_profile("../escape", a, SIM, False).level == "error"
    loaded = console.load_profile("box b")
    assert loaded.settings == b and loaded.engine == Engine("sglang", "/venv/bin/python")
    store = console.services.profiles
    assert store.startup_profile().name == "box a"
    console.set_startup_profile("box b")
    assert store.startup_profile().name == "box b" and not store.load("box a").start_with_app
    console.set_startup_profile(None)
    assert store.startup_profile() is None
    assert console.delete_profile("box a").ok and store.names() == ["box b"]
    assert console.delete_profile("box a").level == "error"
    assert console.load_profile("nope").level == "error"
