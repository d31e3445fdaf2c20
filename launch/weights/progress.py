"""What a running download reports: bytes on disk, the rate over a sliding window, the ETA, the state."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Literal

from launch.weights.units import format_bytes, format_duration

DownloadState = Literal["planning", "verifying", "downloading", "done", "failed", "cancelled"]
FINAL_STATES: frozenset[DownloadState] = frozenset({"done", "failed", "cancelled"})

RATE_WINDOW_S = 10.0
_SAMPLE_SPACING_S = 0.1  # at most ~100 samples per window, however small the chunks


class RateMeter:
    """Bytes per second received over the last `window_s` seconds (not since the start: links change)."""

    def __init__(self, window_s: float = RATE_WINDOW_S) -> None:
        self._window_s = window_s
        self._samples: deque[tuple[float, int]] = deque()  # (time, bytes received so far)

    def add(self, now: float, received_total: int) -> None:
        """Note the bytes received so far; the newest sample always moves to `now`."""
        if len(self._samples) >= 2 and now - self._samples[-2][0] < _SAMPLE_SPACING_S:
            self._samples[-1] = (now, received_total)
        else:
            self._samples.append((now, received_total))
        self._trim(now)

    def rate(self, now: float) -> float:
        self._trim(now)
        if len(self._samples) < 2:
            return 0.0
        (t0, b0), (_, b1) = self._samples[0], self._samples[-1]
        return (b1 - b0) / max(now - t0, 1e-3)

    def _trim(self, now: float) -> None:
        # Keep one sample older than the window as its left edge, so a steady stream never reads as zero.
        while len(self._samples) > 2 and self._samples[1][0] < now - self._window_s:
            self._samples.popleft()


@dataclass(frozen=True)
class DownloadProgress:
    state: DownloadState
    bytes_done: int  # verified files + bytes of partial files on disk
    bytes_total: int  # the whole repo (0 while planning)
    rate_bps: float  # received over the last RATE_WINDOW_S seconds
    eta_s: float | None  # None when nothing is moving
    current_files: tuple[str, ...]  # being verified or downloaded now
    files_done: int
    files_total: int
    message: str  # what happens now, or why it stopped and what to do

    @property
    def finished(self) -> bool:
        return self.state in FINAL_STATES

    @property
    def fraction(self) -> float:
        return self.bytes_done / self.bytes_total if self.bytes_total else 0.0

    def summary(self) -> str:
        """One line for a progress bar's label: '1.2 GB of 230.0 GB (0.5%) · 85.0 MB/s · 44 min 50 s left'."""
        parts = [f"{format_bytes(self.bytes_done)} of {format_bytes(self.bytes_total)} ({self.fraction:.1%})"]
        if self.state == "downloading" and self.rate_bps > 0:
            parts.append(f"{format_bytes(self.rate_bps)}/s")
        if self.state == "downloading" and self.eta_s is not None:
            parts.append(f"{format_duration(self.eta_s)} left")
        return " · ".join(parts)


def eta_seconds(remaining_bytes: int, rate_bps: float) -> float | None:
    return remaining_bytes / rate_bps if rate_bps > 0 and remaining_bytes > 0 else None
