"""Following the engine's log file: new bytes → whole lines, kept in a ring buffer like a terminal shows them.

tqdm redraws its bar with `\\r`; a terminal overwrites the line, so the ring buffer does too (the phase
parser still sees every update). The file itself keeps every byte, up to a bound: past LOG_ROTATE_BYTES it is
copied to `<log>.1` (replacing the one before) and truncated in place — the engine appends through O_APPEND, so
its next line lands at the start of the emptied file (logrotate's copytruncate). Disk use stays under twice
the bound however long the engine runs.

A watched engine logs a request line for every poll m3ui makes (/health and /v1/models for readiness,
/v1/loads, /metrics and /server_info for the monitor, the expert recorder's start/dump), several per second.
They would push the start-up lines out of any tail and out of a diagnosis' evidence, so they are kept in a
ring of their own: `lines` has the engine's own lines, `tail(..., polling=True)` shows everything.
"""

from __future__ import annotations

import os
import re
import shutil
from collections import deque
from pathlib import Path
from typing import BinaryIO

from launch.command import SECRET_MASK

DEFAULT_MAX_LINES = 5000
_READ_CHUNK = 16 << 20  # per call: a re-attach replays a long log over a few ticks
LOG_ROTATE_BYTES = 64 << 20
_MAX_PENDING = 1 << 16  # a "line" longer than this is cut, so a runaway write cannot grow memory
_BREAK = re.compile(rb"\r\n|\n|\r")
# uvicorn's access line as sglang formats it: `127.0.0.1:51234 - "GET /v1/loads HTTP/1.1" 200`.
_POLLING_REQUEST = re.compile(
    r'"(?:GET|POST) /(?:health|health_generate|v1/models|v1/loads|metrics|server_info|get_server_info'
    r'|get_model_info|start_expert_distribution_record|dump_expert_distribution_record)(?:\?\S*)? HTTP/[\d.]+" \d{3}')


def is_polling_request(line: str) -> bool:
    return _POLLING_REQUEST.search(line) is not None


def mask_secrets(line: str, secrets: tuple[str, ...]) -> str:
    for secret in filter(None, secrets):
        line = line.replace(secret, SECRET_MASK)
    return line


class LogFollower:
    """Reads what was appended to a log file since the last `read_new()`. Not thread-safe: one reader."""

    def __init__(self, path: Path, max_lines: int = DEFAULT_MAX_LINES, secrets: tuple[str, ...] = (),
                 rotate_bytes: int = LOG_ROTATE_BYTES) -> None:
        self.path = path
        self._rotate_bytes = rotate_bytes
        self._secrets = secrets  # masked in every line handed out
        self.lines: deque[str] = deque(maxlen=max_lines)  # the engine's own lines, polling requests left out
        self._every: deque[str] = deque(maxlen=max_lines)  # every line, polling requests included
        self._offset = 0
        self._pending = b""
        self._overwrite_last = False  # the last line ended in `\r`: the next one replaces it

    def read_new(self, final: bool = False) -> list[str]:
        """The lines (and tqdm updates) completed since the last call; `final` also flushes a last
        unterminated line, for when the writer has exited."""
        data = self._read_bytes()
        out: list[str] = []
        buf = self._pending + data
        # A `\r` at the very end may be the first half of a `\r\n` still being written.
        scan = buf[:-1] if buf.endswith(b"\r") and not final else buf
        start = 0
        for match in _BREAK.finditer(scan):
            self._emit(buf[start:match.start()], match.group() == b"\r", out)
            start = match.end()
        self._pending = buf[start:]
        if len(self._pending) > _MAX_PENDING or (final and self._pending):
            self._emit(self._pending, False, out)
            self._pending = b""
        return out

    def tail(self, n: int, contains: str | None = None, polling: bool = False) -> tuple[str, ...]:
        """The last `n` lines, optionally only those containing `contains` (case-insensitive); `polling` also
        shows the request lines of m3ui's polls."""
        lines = list(self._every if polling else self.lines)
        if contains:
            needle = contains.lower()
            lines = [line for line in lines if needle in line.lower()]
        return tuple(lines[-n:]) if n > 0 else ()

    def _read_bytes(self) -> bytes:
        try:
            with open(self.path, "r+b") as f:
                if os.fstat(f.fileno()).st_size < self._offset:
                    self._offset = 0  # truncated by someone else: read it afresh
                f.seek(self._offset)
                data = f.read(_READ_CHUNK)
                self._offset += len(data)
                if self._offset >= self._rotate_bytes and len(data) < _READ_CHUNK:
                    data += self._rotate(f)
        except OSError:
            return b""
        return data

    def _rotate(self, f: BinaryIO) -> bytes:
        """Copy the log to `<log>.1` and empty it; returns what the engine wrote since the last read."""
        late = f.read()
        f.seek(0)
        rotated = self.path.with_name(self.path.name + ".1")
        fd = os.open(rotated, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)  # holds what the log held
        with open(fd, "wb") as out:
            shutil.copyfileobj(f, out)
        f.truncate(0)
        self._offset = 0
        return late

    def _emit(self, raw: bytes, carriage_return: bool, out: list[str]) -> None:
        if not raw.strip():
            return  # tqdm's leading `\r`, blank lines
        line = mask_secrets(raw.decode("utf-8", errors="replace"), self._secrets)
        out.append(line)
        for ring in (self._every,) if is_polling_request(line) else (self.lines, self._every):
            if self._overwrite_last and ring:
                ring[-1] = line
            else:
                ring.append(line)
        self._overwrite_last = carriage_return
