"""Place names → IANA time zones, as a model that knows geography would write them ("Tokyo" → "Asia/Tokyo").

Most cities a user names are the zone's own city (read from the zone database itself); the rest are big
cities, and a few countries, that share another city's zone. A time stated in one place and asked for in another
("9am in New York, what time in Tokyo?") is a conversion the model does itself: no clock tool tells it.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from datetime import date, datetime, time
from zoneinfo import ZoneInfo, available_timezones

from launch.sim.prompt_values import places, stated_time

_REGIONS = ("Africa", "America", "Antarctica", "Asia", "Atlantic", "Australia", "Europe", "Indian", "Pacific")
_SHARED: dict[str, tuple[str, ...]] = {
    "Asia/Shanghai": ("Beijing", "Shenzhen", "Guangzhou", "Hangzhou", "Chengdu", "Wuhan", "China"),
    "Asia/Tokyo": ("Osaka", "Kyoto", "Yokohama", "Japan"),
    "Asia/Kolkata": ("Mumbai", "Delhi", "New Delhi", "Bangalore", "Bengaluru", "Chennai", "Hyderabad", "India"),
    "Asia/Seoul": ("Busan", "Korea"),
    "America/Los_Angeles": ("San Francisco", "Seattle", "San Diego", "San Jose", "Las Vegas", "Portland"),
    "America/New_York": ("Washington", "Boston", "Miami", "Atlanta", "Philadelphia", "Pittsburgh"),
    "America/Chicago": ("Houston", "Dallas", "Austin", "Minneapolis", "New Orleans"),
    "America/Toronto": ("Montreal", "Ottawa"),
    "America/Sao_Paulo": ("Rio de Janeiro", "Brasilia", "Brazil"),
    "Europe/London": ("Manchester", "Edinburgh", "Glasgow", "Birmingham", "England", "UK"),
    "Europe/Paris": ("Lyon", "Marseille", "France"),
    "Europe/Berlin": ("Munich", "Hamburg", "Frankfurt", "Cologne", "Germany"),
    "Europe/Madrid": ("Barcelona", "Valencia", "Seville", "Spain"),
    "Europe/Rome": ("Milan", "Naples", "Florence", "Venice", "Italy"),
    "Europe/Zurich": ("Geneva", "Basel", "Bern", "Switzerland"),
    "Europe/Moscow": ("Saint Petersburg", "St Petersburg", "Russia"),
    "Australia/Sydney": ("Canberra",),
    "Asia/Ho_Chi_Minh": ("Hanoi", "Saigon", "Vietnam"),
    "UTC": ("UTC", "GMT", "Greenwich"),
}


@functools.cache
def _zones() -> dict[str, str]:
    by_place: dict[str, str] = {}
    for zone in sorted(available_timezones()):
        if zone.split("/")[0] in _REGIONS:
            by_place.setdefault(zone.rsplit("/", 1)[-1].replace("_", " ").lower(), zone)
    for zone, names in _SHARED.items():
        by_place.update({name.lower(): zone for name in names})
    return by_place


def zone_for(place: str) -> str | None:
    """The IANA zone of a city (or a one-zone country), or None when unknown."""
    key = re.sub(r"\s+", " ", place.strip().strip(".,?!")).lower()
    return _zones().get(key)


@dataclass(frozen=True)
class TimeConversion:
    """A time of day (HH:MM) stated in one place, asked for in another."""

    stated: str
    source: str  # the places as the user wrote them
    target: str
    source_zone: str
    target_zone: str

    def converted(self, today: date | None = None) -> tuple[datetime, datetime]:
        """The stated time, on `today` (the source place's today by default), there and in the target place."""
        source = ZoneInfo(self.source_zone)
        day = today or datetime.now(source).date()
        hour, minute = (int(part) for part in self.stated.split(":"))
        there = datetime.combine(day, time(hour, minute), source)
        return there, there.astimezone(ZoneInfo(self.target_zone))

    def answer(self, today: date | None = None) -> tuple[str, str]:
        """The reasoning and the answer a model writes for it."""
        there, here = self.converted(today)
        shift = {1: " the next day", -1: " the day before"}.get((here.date() - there.date()).days, "")
        hours = (here.utcoffset() - there.utcoffset()).total_seconds() / 3600  # type: ignore[operator]  # zone-aware: never None
        reasoning = (f"{self.source} is on {there.tzname()} (UTC{there:%z}) and {self.target} on {here.tzname()} "
                     f"(UTC{here:%z}): {self.target} is {abs(hours):g} hours {'ahead' if hours >= 0 else 'behind'}. "
                     f"{there:%H:%M} {hours:+g} h = {here:%H:%M}{shift}.")
        return reasoning, (f"{_clock(there)} in {self.source} ({there.tzname()}) is **{_clock(here)}{shift}** in "
                           f"{self.target} ({here.tzname()}).")


def _clock(moment: datetime) -> str:
    return moment.strftime("%I:%M %p").lstrip("0")


def find_time_conversion(text: str) -> TimeConversion | None:
    """A time stated in a place and asked for in another: "9am in New York, what time in Tokyo?", "3:30 pm in
    Paris is what time in Sydney?"; None unless the text states a time and names two places with known zones."""
    stated = stated_time(text)
    zoned = [(place, zone) for place in places(text) if (zone := zone_for(place))]
    if stated is None or len(zoned) < 2:
        return None
    (source, source_zone), (target, target_zone) = zoned[0], zoned[1]
    return TimeConversion(stated, source, target, source_zone, target_zone)
