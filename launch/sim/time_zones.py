"""Place names → IANA time zones, as a model that knows geography would write them ("Tokyo" → "Asia/Tokyo").

Most cities a user names are the zone's own city (read from the zone database itself); the rest are big
cities, and a few countries, that share another city's zone.
"""

from __future__ import annotations

import functools
import re
from zoneinfo import available_timezones

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
