"""Streaming M3's native tool-call XML into OpenAI tool-call deltas, as `--tool-call-parser minimax-m3` does.

A mirror of sglang/srt/function_call/minimax_m3.py (MinimaxM3Detector.parse_streaming_increment): the first
delta of a call carries its name and empty arguments, then `{`; each parameter opens with `"name": `;
string values stream piecewise (JSON-escaped, a possible partial closing tag held back), other scalars and
whole objects/arrays arrive in one piece when their closing tag does; `}` closes the call. Deltas of one
increment for the same call are merged into one. Values are typed by the tool's JSON schema.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from launch.sim.tokens import NAMESPACE
from launch.sim.tool_values import Schema, child_schema, leaf_value, parse_parameter, schema_has

CALL_START = NAMESPACE + "<tool_call>"
CALL_END = NAMESPACE + "</tool_call>"
INVOKE_PREFIX = NAMESPACE + '<invoke name="'
INVOKE_END = NAMESPACE + "</invoke>"
PARAM_PREFIX = NAMESPACE + "<"
_TAG_SPACING = re.compile(re.escape(NAMESPACE) + r"[ \t\r\n]+(?=<)")
_SPACING = " \t\r\n"


@dataclass
class CallDelta:
    index: int
    name: str | None
    arguments: str


def _flushable(text: str, token: str) -> int:
    for length in range(min(len(token) - 1, len(text)), 0, -1):
        if token.startswith(text[-length:]):
            return len(text) - length
    start = text.rfind(NAMESPACE)
    suffix = text[start + len(NAMESPACE):] if start != -1 else ""
    return start if suffix and all(ch in _SPACING for ch in suffix) else len(text)


class ToolCallStreamer:
    def __init__(self, tools: Mapping[str, Schema | None]) -> None:
        self._tools = tools
        self._buffer = ""
        self._in_block = False
        self._function: str | None = None
        self._function_schema: Any = None
        self._param: str | None = None
        self._param_schema: Any = None
        self._param_text = ""
        self._param_complex = False
        self._string_open = False
        self._first_param = True
        self._tool_id = -1

    def feed(self, new_text: str) -> tuple[str, list[CallDelta]]:
        """Normal text and call deltas for one increment."""
        self._buffer = _TAG_SPACING.sub(NAMESPACE, self._buffer + new_text)
        calls: list[CallDelta]
        normal, calls = "", []
        while True:
            if not self._in_block:
                start = self._buffer.find(CALL_START)
                if start == -1:
                    cut = _flushable(self._buffer, CALL_START)
                    normal += self._buffer[:cut]
                    self._buffer = self._buffer[cut:]
                    break
                normal += self._buffer[:start]
                self._buffer = self._buffer[start + len(CALL_START):]
                self._in_block, self._function = True, None
            elif self._function is None:
                if not (self._block_end() or self._invoke_start(calls)):
                    break
            elif self._param is None:
                if not (self._invoke_end(calls) or self._param_start(calls)):
                    break
            elif not (self._complex_value(calls) if self._param_complex else self._scalar_value(calls)):
                break
        return normal, calls

    def _emit(self, calls: list[CallDelta], text: str, name: str | None = None) -> None:
        if name is None and calls and calls[-1].index == self._tool_id and calls[-1].name is None:
            calls[-1].arguments += text
        else:
            calls.append(CallDelta(self._tool_id, name, text))

    def _block_end(self) -> bool:
        end, invoke = self._buffer.find(CALL_END), self._buffer.find(INVOKE_PREFIX)
        if end == -1 or (invoke != -1 and invoke < end):
            return False
        self._buffer = self._buffer[end + len(CALL_END):]
        self._in_block = False
        return True

    def _invoke_start(self, calls: list[CallDelta]) -> bool:
        start = self._buffer.find(INVOKE_PREFIX)
        name_end = self._buffer.find('">', start + len(INVOKE_PREFIX)) if start != -1 else -1
        if name_end == -1:
            return False
        self._function = self._buffer[start + len(INVOKE_PREFIX):name_end]
        self._buffer = self._buffer[name_end + 2:]
        self._function_schema = self._tools.get(self._function)
        self._first_param = True
        self._tool_id = max(self._tool_id, 0)
        self._emit(calls, "", name=self._function)
        self._emit(calls, "{")
        return True

    def _invoke_end(self, calls: list[CallDelta]) -> bool:
        end, param = self._buffer.find(INVOKE_END), self._buffer.find(PARAM_PREFIX)
        if end == -1 or (param != -1 and param < end):
            return False
        self._buffer = self._buffer[end + len(INVOKE_END):]
        self._emit(calls, "}")
        self._tool_id += 1
        self._function = self._function_schema = None
        return True

    def _param_start(self, calls: list[CallDelta]) -> bool:
        start = self._buffer.find(PARAM_PREFIX)
        close = self._buffer.find(">", start + len(PARAM_PREFIX)) if start != -1 else -1
        if close == -1:
            return False
        self._param = self._buffer[start + len(PARAM_PREFIX):close].strip()
        self._buffer = self._buffer[close + 1:]
        self._param_schema = child_schema(self._function_schema, self._param)
        self._param_text, self._string_open = "", False
        self._param_complex = schema_has(self._param_schema, "object", "array") or self._buffer.startswith(PARAM_PREFIX)
        self._emit(calls, ("" if self._first_param else ", ") + json.dumps(self._param, ensure_ascii=False) + ": ")
        self._first_param = False
        return True

    def _complex_value(self, calls: list[CallDelta]) -> bool:
        end_tag = f"{NAMESPACE}</{self._param}>"
        end = self._buffer.find(end_tag)
        if end == -1:
            cut = _flushable(self._buffer, end_tag)
            self._param_text += self._buffer[:cut]
            self._buffer = self._buffer[cut:]
            return False
        value = parse_parameter(self._param_text + self._buffer[:end], self._param_schema)
        self._emit(calls, json.dumps(value, ensure_ascii=False))
        self._buffer = self._buffer[end + len(end_tag):]
        self._param = None
        return True

    def _scalar_value(self, calls: list[CallDelta]) -> bool:
        end_tag = f"{NAMESPACE}</{self._param}>"
        end = self._buffer.find(end_tag)
        cut = _flushable(self._buffer, end_tag) if end == -1 else end
        self._scalar_text(self._buffer[:cut], calls)
        if end == -1:
            self._buffer = self._buffer[cut:]
            return False
        if schema_has(self._param_schema, "string", "str"):
            self._emit(calls, '"' if self._string_open else '""')
        else:
            self._emit(calls, json.dumps(leaf_value(self._param_text, self._param_schema), ensure_ascii=False))
        self._buffer = self._buffer[end + len(end_tag):]
        self._param = None
        return True

    def _scalar_text(self, text: str, calls: list[CallDelta]) -> None:
        if not text:
            return
        if schema_has(self._param_schema, "string", "str"):
            escaped = json.dumps(text, ensure_ascii=False)[1:-1]
            self._emit(calls, escaped if self._string_open else '"' + escaped)
            self._string_open = True
        else:
            self._param_text += text
