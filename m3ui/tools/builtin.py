"""The built-in demo tools, ready to offer to the model."""

from __future__ import annotations

from m3ui.tools.calculator import calculator
from m3ui.tools.clock import current_time
from m3ui.tools.docs_search import search_docs
from m3ui.tools.registry import ToolRegistry
from m3ui.tools.tool import Tool, tool_from_function
from m3ui.tools.units import convert_units
from m3ui.tools.weather import get_weather


def builtin_tools() -> tuple[Tool, ...]:
    return tuple(tool_from_function(f) for f in (get_weather, calculator, convert_units, current_time, search_docs))


def builtin_registry() -> ToolRegistry:
    return ToolRegistry(builtin_tools())
