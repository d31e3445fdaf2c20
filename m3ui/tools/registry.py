"""ToolRegistry: the tools offered to the model, and the guarded call of one of them."""

from __future__ import annotations

import json
import time
from collections.abc import Iterable

from m3ui.client.events import ToolCall
from m3ui.tools.result import ToolResult
from m3ui.tools.tool import Tool
from m3ui.tools.validate import schema_errors

MAX_RESULT_CHARS = 20_000  # a runaway tool must not flood the model's context


class ToolRegistry:
    """Arguments from the model are untrusted: every failure becomes a ToolResult with is_error, never a raise."""

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        for tool in tools:
            if tool.name in self._tools:
                raise ValueError(f"two tools are named {tool.name!r}")
            self._tools[tool.name] = tool

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self._tools)

    def openai_tools(self) -> list[dict[str, object]]:
        return [tool.to_openai() for tool in self._tools.values()]

    def refusal(self, call: ToolCall) -> str | None:
        """Why this call must not run (unknown tool, bad JSON, schema violation), or None."""
        tool = self._tools.get(call.name)
        if tool is None:
            # sglang-kt's streaming parser also emits calls to tools that were never declared.
            return f"unknown tool {call.name!r}; available tools: {', '.join(self._tools) or 'none'}"
        if call.arguments is None:
            return f"{call.parse_error}; arguments received: {call.arguments_json[:200]!r}"
        errors = schema_errors(tool.parameters, call.arguments)
        if errors:
            return f"invalid arguments for {tool.name}: " + "; ".join(errors[:5])
        return None

    def invoke(self, call: ToolCall) -> ToolResult:
        """Validate, then call the function; runs in a worker thread (see executor)."""
        started = time.monotonic()
        try:
            refusal = self.refusal(call)
        except Exception as exc:  # a malformed custom schema must not take the loop down
            refusal = f"cannot check the arguments of {call.name}: {exc}"
        if refusal is not None:
            return ToolResult.error(call, refusal)
        tool = self._tools[call.name]
        try:
            value = tool.function(**(call.arguments or {}))
        except Exception as exc:  # a tool's bug or refusal is the model's information, not our crash
            return ToolResult.error(call, f"{tool.name} failed: {exc}", time.monotonic() - started)
        return ToolResult(call.id, call.name, _as_text(value), duration_s=time.monotonic() - started)


def _as_text(value: object) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    if len(text) > MAX_RESULT_CHARS:
        return text[:MAX_RESULT_CHARS] + f"\n[truncated: {len(text) - MAX_RESULT_CHARS} more characters]"
    return text
