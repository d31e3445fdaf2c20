"""The supervisor with real processes: phases, readiness over HTTP, stopping whole process groups, crash
diagnosis, and recovery of an engine left behind by a killed app.

The stand-in engines are small Python programs installed as the engine's "python": the supervisor runs
them exactly as it runs sglang (`<python> -m sglang.launch_server --flags...`), and they print the
contract's log lines and serve /health and /v1/models on the --port they are given.
"""

import dataclasses
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest

from launch.command import Engine
from launch.diagnosis import FailureCause, SizingContext
from launch.health import engine_url, probe_readiness
from launch.model_config import load_model_shape
from launch.phases import Phase
from launch.preflight import free_port
from launch.presets import single_gpu
from launch.recovery import RecoveryAction, recover
from launch.run_state import read_run_state, state_path, write_run_state
from launch.settings import LaunchSettings
from launch.supervisor import EngineBusyError, EngineState, Supervisor
from tests.stacks import wait_or_explain

ROOT = Path(__file__).resolve().parent.parent
API_KEY = "sk-test"

PRELUDE = '''
import json, subprocess, sys, threading, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
ARGS = sys.argv
PORT = int(ARGS[ARGS.index("--port") + 1])
KEY = ARGS[ARGS.index("--api-key") + 1] if "--api-key" in ARGS else None
if "--config" in ARGS:  # as sglang's prepare_server_args: the YAML file's keys are flags
    import yaml
    KEY = yaml.safe_load(open(ARGS[ARGS.index("--config") + 1])).get("api-key", KEY)
READY = threading.Event()

def log(message):
    print(f"[2026-11-29 19:07:13 TP0] {message}", flush=True)

def sleeper(**kw):
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"], **kw)

class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        body = b""
        if self.path == "/health":
            code = 200 if READY.is_set() else 503
        elif self.path == "/v1/models" and KEY and self.headers.get("Authorization") != f"Bearer {KEY}":
            code, body = 401, b'{"error":"Unauthorized"}'
        elif self.path == "/v1/models":
            code, body = 200, json.dumps({"object": "list", "data": [{"id": "MiniMax-M3"}]}).encode()
        else:
            code = 404
        self.send_response(code)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass

def serve_and_get_ready():
    server = ThreadingHTTPServer(("127.0.0.1", PORT), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print(f"INFO:     Uvicorn running on http://127.0.0.1:{PORT} (Press CTRL+C to quit)", flush=True)
    time.sleep(0.3)  # the warm-up request: /health is 503 until it ends
    READY.set()
    log("The server is fired up and ready to roll!")
'''

STARTS_UP = '''
kids = [sleeper(), sleeper(start_new_session=True)]  # one grandchild even leaves the process group
log("Init torch distributed begin.")
log("Load weight begin. avail mem=93.12 GB")
for layer in (3, 4, 5, 6):
    print(f"[NativeMoEWrapper Layer {layer}] load_experts: 1.0ms, total: 2.0ms", flush=True)
    time.sleep(0.1)
log("Load weight end. elapsed=1.00 s, type=X, dtype=bf16, avail mem=60.00 GB, mem usage=33.00 GB.")
log("KV Cache is allocated. #tokens: 181340, K size: 12.21 GB, V size: 12.21 GB")
log("Capture cuda graph begin. This can take up to several minutes. avail mem=11.20 GB")
log("Capture cuda graph end. Time elapsed: 0.10 s. mem usage=0.35 GB. avail mem=10.85 GB.")
log("max_total_num_tokens=181340, chunked_prefill_size=4096, max_prefill_tokens=16384, "
    "max_running_requests=48, context_len=1048576, available_gpu_mem=10.85 GB")
serve_and_get_ready()
while True:
    time.sleep(1)
'''

IGNORES_SIGTERM = '''
import signal
signal.signal(signal.SIGTERM, signal.SIG_IGN)
kid = sleeper()
log("Init torch distributed begin.")
while True:
    time.sleep(1)
'''

KV_POOL_CRASH = '''
kid = sleeper()
log("Load weight begin. avail mem=93.12 GB")
log("Load weight end. elapsed=1.00 s, type=X, dtype=bf16, avail mem=60.00 GB, mem usage=33.00 GB.")
log("Scheduler hit an exception: Traceback (most recent call last):")
print('  File "scheduler.py", line 3245, in run_scheduler_process', flush=True)
print("RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. "
      "Current value: self.server_args.mem_fraction_static=0.85", flush=True)
log("Rank 0 scheduler is dead. Please check if there are relevant logs.")
time.sleep(0.2)
sys.exit(1)
'''

SERVES_ONLY = '''
serve_and_get_ready()
while True:
    time.sleep(1)
'''

SILENT = '''
log("Init torch distributed begin.")
while True:
    time.sleep(1)
'''


def fake_engine(tmp_path: Path, body: str) -> Engine:
    """An executable that stands in for the engine's Python interpreter."""
    path = tmp_path / f"fake-python-{len(list(tmp_path.glob('fake-python-*')))}"
    path.write_text(f"#!{sys.executable}\n{PRELUDE}\n{textwrap.dedent(body)}")
    path.chmod(0o755)
    return Engine(kind="sglang", python=str(path))


def settings(**changes) -> LaunchSettings:
    return LaunchSettings(model_path="/models/fake", host="127.0.0.1", port=free_port(), api_key=API_KEY,
                          kt_num_gpu_experts=4, mem_fraction_static=0.85).replace(**changes)


def descendants(pid: int) -> list[int]:
    return [p.pid for p in psutil.Process(pid).children(recursive=True)]


def wait_for(predicate, timeout: float = 10.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def assert_all_gone(pids: list[int]) -> None:
    wait_for(lambda: not any(alive(p) for p in pids), 5.0, f"processes {pids} to end")


def kill_leftovers(pids: list[int]) -> None:
    """Test hygiene: only the processes this test started, by id."""
    for pid in pids:
        if alive(pid):
            os.kill(pid, signal.SIGKILL)


@pytest.fixture
def supervisor(tmp_path):
    sup = Supervisor(tmp_path / "m3ui", tick_s=0.05)
    yield sup
    sup.close(grace=1)


def test_start_tracks_phases_to_ready_and_stop_leaves_no_process_behind(tmp_path, supervisor):
    info = supervisor.start(settings(), fake_engine(tmp_path, STARTS_UP), moe_layers=4)
    seen = set()
    wait_for(lambda: seen.add(supervisor.snapshot().phase) or supervisor.state is not EngineState.STARTING,
             15, "ready")
    snap = supervisor.snapshot()
    assert snap.state is EngineState.READY and snap.phase is Phase.READY and snap.progress == 1.0
    assert snap.readiness.ready and snap.readiness.model_ids == ("MiniMax-M3",)
    assert Phase.LOADING_WEIGHTS in seen or Phase.WARMUP in seen
    assert info.run_dir.parent == tmp_path / "m3ui" / "runs"
    assert "Init torch distributed begin." in info.log_path.read_text()
    command_text = (info.run_dir / "command.sh").read_text()
    assert "--model-path /models/fake" in command_text and API_KEY not in command_text
    family = [info.pid, *descendants(info.pid)]
    assert len(family) == 3
    assert read_run_state(tmp_path / "m3ui").pid == info.pid

    supervisor.stop(grace=5)
    assert supervisor.state is EngineState.STOPPED
    assert_all_gone(family)
    assert not state_path(tmp_path / "m3ui").exists()


def test_kt_layer_lines_become_load_progress_over_the_moe_layer_count(tmp_path, supervisor):
    supervisor.start(settings(), fake_engine(tmp_path, STARTS_UP), moe_layers=8)
    wait_for(lambda: "MoE layers" in supervisor.snapshot().phase_detail, 10, "KT progress")
    snap = supervisor.snapshot()
    assert snap.phase is Phase.LOADING_WEIGHTS and 0.05 < snap.progress < 0.75
    assert supervisor.wait_ready(10)
    assert "[NativeMoEWrapper Layer 6]" in "\n".join(supervisor.log_tail(100, filter="nativemoewrapper"))
    assert len(supervisor.log_tail(100, filter="NativeMoEWrapper")) == 4


def test_a_child_that_ignores_sigterm_is_killed_after_the_grace_period(tmp_path, supervisor):
    info = supervisor.start(settings(), fake_engine(tmp_path, IGNORES_SIGTERM))
    wait_for(lambda: len(descendants(info.pid)) == 1, 5, "the grandchild")
    family = [info.pid, *descendants(info.pid)]
    began = time.monotonic()
    supervisor.stop(grace=0.5)
    assert time.monotonic() - began >= 0.5
    assert_all_gone(family)


def test_a_crash_is_diagnosed_from_the_log_and_its_children_are_cleaned_up(tmp_path, supervisor):
    info = supervisor.start(settings(), fake_engine(tmp_path, KV_POOL_CRASH))
    wait_for(lambda: len(descendants(info.pid)) == 1, 5, "the grandchild")
    grandchild = descendants(info.pid)[0]
    assert not supervisor.wait_ready(10)
    snap = supervisor.snapshot()
    assert snap.state is EngineState.FAILED and snap.exit_code == 1
    assert snap.diagnosis.cause is FailureCause.KV_POOL_TOO_SMALL
    assert dict(snap.diagnosis.changes)["mem_fraction_static"] == 0.9
    assert_all_gone([grandchild])
    assert not state_path(tmp_path / "m3ui").exists()


def test_an_engine_that_never_gets_ready_fails_at_the_startup_timeout(tmp_path):
    sup = Supervisor(tmp_path / "m3ui", tick_s=0.05, startup_timeout_s=0.8)
    try:
        info = sup.start(settings(), fake_engine(tmp_path, SILENT))
        assert not sup.wait_ready(10)
        snap = sup.snapshot()
        assert snap.diagnosis.cause is FailureCause.STARTUP_TIMEOUT and "starting" in snap.diagnosis.title
        assert_all_gone([info.pid])
    finally:
        sup.close(grace=1)


def test_start_refuses_while_an_engine_runs_and_restart_starts_a_fresh_one(tmp_path, supervisor):
    first = supervisor.start(settings(), fake_engine(tmp_path, SILENT))
    with pytest.raises(EngineBusyError):
        supervisor.start(settings(), fake_engine(tmp_path, SILENT))
    second = supervisor.restart(grace=2)
    assert second.pid != first.pid and second.run_dir != first.run_dir
    assert_all_gone([first.pid])
    assert alive(second.pid)


def test_attach_watches_an_external_endpoint_and_stop_only_detaches(tmp_path, supervisor):
    s = settings()
    engine = fake_engine(tmp_path, SERVES_ONLY)
    external = subprocess.Popen([engine.python, "-m", "sglang.launch_server", "--port", str(s.port),
                                 "--api-key", API_KEY], stdout=subprocess.DEVNULL, start_new_session=True)
    try:
        url = f"http://127.0.0.1:{s.port}"
        supervisor.attach(url, API_KEY)
        assert supervisor.wait_ready(10)
        assert supervisor.snapshot().mode == "attached"
        # ready means /v1/models answers too, and it is behind the key; /health alone is not enough
        assert probe_readiness(url).models_status == 401 and not probe_readiness(url).ready
        assert not probe_readiness(url, "sk-wrong").ready
        assert probe_readiness(url, API_KEY).ready
        supervisor.stop()
        assert supervisor.state is EngineState.STOPPED
        assert external.poll() is None
    finally:
        os.killpg(external.pid, signal.SIGKILL)
        external.wait()


def test_readiness_probe_of_a_closed_port_says_why_and_wildcard_hosts_are_reached_on_loopback():
    result = probe_readiness(f"http://127.0.0.1:{free_port()}")
    assert not result.ready and result.error
    assert engine_url(settings(host="0.0.0.0", port=8000)) == "http://127.0.0.1:8000"
    assert engine_url(settings(host="::1", port=8000)) == "http://[::1]:8000"


def test_readiness_probe_of_a_malformed_url_reports_it_instead_of_raising():
    result = probe_readiness("http://127.0.0.1:notaport")
    assert not result.ready and "InvalidURL" in (result.error or "")


APP = '''
import sys, time
from pathlib import Path
from launch.command import Engine
from launch.settings import LaunchSettings
from launch.supervisor import Supervisor, install_signal_handlers
root, fake, port = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
sup = Supervisor(root, tick_s=0.05)
if "--handlers" in sys.argv:
    install_signal_handlers(sup)
sup.start(LaunchSettings(model_path="/models/fake", host="127.0.0.1", port=port, api_key="sk-test"),
          Engine(python=fake))
print("ready" if sup.wait_ready(20) else "not ready", flush=True)
time.sleep(60)
'''


def start_app(tmp_path: Path, *extra: str) -> tuple[subprocess.Popen, Path]:
    root = tmp_path / "m3ui"
    engine = fake_engine(tmp_path, STARTS_UP)
    app = subprocess.Popen([sys.executable, "-c", APP, str(root), engine.python, str(free_port()), *extra],
                           cwd=ROOT, stdout=subprocess.PIPE, text=True)
    assert app.stdout.readline().strip() == "ready"
    return app, root


def test_after_the_app_is_killed_recover_terminates_the_engine_it_left(tmp_path):
    app, root = start_app(tmp_path)
    state = read_run_state(root)
    family = [state.pid, *descendants(state.pid)]
    try:
        app.kill()
        app.wait()
        time.sleep(0.2)
        assert all(alive(p) for p in family)  # the engine outlives the app: it is in its own session
        with pytest.raises(EngineBusyError):
            Supervisor(root).start(settings(), fake_engine(tmp_path, SILENT))
        result = recover(root, grace=5)
        assert result.action is RecoveryAction.TERMINATED and result.pid == state.pid
        assert_all_gone(family)
        assert not state_path(root).exists()
        assert recover(root).action is RecoveryAction.NOTHING
    finally:
        kill_leftovers(family)


def test_after_the_app_is_killed_a_new_supervisor_can_re_attach_and_stop_it(tmp_path):
    app, root = start_app(tmp_path)
    state = read_run_state(root)
    family = [state.pid, *descendants(state.pid)]
    sup = Supervisor(root, tick_s=0.05)
    try:
        app.kill()
        app.wait()
        result = recover(root, adopt_into=sup)
        assert result.action is RecoveryAction.ATTACHED
        assert sup.wait_ready(10)
        snap = sup.snapshot()
        assert snap.pid == state.pid and snap.phase is Phase.READY
        assert any("fired up" in line for line in snap.log_lines)  # the log was replayed
        assert read_run_state(root).owner_pid == os.getpid()
        sup.stop(grace=5)
        assert_all_gone(family)
    finally:
        sup.close(grace=1)
        kill_leftovers(family)


def test_recover_leaves_alone_an_engine_whose_app_is_still_running(tmp_path):
    app, root = start_app(tmp_path, "--handlers")
    state = read_run_state(root)
    family = [state.pid, *descendants(state.pid)]
    try:
        assert recover(root).action is RecoveryAction.IN_USE
        assert all(alive(p) for p in family)
    finally:
        app.terminate()
        app.wait(timeout=20)
        kill_leftovers(family)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_an_app_stopped_by_a_signal_stops_its_engine_first(tmp_path, sig):
    app, root = start_app(tmp_path, "--handlers")
    state = read_run_state(root)
    family = [state.pid, *descendants(state.pid)]
    try:
        app.send_signal(sig)
        wait_or_explain(app, 40)
        assert_all_gone(family)
        assert not state_path(root).exists()
    finally:
        kill_leftovers(family)


def test_recover_cleans_a_state_file_whose_engine_already_exited(tmp_path, supervisor):
    info = supervisor.start(settings(), fake_engine(tmp_path, SILENT))
    saved = read_run_state(tmp_path / "m3ui")
    supervisor.stop(grace=2)
    # As if the app had died after its engine, and its pid now belonged to a newer process (as pid 1 in a
    # container does after every restart): a recycled pid is not the owner.
    write_run_state(tmp_path / "m3ui", dataclasses.replace(saved, owner_create_time=saved.owner_create_time - 100))
    result = recover(tmp_path / "m3ui")
    assert result.action is RecoveryAction.CLEANED and result.pid == info.pid
    assert not state_path(tmp_path / "m3ui").exists()



def test_recover_cleans_a_state_file_whose_settings_are_not_an_object(tmp_path):
    root = tmp_path / "m3ui"
    root.mkdir()
    state_path(root).write_text(json.dumps({
        "pid": 1, "pgid": 1, "create_time": 0, "owner_pid": 1, "owner_create_time": 0, "run_dir": str(tmp_path),
        "url": "http://127.0.0.1:1", "engine": {"kind": "sim", "python": "python"}, "settings": []}))
    assert read_run_state(root) is None
    assert recover(root).action is RecoveryAction.CLEANED and not state_path(root).exists()

# --- end to end on the simulated engine ---------------------------------------------------------------

SIM_WRITTEN = (ROOT / "launch" / "sim" / "__main__.py").exists()
needs_sim = pytest.mark.skipif(not SIM_WRITTEN, reason="launch/sim/__main__.py is not written yet")


@pytest.fixture
def fast_sim(monkeypatch):
    monkeypatch.setenv("M3UI_SIM_STARTUP_SECONDS", "0.5")


@needs_sim
def test_the_single_gpu_preset_starts_on_the_simulated_engine_and_stops_clean(tmp_path, supervisor, fast_sim):
    shape = load_model_shape(None)
    info = supervisor.start(single_gpu().replace(host="127.0.0.1", port=free_port()), Engine(kind="sim"),
                            moe_layers=shape.num_moe_layers)
    seen = []

    def record() -> bool:
        phase = supervisor.snapshot().phase
        if not seen or seen[-1] is not phase:
            seen.append(phase)
        return supervisor.state is not EngineState.STARTING

    wait_for(record, 30, "the simulated engine to be ready")
    assert supervisor.state is EngineState.READY, supervisor.snapshot().diagnosis
    assert seen[-1] is Phase.READY and Phase.LOADING_WEIGHTS in seen
    assert [p for p in Phase if p in seen] == seen  # in order, none backwards
    family = [info.pid, *descendants(info.pid)]
    supervisor.stop(grace=5)
    assert_all_gone(family)


@needs_sim
def test_too_many_gpu_experts_on_the_simulated_engine_fails_with_a_fix_that_works(tmp_path, supervisor, fast_sim):
    shape = load_model_shape(None)
    too_many = single_gpu().replace(host="127.0.0.1", port=free_port(), kt_num_gpu_experts=100)
    supervisor.start(too_many, Engine(kind="sim"), sizing=SizingContext(shape, 96e9))
    assert not supervisor.wait_ready(30)
    diagnosis = supervisor.snapshot().diagnosis
    assert diagnosis.cause is FailureCause.CUDA_OOM_AT_LOAD, diagnosis.render()
    (name, fewer), = diagnosis.changes
    assert name == "kt_num_gpu_experts" and fewer < 100
    supervisor.start(too_many.replace(kt_num_gpu_experts=fewer), Engine(kind="sim"),
                     sizing=SizingContext(shape, 96e9))
    assert supervisor.wait_ready(30), supervisor.snapshot().diagnosis
