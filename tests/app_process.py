"""`python app.py` as a real process on free ports, with a private data folder, for end-to-end tests."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import psutil

from m3ui.web.urls import browse_url

ROOT = Path(__file__).resolve().parent.parent
# Fast, deterministic pacing of the simulated engine for tests.
FAST_SIM_ENV = {"M3UI_SIM_STARTUP_SECONDS": "0.5", "M3UI_SIM_DECODE_TPS": "400"}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class RunningApp:
    url: str  # http://127.0.0.1:PORT
    data_dir: Path
    process: subprocess.Popen[bytes]
    log_path: Path

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    @property
    def admin_url(self) -> str:
        """The admin URL the app printed (with this run's token when the admin has no password)."""
        found = re.search(r"\(admin: (\S+)\)", self.log())
        assert found, f"the app printed no admin URL:\n{self.log()[-2000:]}"
        return found.group(1)

    def wait_engine_ready(self, timeout: float = 60) -> None:
        """Until the header says the engine is ready (read from the served page's status endpoint)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            runs = self.data_dir / "runs"
            logs = sorted(runs.glob("*/engine.log")) if runs.is_dir() else []
            if logs and "The server is fired up and ready to roll!" in logs[-1].read_text(errors="replace"):
                return
            if self.process.poll() is not None:
                raise RuntimeError(f"app exited with {self.process.returncode}:\n{self.log()[-3000:]}")
            time.sleep(0.1)
        raise TimeoutError(f"engine not ready after {timeout}s:\n{self.log()[-3000:]}")


@contextmanager
def running_app(tmp_path: Path, *args: str, env: dict[str, str] | None = None, timeout: float = 60,
                data_dir: Path | None = None) -> Iterator[RunningApp]:
    """Start app.py (simulated engine unless args say otherwise); stop it and check no process is left.
    The URL uses the --host address when args give one."""
    port = free_port()
    host = args[args.index("--host") + 1] if "--host" in args else "127.0.0.1"
    data_dir = data_dir or tmp_path / "m3ui-data"
    log_path = tmp_path / "app.log"
    full_env = {**os.environ, **FAST_SIM_ENV, "M3UI_DATA_DIR": str(data_dir), "GRADIO_ANALYTICS_ENABLED": "False",
                "HF_HUB_OFFLINE": "1", "PYTHONUNBUFFERED": "1", **(env or {})}
    with open(log_path, "wb") as log:
        proc = subprocess.Popen([sys.executable, "app.py", "--port", str(port), *args], cwd=ROOT, env=full_env,
                                stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    app = RunningApp(browse_url(host, port).rstrip("/"), data_dir, proc, log_path)
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                if httpx.get(app.url + "/", timeout=2, trust_env=False).status_code < 500:
                    break
            except httpx.HTTPError:
                pass
            if proc.poll() is not None:
                raise RuntimeError(f"app exited with {proc.returncode}:\n{app.log()[-3000:]}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"app not serving after {timeout}s:\n{app.log()[-3000:]}")
            time.sleep(0.2)
        yield app
    finally:
        children = _descendants(proc.pid)
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=5)
        _, alive = psutil.wait_procs(children, timeout=10)
        for p in alive:
            p.kill()
        assert not alive, f"app left processes behind: {[p.pid for p in alive]}"


@contextmanager
def running_app_with_accounts(folder: Path, *people: tuple[str, ...]) -> Iterator[RunningApp]:
    """app.py with these (name, password[, role]) accounts in its data folder, so that the chat asks for a login."""
    from m3ui.accounts import AccountStore

    store = AccountStore.open(folder / "data")
    for person in people:
        store.add(*person)
    store.close()
    with running_app(folder, data_dir=folder / "data") as running:
        running.wait_engine_ready()
        yield running


def _descendants(pid: int) -> list[psutil.Process]:
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []
