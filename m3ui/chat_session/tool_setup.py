"""What the model is offered: in the tool demo, the built-in tools plus custom ones (JSON schema + result template),
the user's pick among them, and tool_choice (auto / none / required / one named tool), checked before sending; in
an ordinary chat with its tools switched on, the built-in tools (chat_tools)."""

from __future__ import annotations

import json
from collections.abc import Sequence

from m3ui.client.request import ForceTool, ToolChoice
from m3ui.tools import CustomToolError, Tool, ToolRegistry, builtin_registry, builtin_tools, template_tool_from_json

TOOL_CHOICE_MODES = ("auto", "none", "required")
FORCE_PREFIX = "tool:"  # a forced tool's choice value, so that a tool named "auto" cannot be mistaken for the mode

EXAMPLE_CUSTOM_TOOL = json.dumps({
    "name": "lookup_order",
    "description": "Look up the delivery status of a customer order by its id.",
    "parameters": {"type": "object", "properties": {
        "order_id": {"type": "string", "description": "Order id, e.g. A-1042"},
        "include_items": {"type": "boolean", "default": False}},
        "required": ["order_id"]},
    "result_template": "Order $order_id: shipped on Monday, arriving Thursday (demo data; items listed: "
                       "$include_items).",
}, indent=2)


class ToolSetupError(ValueError):
    """The tool selection cannot be sent as it is; the message says what to change."""


def custom_tools(specs: Sequence[str]) -> tuple[Tool, ...]:
    """The custom tools of stored definitions (each was checked when added)."""
    return tuple(template_tool_from_json(spec) for spec in specs)


def all_tools(specs: Sequence[str]) -> tuple[Tool, ...]:
    return builtin_tools() + custom_tools(specs)


def add_custom(specs: Sequence[str], text: str) -> tuple[tuple[str, ...], Tool]:
    """Check a definition and add it (replacing a custom tool of the same name); CustomToolError says why not."""
    tool = template_tool_from_json(text)
    if any(tool.name == builtin.name for builtin in builtin_tools()):
        raise CustomToolError(f"{tool.name!r} is a built-in tool; give the custom tool another name")
    kept = tuple(spec for spec, existing in zip(specs, custom_tools(specs), strict=True) if existing.name != tool.name)
    return (*kept, text), tool


def remove_custom(specs: Sequence[str], name: str) -> tuple[str, ...]:
    return tuple(spec for spec, tool in zip(specs, custom_tools(specs), strict=True) if tool.name != name)


def tool_choice_options(selected: Sequence[str]) -> list[tuple[str, str]]:
    """(label, value) pairs: the modes, then "force <tool>" for every selected tool."""
    return [(mode, mode) for mode in TOOL_CHOICE_MODES] + [(f"force {name}", FORCE_PREFIX + name) for name in selected]


def tool_choice_from(value: str, selected: Sequence[str]) -> ToolChoice:
    if value in ("auto", "none"):
        return value  # type: ignore[return-value]  # "auto" or "none": checked above
    if value == "required":
        if not selected:
            raise ToolSetupError("tool_choice 'required' needs at least one selected tool")
        return "required"
    name = value.removeprefix(FORCE_PREFIX)
    if not value.startswith(FORCE_PREFIX) or name not in selected:
        raise ToolSetupError(f"tool_choice {value!r} names no selected tool; pick the tool or another choice")
    return ForceTool(name)


def selected_registry(selected: Sequence[str], specs: Sequence[str]) -> ToolRegistry:
    """The selected tools, in the order they are offered (a name no longer available is ignored)."""
    wanted = set(selected)
    return ToolRegistry(tool for tool in all_tools(specs) if tool.name in wanted)


def chat_tools(on: bool) -> ToolRegistry:
    """What an ordinary chat offers the model: the built-in tools when its switch is on, else none (no `tools`
    in its requests). They run without approval: each only computes or reads bundled demo data (no network, no
    writes, nothing outside the process), so there is nothing to approve; approval and custom tools stay in the
    Tools tab."""
    return builtin_registry() if on else ToolRegistry()
