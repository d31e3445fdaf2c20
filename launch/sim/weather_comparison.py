"""Weather results compared, as a model asked to compare places writes it from the forecasts its tool returned:
each place's mean temperature over the days forecast, and which is warmer by how much."""

from __future__ import annotations

import re
from collections.abc import Sequence

from launch.sim.arithmetic import fmt
from launch.sim.m3_text import PlannedCall

_COMPARE = re.compile(r"\b(?:compare[sd]?|comparison|versus|vs\.?|warmer|colder|hotter|cooler|difference)\b",
                      re.IGNORECASE)
_DEGREES = re.compile(r"(-?\d+(?:\.\d+)?)\s*°\s*C\b")


def weather_comparison(question: str, results: Sequence[tuple[PlannedCall | None, str]]) -> str | None:
    """The comparison the question asks for, from two or more places' results; None when it asks for none or
    the results hold fewer than two places' temperatures."""
    if not _COMPARE.search(question):
        return None
    means: list[tuple[str, float, int]] = []
    for call, text in results:
        place = next((value for name in ("city", "location", "place") if isinstance(
            value := (call.arguments.get(name) if call else None), str)), None)
        degrees = [float(value) for value in _DEGREES.findall(text)]
        if place and degrees:
            means.append((place, sum(degrees) / len(degrees), len(degrees)))
    if len(means) < 2:
        return None
    (warm, high, _), (cold, low, _) = max(means, key=lambda m: m[1]), min(means, key=lambda m: m[1])
    days = min(count for _, _, count in means)
    each = ", ".join(f"{place} {fmt(round(mean, 1))} °C" for place, mean, _ in means)
    verdict = (f"{warm} and {cold} are as warm as each other" if high == low else
               f"{warm} is the warmest, {fmt(round(high - low, 1))} °C warmer than {cold}")
    over = "" if days == 1 else f", on average over {days} days"
    return f"Compared{over}: {each}. {verdict}."
