"""Streaming the constrained JSON array (tool_choice "required" or a named tool) into tool-call deltas.

sglang swaps the model's parser for JsonArrayParser here (serving_chat.py _process_tool_call_stream): the
output is `[{"name": ..., "parameters": {...}}, ...]`; each call's name arrives alone with empty
arguments once complete, then the parameters object's JSON text streams as it is generated. The pieces
are cut differently from sglang's partial-JSON diffing, but they reassemble to the same arguments
(json.dumps of the object), which is what a client relies on. No answer text comes out of this path.
"""

from __future__ import annotations

from launch.sim.tool_stream import CallDelta

ARGUMENT_KEYS = ("parameters", "arguments")


class JsonCallStreamer:
    def __init__(self) -> None:
        self._depth = 0
        self._in_string = False
        self._escaped = False
        self._string = ""
        self._key: str | None = None
        self._expect_value = False
        self._index = -1
        self._capturing = False

    def feed(self, new_text: str) -> tuple[str, list[CallDelta]]:
        calls: list[CallDelta] = []
        for ch in new_text:
            if self._capturing:
                self._argument_char(ch, calls)
            elif self._in_string:
                self._string_char(ch, calls)
            else:
                self._structure_char(ch, calls)
        return "", calls

    def _argument_char(self, ch: str, calls: list[CallDelta]) -> None:
        if calls and calls[-1].index == self._index and calls[-1].name is None:
            calls[-1].arguments += ch
        else:
            calls.append(CallDelta(self._index, None, ch))
        if self._in_string:
            if self._escaped:
                self._escaped = False
            elif ch == "\\":
                self._escaped = True
            elif ch == '"':
                self._in_string = False
            return
        if ch == '"':
            self._in_string = True
        elif ch in "{[":
            self._depth += 1
        elif ch in "}]":
            self._depth -= 1
            self._capturing = self._depth > 2

    def _string_char(self, ch: str, calls: list[CallDelta]) -> None:
        if self._escaped or ch == "\\":
            self._escaped = not self._escaped
            self._string += ch
            return
        if ch != '"':
            self._string += ch
            return
        self._in_string = False
        if self._depth != 2:
            return
        if not self._expect_value:
            self._key = self._string
        elif self._key == "name":
            self._index += 1
            calls.append(CallDelta(self._index, self._string, ""))

    def _structure_char(self, ch: str, calls: list[CallDelta]) -> None:
        if ch == '"':
            self._in_string, self._string = True, ""
        elif ch == ":" and self._depth == 2:
            self._expect_value = True
        elif ch == "," and self._depth == 2:
            self._expect_value = False
        elif ch in "{[":
            if ch == "{" and self._depth == 2 and self._expect_value and self._key in ARGUMENT_KEYS:
                self._capturing = True
                self._argument_char(ch, calls)
                return
            self._depth += 1
            if self._depth == 2:
                self._expect_value = False
        elif ch in "}]":
            self._depth -= 1
