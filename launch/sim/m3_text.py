"""MiniMax-M3's raw output text: what the model would emit, before any of sglang's parsers look at it.

Thinking sits between `<mm:think>` and `</mm:think>`; with `thinking_mode: enabled` the chat template
has already emitted the opener, so the output starts inside the reasoning. Tool calls use the namespace
token before every tag (see ENGINE_CONTRACT.md §4); arrays are `<item>` children, objects nested tags.
With `tool_choice` "required" or a named tool sglang constrains the output to a JSON array instead.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from launch.sim.tokens import NAMESPACE, THINK_END, THINK_START

JsonValue = None | bool | int | float | str | Sequence["JsonValue"] | Mapping[str, "JsonValue"]
JsonObject = Mapping[str, JsonValue]

# How the reply's thinking shows up in the raw text.
ThinkStyle = Literal[
    "prefilled",  # thinking_mode enabled: the template opened the block, the output closes it
    "self",  # adaptive: the model opens and closes the block itself (or skips it)
    "none",  # disabled: no block at all
    "stray_close",  # M3's multi-turn quirk without thinking_mode: a lone `</mm:think>` before the answer
]


@dataclass(frozen=True)
class PlannedCall:
    name: str
    arguments: JsonObject


@dataclass(frozen=True)
class Reply:
    """What the simulated model says: its thinking, its answer and its tool calls."""

    reasoning: str | None
    content: str
    calls: tuple[PlannedCall, ...] = field(default_factory=tuple)
    json_calls: bool = False  # tool_choice required / named: constrained JSON array instead of native XML
    thinks: bool = True  # whether the model opens a thinking block when it decides (adaptive mode)


def _scalar(value: JsonValue) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _parameter(tag: str, value: JsonValue) -> str:
    if isinstance(value, Mapping):
        children = "".join("\n" + _parameter(k, v) for k, v in value.items())
    elif isinstance(value, Sequence) and not isinstance(value, str):
        children = "".join("\n" + _parameter("item", v) for v in value)
    else:
        return f"{NAMESPACE}<{tag}>{_scalar(value)}{NAMESPACE}</{tag}>"
    return f"{NAMESPACE}<{tag}>{children}\n{NAMESPACE}</{tag}>"


def tool_call_xml(calls: Sequence[PlannedCall]) -> str:
    """One `<tool_call>` block; several `<invoke>` in it are parallel calls."""
    lines = [f"{NAMESPACE}<tool_call>"]
    for call in calls:
        lines.append(f'{NAMESPACE}<invoke name="{call.name}">')
        lines.extend(_parameter(name, value) for name, value in call.arguments.items())
        lines.append(f"{NAMESPACE}</invoke>")
    lines.append(f"{NAMESPACE}</tool_call>")
    return "\n".join(lines)


def tool_call_json(calls: Sequence[PlannedCall]) -> str:
    """The constrained output for tool_choice required / named (function_call/utils.py's array schema)."""
    return json.dumps([{"name": c.name, "parameters": c.arguments} for c in calls], ensure_ascii=False)


def render_raw(reply: Reply, style: ThinkStyle) -> str:
    if reply.calls:
        tail = tool_call_json(reply.calls) if reply.json_calls else tool_call_xml(reply.calls)
        body = reply.content + ("\n" if reply.content and not reply.json_calls else "") + tail
    else:
        body = reply.content
    if style == "prefilled":
        return (reply.reasoning or "") + THINK_END + body
    if style == "self" and reply.reasoning and reply.thinks:
        return THINK_START + reply.reasoning + THINK_END + body
    if style == "stray_close":
        return THINK_END + body
    return body
