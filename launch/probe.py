"""The one way probes touch the outside world: run a program or read a file, with a timeout, never raising.

A probe that fails returns its reason as data, so a caller can say "unknown, because ..." instead of
guessing or crashing a doctor report.
"""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

DEFAULT_TIMEOUT_S = 20.0
_STDERR_TAIL_CHARS = 400


@dataclass(frozen=True)
class ProbeResult:
    """What a program printed or a file held; `error` says why not, when the probe failed."""

    text: str
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


def run_command(argv: Sequence[str], timeout_s: float = DEFAULT_TIMEOUT_S) -> ProbeResult:
    """Run `argv` (no shell), return its stdout; a missing program, timeout or non-zero exit is an error."""
    try:
        done = subprocess.run(
            list(argv), stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout_s,
            text=True, errors="replace", check=False,
        )
    except subprocess.TimeoutExpired:
        return ProbeResult("", f"{argv[0]} did not answer within {timeout_s:g} s")
    except OSError as err:  # not found, not executable, not a file, ...
        return ProbeResult("", f"cannot run {argv[0]}: {err.strerror or err}")
    if done.returncode != 0:
        stderr = done.stderr.strip()[-_STDERR_TAIL_CHARS:]
        return ProbeResult(done.stdout, f"{argv[0]} exited with {done.returncode}" + (f": {stderr}" if stderr else ""))
    return ProbeResult(done.stdout)


def read_text(path: Path) -> ProbeResult:
    """The text of a (small, /proc or /sys) file, or why it could not be read."""
    try:
        return ProbeResult(path.read_text(encoding="utf-8", errors="replace"))
    except OSError as err:
        return ProbeResult("", f"cannot read {path}: {err.strerror or err}")
