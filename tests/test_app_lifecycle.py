"""`python app.py` on the simulated engine: serves, labels the sim, and never leaves an engine behind."""

import os
import re
import signal
import subprocess
import sys
import time

import httpx
import psutil
import pytest

from tests.app_process import FAST_SIM_ENV, ROOT, free_port, running_app


def _engines_of(pid: int) -> list[psutil.Process]:
    try:
        return [p for p in psutil.Process(pid).children(recursive=True) if "launch.sim" in " ".join(p.cmdline())]
    except psutil.NoSuchProcess:
        return []


def _alive(proc: psutil.Process) -> bool:
    """Running and not a zombie (an orphan nobody reaps stays a zombie in a container without init)."""
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_default_app_runs_the_simulated_engine_and_says_so(tmp_path):
    with running_app(tmp_path) as app:
        app.wait_engine_ready()
        page = httpx.get(app.url + "/config", timeout=10, trust_env=False).text
        assert "SIMULATED ENGINE" in page
        (engine,) = _engines_of(app.process.pid)
        assert "--expert-distribution-recorder-mode" in engine.cmdline()


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_signal_stops_the_engine_with_the_app(tmp_path, sig):
    with running_app(tmp_path) as app:
        app.wait_engine_ready()
        engines = _engines_of(app.process.pid)
        assert engines
        app.process.send_signal(sig)
        app.process.wait(timeout=30)
        gone, alive = psutil.wait_procs(engines, timeout=15)
        assert not alive, f"engine outlived the app: {[p.pid for p in alive]}"


def test_a_signal_stops_the_engine_while_an_answer_still_streams(tmp_path):
    """uvicorn's graceful shutdown waits for open responses; an answer streaming to a page (or a page's event
    stream) must not keep the app, and so its engine, running after Ctrl-C."""
    from gradio_client import Client

    with running_app(tmp_path, env={"M3UI_SIM_DECODE_TPS": "5"}) as app:  # a long answer: minutes at this pace
        app.wait_engine_ready()
        engines = _engines_of(app.process.pid)
        client = Client(app.url, verbose=False, download_files=False)
        job = client.submit("Count to 400", "disabled", 0.6, 0.95, 4096, 60, False, "", False, "", api_name="/send")
        deadline = time.monotonic() + 30
        while "Count to 400" not in str(job.outputs()[-1:]):  # the question is shown: the answer streams
            assert time.monotonic() < deadline, app.log()[-2000:]
            time.sleep(0.1)
        app.process.send_signal(signal.SIGTERM)
        app.process.wait(timeout=30)
        gone, alive = psutil.wait_procs(engines, timeout=15)
        assert not alive, f"engine outlived the app: {[p.pid for p in alive]}"
        assert "Traceback" not in app.log(), app.log()[-3000:]  # a cut stream is expected at shutdown
        client.close()


def test_a_killed_app_leaves_an_engine_the_next_start_takes_over(tmp_path):
    data = tmp_path / "data"
    env = {**os.environ, **FAST_SIM_ENV, "M3UI_DATA_DIR": str(data), "PYTHONUNBUFFERED": "1"}
    log = open(tmp_path / "first.log", "wb")  # noqa: SIM115 - closed below
    first = subprocess.Popen([sys.executable, "app.py", "--port", str(free_port())], cwd=ROOT, env=env,
                             stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while not _engines_of(first.pid) or not list(data.glob("runs/*/engine.log")):
            assert time.monotonic() < deadline, (tmp_path / "first.log").read_text()
            time.sleep(0.2)
        (engine,) = _engines_of(first.pid)
        first.send_signal(signal.SIGKILL)  # no handler runs: the engine is left behind
        first.wait(timeout=10)
        assert _alive(engine)
    finally:
        log.close()
    with running_app(tmp_path, data_dir=data) as app:
        app.wait_engine_ready()
        assert _alive(engine), "the left engine should be re-attached, not killed and replaced"
        assert _engines_of(app.process.pid) == [], "a second engine was started"
        assert "re-attached" in app.log()
    assert not _alive(engine), "the re-attached engine must stop with the app that took it over"


def test_attaching_to_a_simulated_engine_still_shows_the_simulated_badge(tmp_path):
    from tests.sim_process import free_port as sim_port
    from tests.sim_process import running_sim, sim_settings

    with running_sim(sim_settings(sim_port())) as sim, running_app(tmp_path, "--endpoint", sim.url + "/v1") as app:
        deadline = time.monotonic() + 90  # the app's probe of the endpoint, on a busy CI host
        while "External engine ready" not in (page := httpx.get(app.url + "/config", timeout=30,
                                                                trust_env=False).text):
            assert time.monotonic() < deadline, re.findall(r"(?:External|Simulated) engine[^<\"]{0,160}", page)
            time.sleep(0.5)
        assert "SIMULATED ENGINE" in page
