"""get_weather: a demo tool with made-up but stable data (no network), derived from the city's name."""

from __future__ import annotations

import hashlib

_SKIES = ("sunny", "partly cloudy", "overcast", "light rain", "showers", "windy", "foggy", "snow flurries")
MAX_DAYS = 7


def get_weather(city: str, days: int = 1) -> str:
    """Get the weather forecast for a city (offline demo data, not a real forecast).

    Args:
        city: City name, e.g. "Paris".
        days: Number of days to forecast, 1 to 7.
    """
    name = " ".join(city.split())
    if not name:
        raise ValueError("city must not be empty")
    if not 1 <= days <= MAX_DAYS:
        raise ValueError(f"days must be between 1 and {MAX_DAYS}; got {days}")
    lines = [f"DEMO DATA (offline, made up from the city name; not a real forecast) for {name}:"]
    for day in range(days):
        lines.append(f"- day {day + 1}: {_day_forecast(name.lower(), day)}")
    return "\n".join(lines)


def _digest(text: str) -> bytes:
    # sha256, not hash(): Python salts str hashes per process and the demo must be stable.
    return hashlib.sha256(text.encode()).digest()


def _day_forecast(city_key: str, day: int) -> str:
    climate_c = _digest(city_key)[0] % 33 - 5  # each city gets its own climate, -5 .. 27 °C
    digest = _digest(f"{city_key}|{day}")
    temperature_c = climate_c + digest[0] % 9 - 4  # and days differ by a few degrees
    sky = _SKIES[digest[1] % len(_SKIES)]
    humidity = 30 + digest[2] % 61
    wind_kmh = digest[3] % 46
    return f"{sky}, {temperature_c} °C, humidity {humidity}%, wind {wind_kmh} km/h"
