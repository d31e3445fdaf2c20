"""The router as a process group of its own, tracked by pid and start time.

sglang-router renames its process (`sglang::router`, setproctitle), so it is never looked up by command line:
the pid that spawn() returned, its create time (a recycled pid is never mistaken for it) and its group are all
that identify it.

It logs a line for every request it serves, so its log is bounded like the engine's: `follow_log()` (the fleet's
watcher calls it every tick) reads what was appended, and past LOG_ROTATE_BYTES copies the log to `router.log.1`
and empties it in place (launch/engine_log.py; the router appends through O_APPEND).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from launch import engine_log
from launch.command import Command
from launch.process_group import create_time, is_running, spawn, terminate_group

ROUTER_LOG_NAME = "router.log"
TAIL_BYTES = 64 << 10
KEPT_LINES = 200  # the follower's ring: the log's tail is read from the file (log_tail)


class RouterProcess:
    def __init__(self, command: Command, run_dir: Path) -> None:
        self.log_path = run_dir / ROUTER_LOG_NAME
        self._popen: subprocess.Popen[bytes] = spawn(command, self.log_path)
        self.pid = self._popen.pid  # it leads its own session: pid == process group id
        self.create_time = create_time(self.pid) or 0.0
        self._log = engine_log.LogFollower(self.log_path, KEPT_LINES, rotate_bytes=engine_log.LOG_ROTATE_BYTES)

    def alive(self) -> bool:
        return self._popen.poll() is None and is_running(self.pid, self.create_time)

    @property
    def exit_code(self) -> int | None:
        return self._popen.poll()

    def stop(self, grace_s: float) -> None:
        terminate_group(self.pid, grace_s, self._popen)

    def follow_log(self) -> None:
        """Read what the router appended; rotate the log once it passed the bound."""
        self._log.read_new()

    def log_tail(self, n: int = 20) -> list[str]:
        """The log's last lines, read from its last 64 KiB only (the router logs every request)."""
        try:
            with open(self.log_path, "rb") as log:
                log.seek(max(0, log.seek(0, 2) - TAIL_BYTES))
                return log.read().decode(errors="replace").splitlines()[-n:]
        except OSError:
            return []
