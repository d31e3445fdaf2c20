"""`python app.py --fleet FILE`: the app runs the fleet (its workers and the real sglang-router), chats through
the router, and leaves no process when it stops; a bad fleet file stops it before anything starts."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from launch.run_state import read_run_state
from tests.app_process import RunningApp, running_app
from tests.fleet_checks import healthy_workers
from tests.fleet_process import free_block
from tests.sim_process import FAST_ENV, ROOT
from tests.sim_sse import stream_chat

pytest.importorskip("sglang_router")


def test_the_app_runs_a_fleet_and_chats_through_its_router(tmp_path: Path) -> None:
    router_port, first = free_block(2), free_block(2)
    path = tmp_path / "fleet.json"
    path.write_text(json.dumps({"engine": "sim", "router": {"port": router_port},
                                "base": {"preset": "single-gpu", "set": {"host": "127.0.0.1"}},
                                "workers": [{"port": first}, {"port": first + 1}]}))
    router = f"http://127.0.0.1:{router_port}"
    with running_app(tmp_path, "--fleet", str(path), timeout=120) as app:
        deadline = time.monotonic() + 120
        workers = {f"http://127.0.0.1:{first}", f"http://127.0.0.1:{first + 1}"}
        while healthy_workers(router) != workers:
            assert time.monotonic() < deadline, app.log()[-3000:]
            time.sleep(0.3)
        # the one-engine sampler watches neither the router (which serves no /v1/loads) nor a worker: the fleet
        # monitor reads each worker
        assert "monitor now watches no engine" in app.log() and "monitor now watches http" not in app.log()
        answer = stream_chat(router, {"model": "MiniMax-M3", "messages": [{"role": "user", "content": "Hi"}],
                                      "max_tokens": 8})
        assert answer.finish_reason in ("stop", "length")
        # the fleet's progress is in the app's log, as `fleet serve` prints it: ready, its router, a death and back
        _until_logged(app, rf"fleet \[ *[\d.]+s\] ready: serving on {router} with 2 of 2 workers")
        assert f"fleet router: {router}" in app.log()
        (fleet_dir,) = (app.data_dir / "fleets").iterdir()
        state = read_run_state(fleet_dir / "worker-1")
        assert state is not None
        before = len(app.log())
        os.kill(state.pid, signal.SIGKILL)
        _until_logged(app, rf"degraded: serving on {router} with 1 of 2 workers", before)
        _until_logged(app, rf"worker 1 http://127\.0\.0\.1:{first}: (failed|starting) .*out of the router", before)
        _until_logged(app, rf"worker 1 http://127\.0\.0\.1:{first}: ready .*in the router", before)
        _until_logged(app, rf"ready: serving on {router} with 2 of 2 workers", before)
    # running_app checked that no process of the app (router and workers included) is left


def _until_logged(app: RunningApp, pattern: str, since: int = 0, timeout: float = 90.0) -> None:
    """Wait for a line matching `pattern` in the app's log, from character `since` on."""
    deadline = time.monotonic() + timeout
    while not re.search(pattern, app.log()[since:]):
        assert time.monotonic() < deadline, f"no {pattern!r} in the app's log:\n{app.log()[-3000:]}"
        time.sleep(0.2)


def test_a_bad_fleet_file_stops_the_app_before_anything_starts(tmp_path: Path) -> None:
    path = tmp_path / "fleet.json"
    path.write_text(json.dumps({"engine": "sim", "workers": [{"port": 1, "prot": 2}]}))
    done = subprocess.run([sys.executable, "app.py", "--fleet", str(path), "--data-dir", str(tmp_path / "data")],
                          cwd=ROOT, capture_output=True, text=True, timeout=120, env={**os.environ, **FAST_ENV})
    assert done.returncode == 2
    assert "workers[1]: unknown key(s) prot" in done.stderr
    assert not (tmp_path / "data" / "fleets").exists()
    both = subprocess.run([sys.executable, "app.py", "--fleet", str(path), "--endpoint", "http://h:1"], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert both.returncode == 2 and "--fleet" in both.stderr
