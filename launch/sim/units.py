"""Unit conversions asked for in plain words ("Convert 10 miles to kilometers", "how many pounds is 5 kg"),
read as a tool-calling model reads them: the value, and both units written as the short symbols a unit tool's
schema asks for (mi, km, lb, kg, C, F, mph, GiB ...). Only units of the same kind make a conversion.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# symbol → (kind, the words that name it); symbols are what m3ui's convert_units accepts.
UNITS: dict[str, tuple[str, tuple[str, ...]]] = {
    "m": ("length", ("m", "meter", "meters", "metre", "metres")),
    "km": ("length", ("km", "kms", "kilometer", "kilometers", "kilometre", "kilometres")),
    "cm": ("length", ("cm", "centimeter", "centimeters", "centimetre", "centimetres")),
    "mm": ("length", ("mm", "millimeter", "millimeters", "millimetre", "millimetres")),
    "mi": ("length", ("mi", "mile", "miles")),
    "yd": ("length", ("yd", "yard", "yards")),
    "ft": ("length", ("ft", "foot", "feet")),
    "in": ("length", ("inch", "inches")),  # never the bare word "in"
    "nmi": ("length", ("nmi", "nautical mile", "nautical miles")),
    "kg": ("mass", ("kg", "kilogram", "kilograms", "kilo", "kilos")),
    "g": ("mass", ("g", "gram", "grams")),
    "mg": ("mass", ("mg", "milligram", "milligrams")),
    "t": ("mass", ("tonne", "tonnes", "metric ton", "metric tons")),
    "lb": ("mass", ("lb", "lbs", "pound", "pounds")),
    "oz": ("mass", ("oz", "ounce", "ounces")),
    "st": ("mass", ("stone", "stones")),
    "l": ("volume", ("l", "liter", "liters", "litre", "litres")),
    "ml": ("volume", ("ml", "milliliter", "milliliters", "millilitre", "millilitres")),
    "gal": ("volume", ("gal", "gallon", "gallons")),
    "qt": ("volume", ("qt", "quart", "quarts")),
    "pt": ("volume", ("pt", "pint", "pints")),
    "cup": ("volume", ("cup", "cups")),
    "floz": ("volume", ("fl oz", "fluid ounce", "fluid ounces")),
    "m/s": ("speed", ("m/s", "meters per second", "metres per second")),
    "km/h": ("speed", ("km/h", "kph", "kmh", "kilometers per hour", "kilometres per hour")),
    "mph": ("speed", ("mph", "miles per hour")),
    "kn": ("speed", ("kn", "knot", "knots")),
    "s": ("time", ("s", "sec", "secs", "second", "seconds")),
    "ms": ("time", ("ms", "millisecond", "milliseconds")),
    "min": ("time", ("min", "mins", "minute", "minutes")),
    "h": ("time", ("h", "hr", "hrs", "hour", "hours")),
    "day": ("time", ("day", "days")),
    "week": ("time", ("week", "weeks")),
    "B": ("data", ("b", "byte", "bytes")),
    "KB": ("data", ("kb", "kilobyte", "kilobytes")),
    "MB": ("data", ("mb", "megabyte", "megabytes")),
    "GB": ("data", ("gb", "gigabyte", "gigabytes")),
    "TB": ("data", ("tb", "terabyte", "terabytes")),
    "KiB": ("data", ("kib", "kibibyte", "kibibytes")),
    "MiB": ("data", ("mib", "mebibyte", "mebibytes")),
    "GiB": ("data", ("gib", "gibibyte", "gibibytes")),
    "TiB": ("data", ("tib", "tebibyte", "tebibytes")),
    "C": ("temperature", ("c", "°c", "celsius", "degrees celsius", "degrees c", "centigrade")),
    "F": ("temperature", ("f", "°f", "fahrenheit", "degrees fahrenheit", "degrees f")),
    "K": ("temperature", ("kelvin", "kelvins")),
}
_BY_WORD = {word: symbol for symbol, (_, words) in UNITS.items() for word in words}
_UNIT = "|".join(re.escape(w) for w in sorted(_BY_WORD, key=len, reverse=True))
_VALUE = r"(-?\d+(?:\.\d+)?)"
# "10 miles to km", "convert 10 miles into kilometers", "5 kg in pounds", "30 °C as F"
_FORWARD = re.compile(rf"{_VALUE}\s*({_UNIT})(?![\w/])\s+(?:to|in|into|as)\s+({_UNIT})(?![\w/])", re.IGNORECASE)
# "how many km is 10 miles", "how many pounds are in 5 kg"
_BACKWARD = re.compile(rf"how\s+many\s+({_UNIT})\s+(?:is|are|in|make|equals?)\s+(?:there\s+)?(?:in\s+)?"
                       rf"{_VALUE}\s*({_UNIT})(?![\w/])", re.IGNORECASE)


@dataclass(frozen=True)
class Conversion:
    value: int | float
    from_unit: str
    to_unit: str


def _symbol(word: str) -> str:
    return _BY_WORD[" ".join(word.lower().split())]


def _conversion(value: str, source: str, target: str) -> Conversion | None:
    from_unit, to_unit = _symbol(source), _symbol(target)
    if UNITS[from_unit][0] != UNITS[to_unit][0] or from_unit == to_unit:
        return None
    number = float(value)
    return Conversion(int(number) if number.is_integer() and "." not in value else number, from_unit, to_unit)


def find_conversions(text: str) -> list[Conversion]:
    found = [_conversion(m[1], m[2], m[3]) for m in _FORWARD.finditer(text)]
    found += [_conversion(m[2], m[3], m[1]) for m in _BACKWARD.finditer(text)]
    return [c for c in found if c is not None]
