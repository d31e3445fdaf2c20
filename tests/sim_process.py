"""Start the simulated engine as a real subprocess on a free port, read its output live, always stop it."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from launch.command import Engine as CommandEngine
from launch.command import build_command
from launch.presets import single_gpu
from launch.settings import LaunchSettings

ROOT = Path(__file__).resolve().parent.parent
FAST_ENV = {"M3UI_SIM_STARTUP_SECONDS": "0.3", "M3UI_SIM_UNTHROTTLED": "1"}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def sim_settings(port: int, **changes: object) -> LaunchSettings:
    """The seed's single-GPU preset on 127.0.0.1:port (the model path has no config.json: bundled shape)."""
    return single_gpu().replace(host="127.0.0.1", port=port, **changes)


@dataclass
class SimProcess:
    proc: subprocess.Popen[str]
    port: int
    lines: list[tuple[float, str]] = field(default_factory=list)  # (arrival time, line), stdout and stderr

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def output(self) -> str:
        return "\n".join(line for _, line in list(self.lines))

    def wait_for_line(self, pattern: str, timeout: float = 20.0) -> tuple[float, str]:
        regex = re.compile(pattern)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for seen in list(self.lines):
                if regex.search(seen[1]):
                    return seen
            if self.proc.poll() is not None and not self._readers_alive():
                break
            time.sleep(0.01)
        raise AssertionError(f"no line matching {pattern!r}; output:\n{self.output[-3000:]}")

    def wait_ready(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"sim exited with {self.proc.returncode}:\n{self.output[-3000:]}")
            try:
                if httpx.get(f"{self.url}/health", timeout=1).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.05)
        raise AssertionError(f"sim not ready after {timeout}s:\n{self.output[-3000:]}")

    def wait_exit(self, timeout: float = 30.0) -> int:
        code = self.proc.wait(timeout=timeout)
        for reader in self._readers:
            reader.join(timeout=5)
        return code

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)

    def _readers_alive(self) -> bool:
        return any(r.is_alive() for r in self._readers)

    def start_readers(self) -> None:
        self._readers = [threading.Thread(target=self._read, args=(stream,), daemon=True)
                         for stream in (self.proc.stdout, self.proc.stderr)]
        for reader in self._readers:
            reader.start()

    def _read(self, stream: object) -> None:
        for line in stream:  # type: ignore[attr-defined]
            self.lines.append((time.monotonic(), line.rstrip("\n")))


def launch_sim(argv: Sequence[str], port: int, env: dict[str, str] | None = None) -> SimProcess:
    full_env = {**os.environ, **FAST_ENV, **(env or {}), "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(list(argv), cwd=ROOT, env=full_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    sim = SimProcess(proc, port)
    sim.start_readers()
    return sim


@pytest.fixture
def start_sim() -> Iterator[object]:
    """`start_sim(settings, env=None, extra=())` → SimProcess, launched with the command the launch core builds."""
    started: list[SimProcess] = []

    def start(settings: LaunchSettings, env: dict[str, str] | None = None, extra: Sequence[str] = ()) -> SimProcess:
        command = build_command(settings, CommandEngine(kind="sim"))
        sim = launch_sim([*command.argv, *extra], settings.port, {**dict(command.env), **(env or {})})
        started.append(sim)
        return sim

    yield start
    for sim in started:
        sim.stop()


@contextmanager
def running_sim(settings: LaunchSettings, env: dict[str, str] | None = None) -> Iterator[SimProcess]:
    """A ready sim for a whole module of tests."""
    command = build_command(settings, CommandEngine(kind="sim"))
    sim = launch_sim(command.argv, settings.port, {**dict(command.env), **(env or {})})
    try:
        sim.wait_ready()
        yield sim
    finally:
        sim.stop()
