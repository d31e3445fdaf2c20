"""Tools the model may call: plain typed functions with derived schemas, guarded execution. No Gradio."""

from m3ui.tools.builtin import builtin_registry, builtin_tools
from m3ui.tools.custom import CustomToolError, template_tool, template_tool_from_json
from m3ui.tools.executor import run_tool_calls
from m3ui.tools.registry import ToolRegistry
from m3ui.tools.result import ToolResult
from m3ui.tools.tool import Tool, tool_from_function

__all__ = [
    "CustomToolError",
    "Tool",
    "ToolRegistry",
    "ToolResult",
    "builtin_registry",
    "builtin_tools",
    "run_tool_calls",
    "template_tool",
    "template_tool_from_json",
    "tool_from_function",
]
