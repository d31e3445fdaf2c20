"""Opt-in automatic restart of an engine that died: how often, how soon, and where the counting stands.

An unattended deployment should heal itself from a one-off death (the OOM killer, a driver hiccup) but not
relaunch a broken setup forever: attempts back off exponentially and stop after `max_attempts` within
`window_s`. The supervisor relaunches the last settings that reached ready (launch/supervisor.py).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

# (lowest, highest) accepted for each number: bounds keep a typo from meaning "restart every 0 s forever".
LIMITS: dict[str, tuple[float, float]] = {
    "max_attempts": (1, 100), "window_s": (10, 7 * 24 * 3600),
    "first_delay_s": (0, 3600), "max_delay_s": (0, 24 * 3600),
}


class RestartPolicyError(ValueError):
    pass


@dataclass(frozen=True)
class RestartPolicy:
    enabled: bool = False
    max_attempts: int = 3  # within window_s; then it gives up until someone starts the engine again
    window_s: float = 600.0
    first_delay_s: float = 5.0  # doubles with each attempt in the window
    max_delay_s: float = 300.0

    def __post_init__(self) -> None:
        for name, (lo, hi) in LIMITS.items():
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) \
                    or not lo <= value <= hi:
                raise RestartPolicyError(f"auto-restart {name.replace('_', ' ')}: {value!r} is not a number "
                                         f"from {lo:g} to {hi:g}")
        if self.max_attempts != int(self.max_attempts):
            raise RestartPolicyError(f"auto-restart max attempts: {self.max_attempts!r} is not a whole number")

    def delay(self, attempt: int) -> float:
        """Seconds to wait before attempt `attempt` (1-based)."""
        return min(self.max_delay_s, self.first_delay_s * 2 ** (attempt - 1))

    def to_mapping(self) -> dict[str, Any]:
        return asdict(self)


def policy_from_mapping(data: object) -> RestartPolicy:
    """From a profile's JSON object; unknown keys are refused so a misspelt limit is not silently ignored."""
    if data is None:
        return RestartPolicy()
    if not isinstance(data, dict):
        raise RestartPolicyError("auto_restart must be an object")
    unknown = set(data) - set(RestartPolicy.__dataclass_fields__)
    if unknown:
        raise RestartPolicyError(f"auto_restart: unknown key(s) {', '.join(sorted(map(str, unknown)))}")
    if not isinstance(data.get("enabled", False), bool):
        raise RestartPolicyError("auto_restart enabled must be true or false")
    try:
        return RestartPolicy(**data)
    except TypeError as exc:
        raise RestartPolicyError(f"auto_restart: {exc}") from None


@dataclass(frozen=True)
class AutoRestart:
    """Where the automatic restarts stand, for the admin status and the chat's failure line."""

    attempt: int  # the attempt scheduled or made last (1-based)
    max_attempts: int
    due_at: float | None  # epoch seconds of the next attempt; None when none is pending
    gave_up: bool = False
    problem: str | None = None  # why an attempt could not be made

    def describe(self, now: float) -> str:
        if self.gave_up:
            return f"auto-restart gave up after {self.max_attempts} attempt(s)" + (
                f": {self.problem}" if self.problem else "")
        if self.due_at is not None:
            return f"auto-restart attempt {self.attempt} of {self.max_attempts} in {max(0.0, self.due_at - now):.0f} s"
        return f"auto-restarted (attempt {self.attempt} of {self.max_attempts})"
