"""The auto-restart controls of the admin panel ↔ a RestartPolicy (the window is shown in minutes)."""

from __future__ import annotations

from launch.restart_policy import RestartPolicy, RestartPolicyError

RestartValues = tuple[bool, float, float, float]  # enabled, attempts, window (min), first delay (s)


def restart_form_values(policy: RestartPolicy) -> RestartValues:
    return policy.enabled, policy.max_attempts, policy.window_s / 60, policy.first_delay_s


def _number(label: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise RestartPolicyError(f"auto-restart {label}: enter a number")
    return float(value)


def read_restart_form(enabled: object, attempts: object, window_min: object, delay_s: object) -> RestartPolicy:
    """Raises RestartPolicyError with a plain message for an empty, fractional or out-of-range field."""
    count = _number("attempts", attempts)
    if count != int(count):
        raise RestartPolicyError(f"auto-restart attempts: {count:g} is not a whole number")
    delay = _number("first delay (seconds)", delay_s)
    return RestartPolicy(enabled=bool(enabled), max_attempts=int(count),
                         window_s=_number("window (minutes)", window_min) * 60, first_delay_s=delay,
                         max_delay_s=max(RestartPolicy.max_delay_s, delay))
