"""Which of the declared tools a request asks for, and with what arguments, as a tool-calling model decides.

A tool's kind is read from its name (then its description): weather, calculator, search, unit conversion,
clock, or other. A request asks for a kind by its words: the weather in a city, an arithmetic expression,
"search for ...", "convert 10 miles to km", "what time is it in Tokyo"; it asks for an "other" tool by naming
it or by the words of its name ("book a table" → book_table). Several asks (two cities, weather and a sum)
become parallel calls. Only declared tools are ever called. Arguments follow the tool's schema
(launch/sim/tool_arguments.py): what the ask decided (the city, the expression, the units, the time zone),
then what the prompt states, then plausible values for required properties.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from launch.sim.arithmetic import find_expressions
from launch.sim.m3_text import JsonValue, PlannedCall
from launch.sim.prompt_values import keywords, places
from launch.sim.time_zones import find_time_conversion, zone_for
from launch.sim.tool_arguments import Context, fill_arguments
from launch.sim.tool_values import Schema
from launch.sim.units import Conversion, find_conversions

ToolKind = Literal["weather", "calculator", "search", "units", "clock", "other"]
# Words of a tool's name that say its kind; then, failing those, phrases of its description.
_NAME_WORDS: tuple[tuple[ToolKind, tuple[str, ...]], ...] = (
    ("units", ("convert", "conversion", "unit", "units")),
    ("clock", ("time", "clock", "timezone", "datetime")),
    ("weather", ("weather", "forecast", "temperature")),
    ("calculator", ("calc", "calculator", "calculate", "math", "arithmetic", "evaluate", "eval", "compute")),
    ("search", ("search", "lookup", "find", "query")),
)
_DESCRIPTION_PHRASES: tuple[tuple[ToolKind, tuple[str, ...]], ...] = (
    ("units", ("convert a value", "unit conversion", "between units")),
    ("clock", ("current time", "time zone", "timezone", "current date and time")),
    ("weather", ("weather", "forecast")),
    ("calculator", ("arithmetic", "math expression", "evaluate", "calculator")),
    ("search", ("search", "look up", "lookup")),
)
# Property names that hold each kind's subject.
_SUBJECT_PROPS: dict[ToolKind, tuple[str, ...]] = {
    "weather": ("city", "location", "place", "town", "city_name", "where"),
    "calculator": ("expression", "expr", "formula", "input", "math", "equation"),
    "search": ("query", "q", "search", "term", "terms", "keywords", "text", "question"),
    "units": (), "clock": (), "other": (),
}
# Name words too generic to say that a prompt asks for an "other" tool.
_GENERIC = frozenset({"get", "set", "fetch", "list", "create", "make", "do", "run", "call", "tool", "the", "info",
                      "data", "new", "add", "update", "send", "check", "my", "api", "for", "and", "with"})
_WEATHER_ASK = re.compile(r"\b(weather|forecast|temperature|rain|sunny|hot|cold)\b", re.IGNORECASE)
_CLOCK_ASK = re.compile(r"\bwhat\s+time\b|\b(?:current|local)\s+time\b|\btime\s+(?:is\s+it\s+)?(?:now\s+)?in\b"
                        r"|\bwhat(?:'s| is)\s+the\s+time\b", re.IGNORECASE)
_SEARCH_ASK = re.compile(
    r"\b(?:search(?:\s+(?:the\s+)?(?:web|internet|docs|documentation|notes))?(?:\s+for)?|look\s+up|google)\s+(.+?)"
    r"(?=\s+and\s+(?:what|how|search|look|tell|compute|calculate)\b|[?.!]|$)", re.IGNORECASE)


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    parameters: Schema | None

    @property
    def kind(self) -> ToolKind:
        words = set(_name_words(self.name))
        by_name = next((kind for kind, keys in _NAME_WORDS if words & set(keys)), None)
        description = self.description.lower()
        return by_name or next((kind for kind, phrases in _DESCRIPTION_PHRASES  # type: ignore[return-value]  # next() falls back to "other"
                                if any(p in description for p in phrases)), "other")


@dataclass(frozen=True)
class Ask:
    kind: ToolKind
    subject: str = ""  # the city, expression or query; "" when the kind has none
    tool: str | None = None  # a tool the user named outright
    conversion: Conversion | None = None  # a units ask's value and units
    zone: str | None = None  # a clock ask's IANA time zone


def _name_words(name: str) -> list[str]:
    return re.findall(r"[a-z]+", re.sub(r"([a-z])([A-Z])", r"\1 \2", name).lower())


def _stem(word: str) -> str:
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


def _clock_asks(text: str) -> list[Ask]:
    """Asks for the time now; a stated time asked for elsewhere is the model's own sum (find_time_conversion)."""
    if not _CLOCK_ASK.search(text) or find_time_conversion(text) is not None:
        return []
    named = places(text)
    return [Ask("clock", place, zone=zone_for(place) or place) for place in named] or [Ask("clock", zone="UTC")]


def _subject(tool: ToolSpec, text: str) -> str:
    if tool.kind == "search":  # what to look for: the words after "search for", else the prompt's keywords
        asked = [m.group(1).strip() for m in _SEARCH_ASK.finditer(text)]
        return asked[0] if asked else keywords(text, frozenset(_name_words(tool.name)))
    found = {"weather": places(text), "calculator": find_expressions(text)}.get(tool.kind, [])
    return found[0] if found else ""


def _fits(tool: ToolSpec, text: str) -> bool:
    """The prompt uses a distinctive word of the tool's name ("Book a table ..." → book_table,
    "Where is my order A-1042?" → lookup_order). Only for tools whose kind has no ask of its own."""
    if tool.kind not in ("other", "search"):
        return False
    prompt = {_stem(w) for w in re.findall(r"[a-z]+", text.lower())}
    return any(_stem(w) in prompt for w in _name_words(tool.name) if w not in _GENERIC and len(w) >= 3)


def find_asks(text: str, tools: Sequence[ToolSpec]) -> list[Ask]:
    asks: list[Ask] = []
    if _WEATHER_ASK.search(text):
        asks += [Ask("weather", city) for city in places(text)]
    asks += [Ask("units", conversion=c) for c in find_conversions(text)]
    asks += _clock_asks(text)
    asks += [Ask("calculator", expr) for expr in find_expressions(text)]
    asks += [Ask("search", m.group(1).strip()) for m in _SEARCH_ASK.finditer(text)]
    for tool in tools:
        spaced = tool.name.replace("_", " ")
        named = re.search(rf"\b({re.escape(tool.name)}|{re.escape(spaced)})\b", text, re.IGNORECASE)
        if (named or _fits(tool, text)) and not any(a.kind == tool.kind != "other" for a in asks):
            asks.append(Ask(tool.kind, _subject(tool, text), tool=tool.name))
    return asks


def _role_values(ask: Ask, schema: Schema | None) -> dict[str, JsonValue]:
    """What a units or clock ask decided, under the declared tool's own property names."""
    properties = schema.get("properties") if isinstance(schema, Mapping) else None
    if not isinstance(properties, Mapping):
        return {}
    out: dict[str, JsonValue] = {}
    numeric = [name for name, prop in properties.items()
               if isinstance(prop, Mapping) and prop.get("type") in ("number", "integer")]
    for name in properties:
        words = set(_name_words(name))
        if ask.conversion is not None:
            if numeric and name == numeric[0]:  # the quantity to convert
                out[name] = ask.conversion.value
            elif words & {"from", "source", "input"}:
                out[name] = ask.conversion.from_unit
            elif words & {"to", "target", "output", "into"}:
                out[name] = ask.conversion.to_unit
        elif ask.zone is not None and words & {"timezone", "tz", "zone", "location", "city", "place", "where"}:
            out[name] = ask.zone
    return out


def _call(tool: ToolSpec, ask: Ask, text: str) -> PlannedCall:
    ctx = Context(text, ask.subject, _SUBJECT_PROPS[tool.kind], _role_values(ask, tool.parameters))
    return PlannedCall(tool.name, fill_arguments(tool.parameters, ctx))


def _tool_for(ask: Ask, tools: Sequence[ToolSpec], text: str) -> ToolSpec | None:
    """The tool the user named, else the tool of the ask's kind whose name the prompt echoes most."""
    if ask.tool:
        return next((t for t in tools if t.name == ask.tool), None)
    prompt = {_stem(w) for w in re.findall(r"[a-z]+", text.lower())}
    candidates = [t for t in tools if t.kind == ask.kind]
    return max(candidates, key=lambda t: sum(_stem(w) in prompt for w in _name_words(t.name)), default=None)


def plan_calls(text: str, tools: Sequence[ToolSpec], forced: str | None = None,
               required: bool = False) -> tuple[PlannedCall, ...]:
    """The calls for the user's `text`. `forced` names the only allowed tool; `required` demands a call."""
    allowed = [t for t in tools if forced is None or t.name == forced]
    calls: list[PlannedCall] = []
    for ask in find_asks(text, allowed):
        tool = _tool_for(ask, allowed, text)
        if tool is not None:
            call = _call(tool, ask, text)
            if call not in calls:
                calls.append(call)
    if not calls and (required or forced) and allowed:
        tool = allowed[0]
        calls.append(_call(tool, Ask(tool.kind, _subject(tool, text)), text))
    return tuple(calls)

