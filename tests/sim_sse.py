"""Read the simulated engine's chat streams as a client would, and the tool schemas the sim tests declare."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import httpx

WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "Get the current weather for a city.",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string"}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
        "days": {"type": "integer"}}, "required": ["city"]}}}
CALCULATOR = {"type": "function", "function": {
    "name": "calculator", "description": "Evaluate an arithmetic expression.",
    "parameters": {"type": "object", "properties": {"expression": {"type": "string"}}, "required": ["expression"]}}}
SEARCH = {"type": "function", "function": {
    "name": "web_search", "description": "Search the web.",
    "parameters": {"type": "object", "properties": {"query": {"type": "string"}, "max_results": {"type": "integer"}},
                   "required": ["query"]}}}
PLAN_TRIP = {"type": "function", "function": {
    "name": "plan_trip", "description": "Plan a trip.",
    "parameters": {"type": "object", "properties": {
        "cities": {"type": "array", "items": {"type": "string"}},
        "days": {"type": "integer"},
        "budget": {"type": "number"},
        "options": {"type": "object", "properties": {"metric": {"type": "boolean"}, "notes": {"type": "string"}},
                    "required": ["metric", "notes"]},
        "stops": {"type": "array", "items": {"type": "object", "properties": {
            "city": {"type": "string"}, "nights": {"type": "integer"}}, "required": ["city", "nights"]}}},
        "required": ["cities", "days", "budget", "options", "stops"]}}}
ALL_TOOLS = [WEATHER, CALCULATOR, SEARCH, PLAN_TRIP]


@dataclass
class Assembled:
    """A streamed message put back together, plus the raw events."""

    events: list[str] = field(default_factory=list)
    reasoning: str = ""
    content: str = ""
    calls: dict[int, dict[str, Any]] = field(default_factory=dict)  # index -> {id, name, arguments}
    finish_reason: str | None = None
    matched_stop: int | str | None = None
    usage: dict[str, Any] | None = None
    error: dict[str, Any] | None = None

    @property
    def chunks(self) -> list[dict[str, Any]]:
        return [json.loads(e[len("data: "):]) for e in self.events if e != "data: [DONE]\n\n"]


def read_events(response: httpx.Response) -> list[str]:
    buffer, events = "", []
    for text in response.iter_text():
        buffer += text
        while "\n\n" in buffer:
            event, buffer = buffer.split("\n\n", 1)
            events.append(event + "\n\n")
    return events


def assemble(events: list[str]) -> Assembled:
    out = Assembled(events)
    for chunk in out.chunks:
        if "error" in chunk:
            out.error = chunk["error"]
            continue
        if chunk["usage"] is not None:
            out.usage = chunk["usage"]
        for choice in chunk["choices"]:
            delta = choice["delta"]
            out.reasoning += delta["reasoning_content"] or ""
            out.content += delta["content"] or ""
            for call in delta["tool_calls"] or []:
                entry = out.calls.setdefault(call["index"], {"id": None, "name": None, "arguments": ""})
                entry["id"] = entry["id"] or call["id"]
                entry["name"] = entry["name"] or call["function"]["name"]
                entry["arguments"] += call["function"]["arguments"] or ""
            if choice["finish_reason"] is not None:
                out.finish_reason, out.matched_stop = choice["finish_reason"], choice["matched_stop"]
    return out


def stream_chat(url: str, body: dict[str, Any], headers: dict[str, str] | None = None) -> Assembled:
    with httpx.stream("POST", f"{url}/v1/chat/completions", json={**body, "stream": True}, headers=headers,
                      timeout=30) as response:
        assert response.status_code == 200, response.read()
        return assemble(read_events(response))


def chat(url: str, body: dict[str, Any], headers: dict[str, str] | None = None) -> httpx.Response:
    return httpx.post(f"{url}/v1/chat/completions", json={**body, "stream": False}, headers=headers, timeout=30)
