"""Raw output → the OpenAI chat response, as sglang-kt's serving_chat.py builds it.

Streaming, per increment: the first output brings the role chunk (`role: assistant`, `content: ""`); the
reasoning splitter runs first (when the server has `--reasoning-parser minimax-m3` and the request keeps
`separate_reasoning`), then the tool-call parser (server `--tool-call-parser minimax-m3`, tools declared,
tool_choice not "none"; the JSON-array parser for "required" or a named tool) or plain content. Then a
separate finish chunk (`stop` becomes `tool_calls` when calls were streamed), the usage chunk with
include_usage, and `[DONE]`. Non-streaming parses the whole text once, with the one-shot semantics.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from launch.sim import chunks
from launch.sim.chunks import ChunkHeader, Usage
from launch.sim.json_tool_stream import JsonCallStreamer
from launch.sim.reasoning_split import ReasoningSplitter
from launch.sim.scheduler import Finish, Step
from launch.sim.tool_stream import CALL_START, CallDelta, ToolCallStreamer
from launch.sim.tool_values import Schema

M3_PARSER = "minimax-m3"
ToolMode = Literal["off", "native", "json"]


@dataclass(frozen=True)
class ParseSetup:
    reasoning: bool  # split reasoning from the answer
    forced_reasoning: bool  # thinking_mode enabled: output starts inside the thinking block
    tool_mode: ToolMode
    tools: Mapping[str, Schema | None]


def new_call_id() -> str:
    return f"call_{uuid.uuid4().hex[:24]}"


@dataclass
class _Pieces:
    reasoning: str
    content: str
    calls: list[CallDelta]


class DeltaRouter:
    """Feeds raw increments through the parsers the server and request enable."""

    def __init__(self, setup: ParseSetup) -> None:
        self.setup = setup
        self._splitter = ReasoningSplitter(setup.forced_reasoning) if setup.reasoning else None
        self._tools: ToolCallStreamer | JsonCallStreamer | None = (
            JsonCallStreamer() if setup.tool_mode == "json" else
            ToolCallStreamer(setup.tools) if setup.tool_mode == "native" else None)

    def feed(self, text: str) -> _Pieces:
        reasoning = ""
        if self._splitter is not None:
            split = self._splitter.feed(text)
            reasoning, text = split.reasoning, split.normal
        if self._tools is None:
            return _Pieces(reasoning, text, [])
        content, calls = self._tools.feed(text)
        return _Pieces(reasoning, content, calls)


async def sse_events(header: ChunkHeader, steps: AsyncIterator[Step], setup: ParseSetup, prompt_tokens: int,
                     include_usage: bool) -> AsyncIterator[str]:
    router = DeltaRouter(setup)
    finish: Finish | None = None
    completion_tokens = 0
    streamed_calls = started = False
    async for step in steps:
        if not started:  # sent with the first output, i.e. after the prefill
            started = True
            yield chunks.event(_now(header), chunks.delta(role="assistant", content=""))
        completion_tokens = step.completion_tokens
        finish = step.finish or finish
        pieces = router.feed(step.text)
        if pieces.reasoning:
            yield chunks.event(_now(header), chunks.delta(reasoning=pieces.reasoning))
        if pieces.content:
            yield chunks.event(_now(header), chunks.delta(content=pieces.content))
        for call in pieces.calls:
            streamed_calls = True
            call_json = chunks.tool_call_json(new_call_id() if call.name else None, call.index, call.name,
                                              call.arguments)
            yield chunks.event(_now(header), chunks.delta(tool_calls=[call_json]))
    if finish is not None:
        reason = "tool_calls" if streamed_calls and finish.kind == "stop" else finish.kind
        yield chunks.event(_now(header), chunks.delta(), finish_reason=reason, matched_stop=finish.matched)
    if include_usage:
        yield chunks.event(_now(header), None, usage=Usage(prompt_tokens, completion_tokens))
    yield chunks.EVENT_DONE


def _now(header: ChunkHeader) -> ChunkHeader:
    return ChunkHeader(header.id, int(time.time()), header.model)


def completion_body(header: ChunkHeader, text: str, finish: Finish, setup: ParseSetup, usage: Usage) -> dict[str, Any]:
    reasoning: str | None = None
    if setup.reasoning:
        split = ReasoningSplitter(setup.forced_reasoning).whole(text)
        reasoning, text = split.reasoning or None, split.normal
    reason: str  # the finish's kind, or "tool_calls"
    reason, matched = finish.kind, finish.matched
    tool_calls = None
    if setup.tool_mode == "json":
        reason, matched = ("tool_calls", None) if reason == "stop" else (reason, matched)
        try:
            tool_calls = [chunks.tool_call_json(new_call_id(), i, c["name"], json.dumps(c["parameters"],
                                                                                       ensure_ascii=False))
                          for i, c in enumerate(json.loads(text))]
            text = ""
        except (ValueError, TypeError, KeyError):
            tool_calls = None
    elif setup.tool_mode == "native" and CALL_START in text:
        reason, matched = ("tool_calls", None) if reason == "stop" else (reason, matched)
        text, deltas = ToolCallStreamer(setup.tools).feed(text)
        tool_calls = chunks.tool_calls_from_deltas(deltas, new_call_id)
    return chunks.completion(header, content=text or None, reasoning=reasoning, tool_calls=tool_calls,
                             finish_reason=reason, matched_stop=matched, usage=usage)
