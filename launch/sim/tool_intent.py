"""Which of the declared tools a request asks for, and with what arguments, typed by each tool's schema.

A tool's kind is read from its name and description (weather, calculator, search); a request asks for a
kind by its words (the weather in a city, an arithmetic expression, "search for ..."), or names a declared
tool outright. Two asks (two cities, or weather and a sum) become two parallel calls. Only declared tools
are ever called. Arguments follow the schema: the ask's subject fills the matching string, numbers come
from the prompt ("for 3 days") or the schema's default, and objects/arrays are filled recursively.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from launch.sim.arithmetic import find_expressions
from launch.sim.m3_text import JsonValue, PlannedCall
from launch.sim.tool_values import Schema

ToolKind = Literal["weather", "calculator", "search", "other"]
_KIND_WORDS: tuple[tuple[ToolKind, tuple[str, ...]], ...] = (
    ("weather", ("weather", "forecast", "temperature")),
    ("calculator", ("calc", "math", "arithmetic", "evaluate", "expression", "compute")),
    ("search", ("search", "lookup", "look_up", "web", "find")),
)
# Property names that hold each kind's subject.
_SUBJECT_PROPS: dict[ToolKind, tuple[str, ...]] = {
    "weather": ("city", "location", "place", "town", "city_name", "where"),
    "calculator": ("expression", "expr", "formula", "input", "math", "equation"),
    "search": ("query", "q", "search", "term", "terms", "keywords", "text", "question"),
    "other": (),
}
# A place name: capitalized words, with the lower-case particles of names like Rio de Janeiro between them.
_WORD = r"[A-Z][\w'.-]*(?:\s+(?:(?:de|da|del|di|do|la|le|of|upon|am|an|sur)\s+)?[A-Z][\w'.-]*)*"
_PLACES = re.compile(rf"\b(?:in|for|at)\s+({_WORD}(?:(?:\s*,\s*|\s+and\s+){_WORD})*)")
_WEATHER_ASK = re.compile(r"\b(weather|forecast|temperature|rain|sunny|hot|cold)\b", re.IGNORECASE)
_SEARCH_ASK = re.compile(
    r"\b(?:search(?:\s+the\s+web)?(?:\s+for)?|look\s+up|google)\s+(.+?)"
    r"(?=\s+and\s+(?:what|how|search|look|tell|compute|calculate)\b|[?.!]|$)", re.IGNORECASE)


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    parameters: Schema | None

    @property
    def kind(self) -> ToolKind:
        words = f"{self.name} {self.description}".lower()
        return next((kind for kind, keys in _KIND_WORDS if any(k in words for k in keys)), "other")


@dataclass(frozen=True)
class Ask:
    kind: ToolKind
    subject: str
    tool: str | None = None  # a tool the user named outright


def cities(text: str) -> list[str]:
    found: list[str] = []
    for match in _PLACES.finditer(text):
        for name in re.split(r"\s*,\s*|\s+and\s+", match.group(1)):
            if name and name not in found:
                found.append(name.rstrip(".'"))
    return found


def _subject(kind: ToolKind, text: str) -> str:
    found = {"weather": cities(text), "calculator": find_expressions(text),
             "search": [m.group(1).strip() for m in _SEARCH_ASK.finditer(text)], "other": []}[kind]
    return found[0] if found else text.strip()


def find_asks(text: str, tools: Sequence[ToolSpec]) -> list[Ask]:
    asks: list[Ask] = []
    if _WEATHER_ASK.search(text):
        asks += [Ask("weather", city) for city in cities(text)]
    asks += [Ask("calculator", expr) for expr in find_expressions(text)]
    asks += [Ask("search", m.group(1).strip()) for m in _SEARCH_ASK.finditer(text)]
    for tool in tools:
        spaced = tool.name.replace("_", " ")
        named = re.search(rf"\b({re.escape(tool.name)}|{re.escape(spaced)})\b", text, re.IGNORECASE)
        if named and not any(a.kind == tool.kind != "other" for a in asks):
            asks.append(Ask(tool.kind, _subject(tool.kind, text), tool=tool.name))
    return asks


def plan_calls(text: str, tools: Sequence[ToolSpec], forced: str | None = None,
               required: bool = False) -> tuple[PlannedCall, ...]:
    """The calls for the user's `text`. `forced` names the only allowed tool; `required` demands a call."""
    allowed = [t for t in tools if forced is None or t.name == forced]
    calls: list[PlannedCall] = []
    for ask in find_asks(text, allowed):
        tool = next((t for t in allowed if (t.name == ask.tool if ask.tool else t.kind == ask.kind)), None)
        if tool is not None:
            call = PlannedCall(tool.name, fill_arguments(tool.parameters, ask, text))
            if call not in calls:
                calls.append(call)
    if not calls and (required or forced) and allowed:
        tool = allowed[0]
        calls.append(PlannedCall(tool.name, fill_arguments(tool.parameters, Ask(tool.kind, _subject(tool.kind, text)),
                                                           text)))
    return tuple(calls)


def _kinds(schema: Any) -> list[str]:
    kind = schema.get("type") if isinstance(schema, Mapping) else None
    kinds = [kind] if isinstance(kind, str) else list(kind) if isinstance(kind, list) else []
    return [k for k in kinds if k != "null"] or (["object"] if isinstance(schema, Mapping)
                                                 and "properties" in schema else ["string"])


def _number_near(name: str, text: str) -> float | None:
    stem = re.escape(name.lower().rstrip("s")[:5])
    match = re.search(rf"(-?\d+(?:\.\d+)?)\s*{stem}", text.lower())
    return float(match.group(1)) if match else None


def _value(name: str, schema: Any, ask: Ask, text: str, required: bool) -> JsonValue | None:
    """A property's value, or None to leave an optional property out."""
    schema = schema if isinstance(schema, Mapping) else {}
    kind = _kinds(schema)[0]
    subject_prop = name.lower() in _SUBJECT_PROPS[ask.kind]
    if "enum" in schema and schema["enum"]:
        mentioned = [v for v in schema["enum"] if isinstance(v, str) and v.lower() in text.lower()]
        return mentioned[0] if mentioned else (schema.get("default", schema["enum"][0]) if required else None)
    if kind in ("integer", "number"):
        near = _number_near(name, text)
        if near is None and not required:
            return None
        value = near if near is not None else schema.get("default", schema.get("minimum", 1))
        return int(value) if kind == "integer" or float(value).is_integer() else float(value)
    if kind == "boolean":
        if name.lower() in text.lower():
            return True
        return bool(schema.get("default", False)) if required else None
    if kind == "array":
        if not (required or subject_prop):
            return None
        items = schema.get("items") if isinstance(schema.get("items"), Mapping) else {"type": "string"}
        subjects = cities(text) if _kinds(items)[0] in ("string", "object") and cities(text) else [ask.subject]
        return [_value("item", items, Ask(ask.kind, s, ask.tool), text, True) for s in subjects]
    if kind == "object":
        return fill_arguments(schema, ask, text) if required else None
    if subject_prop or required:
        return ask.subject if subject_prop or "default" not in schema else schema["default"]
    return None


def fill_arguments(schema: Schema | None, ask: Ask, text: str) -> dict[str, JsonValue]:
    """Arguments for one call: required properties always, optional ones when the prompt gives them."""
    if not isinstance(schema, Mapping) or not isinstance(schema.get("properties"), Mapping):
        return {}
    properties: Mapping[str, Any] = schema["properties"]
    required = set(schema.get("required") or ())
    out: dict[str, JsonValue] = {}
    for name, prop in properties.items():
        value = _value(name, prop, ask, text, name in required)
        if value is not None:
            out[name] = value
    if not out and properties:  # an object with nothing required still needs one key to be worth a call
        name, prop = next(iter(properties.items()))
        out[name] = _value(name, prop, ask, text, True)
    return out
