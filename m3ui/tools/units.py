"""convert_units: length, mass, volume, speed, time, data size and temperature."""

from __future__ import annotations

# Factor to the quantity's base unit (metre, kilogram, litre, metre/second, second, byte).
_FACTORS: dict[str, dict[str, float]] = {
    "length": {"m": 1, "km": 1000, "cm": 0.01, "mm": 0.001, "um": 1e-6, "nm": 1e-9, "mi": 1609.344,
               "yd": 0.9144, "ft": 0.3048, "in": 0.0254, "nmi": 1852},
    "mass": {"kg": 1, "g": 0.001, "mg": 1e-6, "t": 1000, "lb": 0.45359237, "oz": 0.028349523125, "st": 6.35029318},
    "volume": {"l": 1, "ml": 0.001, "m3": 1000, "cm3": 0.001, "gal": 3.785411784, "qt": 0.946352946,
               "pt": 0.473176473, "cup": 0.2365882365, "floz": 0.0295735295625},
    "speed": {"m/s": 1, "km/h": 1 / 3.6, "mph": 0.44704, "kn": 1852 / 3600, "ft/s": 0.3048},
    "time": {"s": 1, "ms": 0.001, "min": 60, "h": 3600, "day": 86400, "week": 604800},
    "data": {"b": 1, "kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12, "kib": 1024, "mib": 1024**2, "gib": 1024**3,
             "tib": 1024**4},
}
_TEMPERATURES = ("c", "f", "k")
_ALIASES = {
    "meter": "m", "metre": "m", "kilometer": "km", "kilometre": "km", "centimeter": "cm", "millimeter": "mm",
    "mile": "mi", "yard": "yd", "foot": "ft", "feet": "ft", "inch": "in", "inches": "in",
    "kilogram": "kg", "gram": "g", "milligram": "mg", "tonne": "t", "pound": "lb", "lbs": "lb", "ounce": "oz",
    "stone": "st", "liter": "l", "litre": "l", "milliliter": "ml", "millilitre": "ml", "gallon": "gal",
    "quart": "qt", "pint": "pt", "fl oz": "floz", "fl_oz": "floz", "kph": "km/h", "kmh": "km/h", "knot": "kn",
    "knots": "kn", "second": "s", "sec": "s", "minute": "min", "hour": "h", "hr": "h", "days": "day",
    "celsius": "c", "°c": "c", "fahrenheit": "f", "°f": "f", "kelvin": "k", "byte": "b", "bytes": "b",
}


def _canonical(unit: str) -> str:
    key = " ".join(unit.strip().lower().split())
    if key in _ALIASES:
        return _ALIASES[key]
    if key.endswith("s") and key[:-1] in _ALIASES:  # plurals: meters, grams, hours
        return _ALIASES[key[:-1]]
    return key


def _quantity(unit: str) -> str | None:
    if unit in _TEMPERATURES:
        return "temperature"
    return next((quantity for quantity, units in _FACTORS.items() if unit in units), None)


def _to_kelvin(value: float, unit: str) -> float:
    return {"c": value + 273.15, "f": (value - 32) * 5 / 9 + 273.15, "k": value}[unit]


def _from_kelvin(kelvin: float, unit: str) -> float:
    return {"c": kelvin - 273.15, "f": (kelvin - 273.15) * 9 / 5 + 32, "k": kelvin}[unit]


def convert_units(value: float, from_unit: str, to_unit: str) -> str:
    """Convert a value between units of length, mass, volume, speed, time, data size or temperature.

    Args:
        value: The number to convert.
        from_unit: Unit of the value, e.g. "km", "lb", "C", "mph", "GiB".
        to_unit: Unit to convert to, of the same kind as from_unit.
    """
    source, target = _canonical(from_unit), _canonical(to_unit)
    source_kind, target_kind = _quantity(source), _quantity(target)
    for unit, kind in ((from_unit, source_kind), (to_unit, target_kind)):
        if kind is None:
            raise ValueError(f"unknown unit {unit!r}; known: {known_units()}")
    if source_kind != target_kind:
        raise ValueError(f"cannot convert {source_kind} ({from_unit}) to {target_kind} ({to_unit})")
    if source_kind == "temperature":
        kelvin = _to_kelvin(value, source)
        if kelvin < 0:
            raise ValueError(f"{value} {from_unit} is below absolute zero")
        result = _from_kelvin(kelvin, target)
    else:
        factors = _FACTORS[source_kind]  # type: ignore[index]  # a known kind: an unknown unit raised above
        result = value * factors[source] / factors[target]
    return f"{value:g} {from_unit} = {result:.6g} {to_unit}"


def known_units() -> str:
    groups = [f"{kind}: {', '.join(units)}" for kind, units in _FACTORS.items()]
    return "; ".join([*groups, "temperature: C, F, K"])
