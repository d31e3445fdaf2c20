"""Bytes, rates and durations as the operator reads them (decimal units, like disk vendors and the Hub)."""

from __future__ import annotations

_UNITS = ("B", "kB", "MB", "GB", "TB")


def format_bytes(n: float) -> str:
    value, unit = float(n), _UNITS[0]
    for unit in _UNITS:
        if abs(value) < 1000 or unit == _UNITS[-1]:
            break
        value /= 1000
    return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"


def format_duration(seconds: float) -> str:
    s = int(round(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"
