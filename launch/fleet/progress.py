"""A fleet's progress as lines: each change of its state, the router's URL once it is ready, and each launched
worker that dies, restarts and comes back. `fleet serve` prints them; `app.py --fleet` follows the fleet on a
thread and prints the same lines to its log."""

from __future__ import annotations

import threading
import time
from typing import TextIO

from launch.fleet.supervisor import FleetSnapshot, FleetState, FleetSupervisor, WorkerStatus

EVERY_S = 0.2


class FleetProgress:
    """Prints what changed since the last snapshot it was given, each line stamped with the seconds since it
    was made."""

    def __init__(self, out: TextIO, prefix: str = "") -> None:
        self._out, self._prefix = out, prefix
        self._started = time.monotonic()
        self._last = ""
        self._workers: tuple[WorkerStatus, ...] = ()

    def report(self, snap: FleetSnapshot) -> None:
        stamp = f"{self._prefix}[{time.monotonic() - self._started:6.1f}s]"
        now = f"{snap.state.value}: {snap.detail}"
        if now != self._last:
            self._print(f"{stamp} {now}")
            if snap.state is FleetState.READY and not self._last.startswith("ready"):
                self._print(f"{self._prefix}router: {snap.router_url}")
            self._last = now
        for line in worker_changes(self._workers, snap.workers):
            self._print(f"{stamp}   {line}")
        self._workers = snap.workers

    def _print(self, line: str) -> None:
        print(line, file=self._out, flush=True)


def worker_changes(before: tuple[WorkerStatus, ...], now: tuple[WorkerStatus, ...]) -> list[str]:
    """A line for each launched worker whose state or place in the router changed (a death, a restart)."""
    seen = {w.url: w for w in before}
    lines = []
    for i, worker in enumerate(now, 1):
        old = seen.get(worker.url)
        if worker.launched and old is not None and (old.state, old.in_router) != (worker.state, worker.in_router):
            where = "in the router" if worker.in_router else "out of the router"
            lines.append(f"worker {i} {worker.url}: {worker.state} ({worker.detail}), {where}")
    return lines


def follow_fleet(supervisor: FleetSupervisor, out: TextIO, prefix: str = "fleet ") -> threading.Thread:
    """Report the fleet's progress to `out` from a daemon thread until it fails or is stopped."""

    def follow() -> None:
        progress = FleetProgress(out, prefix)
        while True:
            snap = supervisor.snapshot()
            if snap.state in (FleetState.STOPPING, FleetState.STOPPED):
                return
            progress.report(snap)
            if snap.state is FleetState.FAILED:
                return
            time.sleep(EVERY_S)

    thread = threading.Thread(target=follow, name="fleet-progress", daemon=True)
    thread.start()
    return thread
