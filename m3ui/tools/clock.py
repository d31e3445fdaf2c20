"""current_time: the time now in an IANA time zone."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError


def current_time(timezone: str) -> str:
    """Get the current date and time in a time zone.

    Args:
        timezone: IANA time zone name, e.g. "Europe/Paris", "Asia/Shanghai" or "UTC".
    """
    name = timezone.strip()
    try:
        zone = ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ValueError(f"unknown time zone {timezone!r}; use an IANA name like 'Europe/Paris' or 'UTC'") from exc
    now = datetime.now(UTC).astimezone(zone)
    return f"{now:%Y-%m-%d %H:%M:%S} {now.tzname()} (UTC{now:%z}, {now:%A}) in {name}"
