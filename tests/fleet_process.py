"""`python -m launch fleet serve` as a real subprocess: its output read live, its processes found by pid (the
router's from its own output, each worker's from its state file), and always stopped."""

from __future__ import annotations

import json
import os
import random
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import psutil
import pytest

from launch.fleet.spec import Fleet
from launch.fleet.supervisor import FleetSupervisor
from launch.process_group import group_members
from launch.run_state import read_run_state
from tests.sim_process import FAST_ENV, ROOT
from tests.stacks import wait_or_explain

# Below Linux's ephemeral range (32768-60999): a port the kernel hands to some outbound connection between this
# check and the fleet's start (a router's exporter once lost its port so under pytest-xdist) is never one of these.
BLOCK_PORTS = range(20000, 32000)


def free_block(count: int) -> int:
    """The first of `count` consecutive free ports on loopback (a router and its exporter, a run of workers)."""
    for _ in range(100):
        first = random.randrange(BLOCK_PORTS.start, BLOCK_PORTS.stop - count)
        if all(_bindable(first + i) for i in range(count)):
            return first
    raise RuntimeError(f"no {count} consecutive free ports")


def _bindable(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False


@dataclass
class FleetProcess:
    proc: subprocess.Popen[str]
    run_root: Path
    lines: list[str] = field(default_factory=list)

    @property
    def output(self) -> str:
        return "\n".join(self.lines)

    def wait_for(self, pattern: str, timeout: float = 90.0, since: int = 0) -> re.Match[str]:
        """The first output line from line `since` on that matches."""
        regex = re.compile(pattern)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in self.lines[since:]:
                if found := regex.search(line):
                    return found
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        raise AssertionError(f"no line matching {pattern!r}; output:\n{self.output[-3000:]}")

    @property
    def router_pid(self) -> int:
        return int(self.wait_for(r"starting the router \(pid (\d+)\)").group(1))

    def worker_dirs(self) -> list[Path]:
        (fleet_dir,) = (self.run_root / "fleets").iterdir()
        return sorted(fleet_dir.glob("worker-*"))

    def worker_pid(self, index: int) -> int | None:
        state = read_run_state(self.worker_dirs()[index])
        return state.pid if state else None

    def processes(self) -> list[psutil.Process]:
        """Every live process of the fleet: the router's group and each worker's."""
        pids = [self.router_pid, *(p for i in range(len(self.worker_dirs())) if (p := self.worker_pid(i)))]
        return [proc for pid in pids for proc in group_members(pid)]

    def interrupt(self, timeout: float = 60.0) -> int:
        self.proc.send_signal(signal.SIGINT)
        return wait_or_explain(self.proc, timeout)

    def kill(self) -> None:
        """Teardown after a failed test: no process may outlive it."""
        leftovers = self.processes() if (self.run_root / "fleets").is_dir() else []
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        for proc in leftovers:
            if proc.is_running():
                proc.kill()


def start_fleet(args: Sequence[str], run_root: Path, env: dict[str, str] | None = None) -> FleetProcess:
    full_env = {**os.environ, **FAST_ENV, **(env or {}), "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "launch", "fleet", "serve", "--run-root", str(run_root), *args],
                            cwd=ROOT, env=full_env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    fleet = FleetProcess(proc, run_root)

    def read() -> None:
        for line in proc.stdout:  # type: ignore[union-attr]
            fleet.lines.append(line.rstrip("\n"))

    threading.Thread(target=read, daemon=True).start()
    return fleet


def write_fleet_file(folder: Path, workers: int = 2, policy: str = "round_robin") -> tuple[Path, str]:
    """A fleet file for `app.py --fleet`: `workers` simulated engines recording expert routing (the stat recorder,
    GPU masks dumped) behind the router on free ports; the file and the router's URL."""
    router_port, first = free_block(2), free_block(workers)
    recorder = {"expert_distribution_recorder_mode": "stat", "expert_distribution_recorder_buffer_size": -1,
                "record_kt_gpu_expert_distribution": True}
    path = folder / "fleet.json"
    path.write_text(json.dumps({"engine": "sim", "router": {"port": router_port, "policy": policy},
                                "base": {"preset": "single-gpu", "set": {"host": "127.0.0.1", **recorder}},
                                "workers": [{"port": first + i} for i in range(workers)]}))
    return path, f"http://127.0.0.1:{router_port}"


@contextmanager
def serving_fleet(fleet: Fleet, run_root: Path, env: dict[str, str] | None = None) -> Iterator[FleetSupervisor]:
    """`fleet` run in this process by a FleetSupervisor (its simulated workers with FAST_ENV and `env`), ready,
    and stopped after the block."""
    with pytest.MonkeyPatch.context() as patch:
        for key, value in {**FAST_ENV, **(env or {})}.items():
            patch.setenv(key, value)
        supervisor = FleetSupervisor(fleet, run_root)
        supervisor.start()
        try:
            assert supervisor.wait_ready(120), supervisor.snapshot()
            yield supervisor
        finally:
            supervisor.stop()
