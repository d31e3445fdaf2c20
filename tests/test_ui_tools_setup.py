"""What the tool demo offers: built-ins plus custom tools, the selection, and tool_choice checked before sending."""

from __future__ import annotations

import json

import pytest

from m3ui.chat_session import (
    EXAMPLE_CUSTOM_TOOL,
    ToolSetupError,
    add_custom,
    custom_tools,
    remove_custom,
    selected_registry,
    tool_choice_from,
    tool_choice_options,
)
from m3ui.client import ForceTool, ToolCall
from m3ui.tools import CustomToolError


def test_the_example_custom_tool_is_valid_and_fills_its_template():
    specs, tool = add_custom((), EXAMPLE_CUSTOM_TOOL)
    assert tool.name == "lookup_order" and specs == (EXAMPLE_CUSTOM_TOOL,)
    registry = selected_registry(["lookup_order", "get_weather"], specs)
    assert registry.names == ("get_weather", "lookup_order")
    result = registry.invoke(ToolCall.from_json_text(0, "c1", "lookup_order", '{"order_id": "A-7"}'))
    assert not result.is_error and result.content.startswith("Order A-7: shipped")
    bad = registry.invoke(ToolCall.from_json_text(0, "c2", "lookup_order", '{"order": 7}'))
    assert bad.is_error and "order_id" in bad.content


def test_a_custom_tool_replaces_one_of_the_same_name_and_cannot_shadow_a_builtin():
    specs, _ = add_custom((), EXAMPLE_CUSTOM_TOOL)
    changed = json.loads(EXAMPLE_CUSTOM_TOOL) | {"description": "v2"}
    specs, _ = add_custom(specs, json.dumps(changed))
    assert [t.description for t in custom_tools(specs)] == ["v2"]
    with pytest.raises(CustomToolError, match="built-in"):
        add_custom(specs, json.dumps(changed | {"name": "get_weather"}))
    with pytest.raises(CustomToolError, match="not valid JSON"):
        add_custom(specs, "{oops")
    assert remove_custom(specs, "lookup_order") == ()


def test_tool_choice_offers_the_modes_and_forcing_each_selected_tool():
    assert tool_choice_options(["get_weather"]) == [("auto", "auto"), ("none", "none"), ("required", "required"),
                                                     ("force get_weather", "tool:get_weather")]
    assert tool_choice_from("tool:get_weather", ["get_weather"]) == ForceTool("get_weather")
    assert tool_choice_from("none", []) == "none"
    with pytest.raises(ToolSetupError, match="names no selected tool"):
        tool_choice_from("tool:calculator", ["get_weather"])
    with pytest.raises(ToolSetupError, match="at least one"):
        tool_choice_from("required", [])
    with pytest.raises(ToolSetupError):
        tool_choice_from("get_weather", ["get_weather"])  # a bare name is not a choice value
