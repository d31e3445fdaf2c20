"""A call's arguments, filled property by property from the tool's JSON schema, as a tool-calling model would.

Values come from the prompt where it states them, found by what each property is about (its name, its
parents' names, its format and description): a head count for `party.size`, a date for `when.date`, a name,
a phone number, a place. Where the prompt says nothing, a required property still gets a plausible value
(the schema's example, default or minimum, else a typical one); an optional one is left out.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from launch.sim import prompt_values as said
from launch.sim.m3_text import JsonValue
from launch.sim.time_zones import zone_for
from launch.sim.tool_values import Schema

_EXAMPLE = re.compile(r"e\.g\.,?\s*[\"']([^\"']+)[\"']")
_MONEY = re.compile(r"(?:[$€£]\s?(\d[\d,]*(?:\.\d+)?))|(?:(\d[\d,]*(?:\.\d+)?)\s*(?:dollars|usd|eur|euros|gbp|pounds))"
                    r"|(?:budget of\s+(\d[\d,]*(?:\.\d+)?))", re.IGNORECASE)
# What a property is about, from the words of its name (then its parents'); first match wins.
_TOPICS: tuple[tuple[str, frozenset[str]], ...] = (
    ("zone", frozenset({"timezone", "tz", "zone"})),
    ("id", frozenset({"id", "number", "code", "reference", "ref", "sku", "ticket", "tracking"})),
    ("email", frozenset({"email", "mail"})),
    ("phone", frozenset({"phone", "tel", "telephone", "mobile", "cell"})),
    ("datetime", frozenset({"datetime", "timestamp", "when"})),
    ("date", frozenset({"date", "day", "checkin", "checkout", "arrival", "departure"})),
    ("time", frozenset({"time", "hour", "clock"})),
    ("people", frozenset({"people", "persons", "guests", "party", "group", "covers", "seats", "adults", "pax",
                          "attendees", "participants", "headcount"})),
    ("money", frozenset({"budget", "price", "amount", "cost", "total"})),
    ("person", frozenset({"name", "customer", "guest", "contact", "person", "organizer", "passenger", "attendee",
                          "owner", "user", "who"})),
    ("venue", frozenset({"restaurant", "venue", "hotel", "bar", "cafe"})),
    ("place", frozenset({"city", "cities", "location", "locations", "place", "places", "destination",
                         "destinations", "origin", "address", "where", "town", "towns", "country", "countries"})),
    ("text", frozenset({"notes", "note", "comment", "comments", "message", "remarks", "requests", "request"})),
)
_FORMATS = {"date": "date", "time": "time", "date-time": "datetime", "email": "email"}
_TYPICAL: dict[str, JsonValue] = {"email": "guest@example.com", "phone": "555-0100", "person": "Alex Morgan",
                                  "place": "Paris", "venue": "The Corner Bistro", "zone": "UTC", "time": "12:00",
                                  "id": "A-1001", "text": ""}


@dataclass(frozen=True)
class Context:
    text: str  # the user's prompt
    subject: str = ""  # what the ask is about (a city, an expression, a query); "" when nothing specific
    subject_props: tuple[str, ...] = ()  # property names that take the subject
    fixed: Mapping[str, JsonValue] = field(default_factory=dict)  # top-level values the ask already decided
    today: date = field(default_factory=date.today)


def _words(name: str) -> list[str]:
    return re.findall(r"[a-z]+", re.sub(r"([a-z])([A-Z])", r"\1 \2", name).lower())


def _topic(name: str, schema: Mapping[str, Any], path: tuple[str, ...]) -> str | None:
    fmt = schema.get("format")
    if isinstance(fmt, str) and fmt in _FORMATS:
        return _FORMATS[fmt]
    for owner in (name, *reversed(path)):  # the property's own name first, then its parents'
        words = set(_words(owner))
        if {"date", "time"} <= words:
            return "datetime"
        topic = next((topic for topic, keys in _TOPICS if words & keys), None)
        if topic is not None:
            return topic
    return None


def _kinds(schema: Mapping[str, Any]) -> list[str]:
    kind = schema.get("type")
    kinds = [kind] if isinstance(kind, str) else list(kind) if isinstance(kind, list) else []
    return [k for k in kinds if k != "null"] or (["object"] if "properties" in schema else ["string"])


def _number_before(name: str, text: str) -> float | None:
    """A number written before the property's name ("5 days", "2 nights")."""
    stem = re.escape(name.lower().rstrip("s")[:5])
    match = re.search(rf"(-?\d+(?:\.\d+)?)\s*{stem}", text.lower())
    return float(match.group(1)) if match else None


def _stated_number(name: str, topic: str | None, ctx: Context) -> float | None:
    if topic == "people":
        count = said.head_count(ctx.text)
        if count is not None:
            return count
    if topic == "money" and (match := _MONEY.search(ctx.text)):
        return float(next(g for g in match.groups() if g).replace(",", ""))
    return _number_before(name, ctx.text)


def _typical_number(schema: Mapping[str, Any], topic: str | None) -> float:
    if "default" in schema or "minimum" in schema:
        return schema.get("default", schema.get("minimum"))
    return 2 if topic == "people" else 1


def _stated_string(topic: str | None, ctx: Context) -> str | None:
    if topic == "date":
        found = said.stated_date(ctx.text, ctx.today)
        return found.isoformat() if found else None
    if topic == "datetime":
        day, time = said.stated_date(ctx.text, ctx.today), said.stated_time(ctx.text)
        return f"{(day or ctx.today).isoformat()}T{time or '12:00'}:00" if day or time else None
    places = said.places(ctx.text)
    if topic == "zone":
        return next((zone for place in places if (zone := zone_for(place))), None)
    if topic in ("place", "venue"):
        return places[0] if places else None
    readers = {"time": said.stated_time, "email": said.email_address, "phone": said.phone_number,
               "person": said.person_name, "text": said.quoted_text, "id": said.identifier}
    return readers[topic](ctx.text) if topic in readers else None


def _typical_string(schema: Mapping[str, Any], topic: str | None, ctx: Context) -> str:
    description = schema.get("description")
    example = _EXAMPLE.search(description) if isinstance(description, str) else None
    if example:
        return example.group(1)
    if isinstance(schema.get("default"), str):
        return schema["default"]
    if topic in ("date", "datetime"):
        return ctx.today.isoformat() + ("T12:00:00" if topic == "datetime" else "")
    return str(_TYPICAL.get(topic or "", ctx.subject))


def _value(name: str, schema: Any, ctx: Context, required: bool, path: tuple[str, ...]) -> JsonValue | None:
    """A property's value, or None to leave an optional property out."""
    schema = schema if isinstance(schema, Mapping) else {}
    kind, topic = _kinds(schema)[0], _topic(name, schema, path)
    if not path and name in ctx.fixed:
        return ctx.fixed[name]
    if schema.get("enum"):
        mentioned = [v for v in schema["enum"] if isinstance(v, str) and v.lower() in ctx.text.lower()]
        return mentioned[0] if mentioned else (schema.get("default", schema["enum"][0]) if required else None)
    if kind in ("integer", "number"):
        stated = _stated_number(name, topic, ctx)
        if stated is None and not required:
            return None
        value = stated if stated is not None else _typical_number(schema, topic)
        return int(value) if kind == "integer" or float(value).is_integer() else float(value)
    if kind == "boolean":
        if " ".join(_words(name)) in ctx.text.lower():
            return True
        return bool(schema.get("default", False)) if required else None
    if kind == "array":
        return _array(name, schema, ctx, required, path)
    if kind == "object":
        return fill_arguments(schema, ctx, (*path, name)) if required or topic else None
    if name.lower() in ctx.subject_props and ctx.subject:
        return ctx.subject
    stated = _stated_string(topic, ctx)  # type: ignore[assignment]  # the name reused for the stated text
    if stated is not None:
        return stated
    return _typical_string(schema, topic, ctx) if required else None


def _place_props(name: str, items: Mapping[str, Any], path: tuple[str, ...]) -> tuple[str, ...]:
    """Where a list of places puts each place: the item itself ("cities": [string]), or the property that names
    it in each object ("stops": [{city, nights}] → city); () when the list is not about places."""
    if _kinds(items)[0] == "string":
        return ("item",) if _topic(name, items, path) == "place" else ()
    properties = items.get("properties")
    if not isinstance(properties, Mapping):
        return ()
    return tuple(p for p, s in properties.items() if _topic(p, s if isinstance(s, Mapping) else {}, ()) == "place")


def _array(name: str, schema: Mapping[str, Any], ctx: Context, required: bool, path: tuple[str, ...]
           ) -> JsonValue | None:
    subject_prop = name.lower() in ctx.subject_props
    items: Mapping[str, Any] = schema.get("items") if isinstance(schema.get("items"), Mapping) else {"type": "string"}  # type: ignore[assignment]  # a Mapping: checked on this line
    places, place_props = said.places(ctx.text), _place_props(name, items, path)
    if places and (subject_prop or place_props):  # one item per place the prompt names
        return [_value("item", items, Context(ctx.text, place, ("item", *place_props), today=ctx.today), True,
                       (*path, name)) for place in places]
    if not (required or subject_prop):
        return None
    stated = said.quoted_text(ctx.text) if _topic(name, items, path) == "text" else None
    if stated is not None:
        return [stated]
    return [_value("item", items, ctx, True, (*path, name))]


def fill_arguments(schema: Schema | None, ctx: Context, path: tuple[str, ...] = ()) -> dict[str, JsonValue]:
    """Arguments for one call: required properties always, optional ones when the prompt gives them."""
    if not isinstance(schema, Mapping) or not isinstance(schema.get("properties"), Mapping):
        return {}
    properties: Mapping[str, Any] = schema["properties"]
    required = set(schema.get("required") or ())
    out: dict[str, JsonValue] = {}
    for name, prop in properties.items():
        value = _value(name, prop, ctx, name in required or (not path and name in ctx.fixed), path)
        if value is not None:
            out[name] = value
    if not out and properties:  # an object with nothing required still needs one key to be worth a call
        name, prop = next(iter(properties.items()))
        out[name] = _value(name, prop, ctx, True, path)
    return out
