"""What a process that did not exit in time is doing: every thread's Python stack, by py-spy (a dev requirement),
for the failure message of a test that waited on it."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path


def wait_or_explain(proc: subprocess.Popen, timeout: float) -> int:
    """`proc.wait(timeout)`; past it, an AssertionError that carries the process's thread stacks."""
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"pid {proc.pid} did not exit within {timeout:g} s; its threads:\n"
                             f"{thread_stacks(proc.pid)}") from None


def thread_stacks(pid: int) -> str:
    py_spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    try:
        done = subprocess.run([py_spy, "dump", "--pid", str(pid)], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"(py-spy failed: {exc})"
    return (done.stdout + done.stderr)[-6000:]
