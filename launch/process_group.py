"""The engine as a process group: started in its own session, stopped as a whole.

sglang forks scheduler and detokenizer processes (one scheduler per TP rank); killing only the top
process would orphan them with the GPUs still held. So the engine leads its own process group
(`start_new_session`), and stopping signals the whole group: SIGTERM, a grace period, then SIGKILL.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path

import psutil

from launch.command import Command
from launch.private_files import open_private_append

_POLL_S = 0.05


def spawn(command: Command, log_path: Path) -> subprocess.Popen[bytes]:
    """Start `command` with stdout and stderr appended to `log_path`.

    The engine writes the file itself (no pipe to this app), so it keeps running and logging if the app
    dies, and a restarted app can re-attach by reading the same file.
    """
    env = {**os.environ, **dict(command.env), "PYTHONUNBUFFERED": "1"}
    with open(open_private_append(log_path), "ab") as log:  # 0600: sglang logs its args, API key included
        return subprocess.Popen(
            list(command.argv), cwd=command.cwd, env=env, stdin=subprocess.DEVNULL,
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )


def create_time(pid: int) -> float | None:
    try:
        return psutil.Process(pid).create_time()
    except psutil.Error:
        return None


def is_running(pid: int, started: float) -> bool:
    """`pid` is alive, not a zombie, and is the very process that started at `started`."""
    try:
        proc = psutil.Process(pid)
        return abs(proc.create_time() - started) < 0.01 and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def group_members(pgid: int) -> list[psutil.Process]:
    """Live (non-zombie) processes of process group `pgid`."""
    members = []
    for proc in psutil.process_iter():
        try:
            if os.getpgid(proc.pid) == pgid and proc.status() != psutil.STATUS_ZOMBIE:
                members.append(proc)
        except (ProcessLookupError, psutil.Error):
            continue
    return members


def surviving_group(pgid: int, leader_started: float) -> list[psutil.Process]:
    """Live members of the group whose leader (pid == pgid) started at `leader_started`, leader included.
    If that pid now belongs to a newer process, the group with that id is someone else's (Linux never
    reuses a pid while a group of that id still exists)."""
    holder_started = create_time(pgid)
    if holder_started is not None and abs(holder_started - leader_started) >= 0.01:
        return []
    return group_members(pgid)


def _descendants(pid: int) -> list[psutil.Process]:
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.Error:
        return []


def _signal_all(pgid: int, extra: list[psutil.Process], sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)
    for proc in extra:  # children that left the group (setsid) still die with the engine
        with contextlib.suppress(psutil.Error):
            proc.send_signal(sig)


def _all_gone(pgid: int, extra: list[psutil.Process], leader: subprocess.Popen[bytes] | None) -> bool:
    if leader is not None:
        leader.poll()  # reap our own child so it does not linger as a zombie
    alive_extra = [p for p in extra if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    return not alive_extra and not group_members(pgid)


def _wait_gone(pgid: int, extra: list[psutil.Process], leader: subprocess.Popen[bytes] | None,
               timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            if _all_gone(pgid, extra, leader):
                return True
        except psutil.Error:
            pass
        if time.monotonic() >= deadline:
            return False
        time.sleep(_POLL_S)


def terminate_group(pgid: int, grace_s: float, leader: subprocess.Popen[bytes] | None = None) -> bool:
    """SIGTERM the group, wait up to `grace_s`, then SIGKILL what is left. True if it ended gracefully."""
    extra = [p for p in _descendants(pgid) if _pgid_of(p) != pgid]
    _signal_all(pgid, extra, signal.SIGTERM)
    if _wait_gone(pgid, extra, leader, grace_s):
        return True
    _signal_all(pgid, extra, signal.SIGKILL)
    _wait_gone(pgid, extra, leader, 5.0)
    return False


def _pgid_of(proc: psutil.Process) -> int | None:
    try:
        return os.getpgid(proc.pid)
    except ProcessLookupError:
        return None
