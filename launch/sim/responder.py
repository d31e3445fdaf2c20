"""Raw output → the OpenAI chat response, as sglang-kt's serving_chat.py builds it.

Streaming, per increment of a choice: its first output brings its role chunk (`role: assistant`,
`content: ""`); the reasoning splitter runs first (when the server has `--reasoning-parser minimax-m3` and
the request keeps `separate_reasoning`), then the tool-call parser (server `--tool-call-parser minimax-m3`,
tools declared, tool_choice not "none"; the JSON-array parser for "required" or a named tool) or plain
content, which alone carries the increment's logprobs. With stream_options.continuous_usage_stats every
reasoning, content and tool-call chunk carries the usage so far. With n > 1 the choices' increments
interleave as they come, each choice under its own request id. Then one finish chunk per choice (`stop`
becomes `tool_calls` when calls were streamed), the usage chunk with include_usage (the prompt counted
once), and `[DONE]`. Non-streaming parses each choice's whole text once, with the one-shot semantics.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from launch.sim import chunks
from launch.sim.chunks import ChunkHeader, Usage
from launch.sim.json_tool_stream import JsonCallStreamer
from launch.sim.logprobs import token_logprobs
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
    stream_reasoning: bool = True  # False: the reasoning goes out whole when its block closes


@dataclass(frozen=True)
class StreamOptions:
    include_usage: bool = False
    continuous_usage: bool = False
    top_logprobs: int | None = None  # None: no logprobs; else how many alternatives each token lists


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
        self._splitter = (ReasoningSplitter(setup.forced_reasoning, setup.stream_reasoning) if setup.reasoning
                          else None)
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


@dataclass
class _Choice:
    """One choice's stream state."""

    index: int
    header: ChunkHeader
    router: DeltaRouter
    started: bool = False
    streamed_calls: bool = False
    completion_tokens: int = 0
    logprob_tokens: int = 0  # how many tokens' logprobs have gone by (sent or not)


async def _interleaved(steps: Sequence[AsyncIterator[Step]]) -> AsyncIterator[tuple[int, Step]]:
    """(choice index, step) as each choice produces them (tokenizer_manager._handle_batch_request)."""
    if len(steps) == 1:
        async for step in steps[0]:
            yield 0, step
        return
    pending = {asyncio.ensure_future(anext(it)): i for i, it in enumerate(steps)}
    try:
        while pending:
            done, _ = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            for task in sorted(done, key=lambda t: pending[t]):
                index = pending.pop(task)
                try:
                    step = task.result()
                except StopAsyncIteration:
                    continue
                yield index, step
                pending[asyncio.ensure_future(anext(steps[index]))] = index
    finally:
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        for it in steps:
            await it.aclose()  # type: ignore[attr-defined]  # an async generator, typed as the iterator it is used as


async def sse_events(headers: Sequence[ChunkHeader], steps: Sequence[AsyncIterator[Step]], setup: ParseSetup,
                     prompt_tokens: int, options: StreamOptions, tokens: Sequence[str]) -> AsyncIterator[str]:
    """`tokens`: each generated token's text, for logprobs (every choice generates the same)."""
    states = [_Choice(i, header, DeltaRouter(setup)) for i, header in enumerate(headers)]
    finishes: dict[int, Finish] = {}
    last = states[0]
    async for index, step in _interleaved(steps):
        state = last = states[index]
        state.completion_tokens = step.completion_tokens
        if step.finish is not None:
            finishes.setdefault(index, step.finish)
        logprobs = None
        if options.top_logprobs is not None:
            if state.logprob_tokens < step.completion_tokens or step.finish is None:
                logprobs = token_logprobs(tokens[state.logprob_tokens:step.completion_tokens], state.logprob_tokens,
                                          options.top_logprobs)
            state.logprob_tokens = step.completion_tokens
        for event in _step_events(state, step, setup, prompt_tokens, options, logprobs):
            yield event
    for index, finish in finishes.items():
        reason = "tool_calls" if states[index].streamed_calls and finish.kind == "stop" else finish.kind
        yield chunks.event(_now(last.header), chunks.delta(), finish_reason=reason, matched_stop=finish.matched,
                           index=index)
    if options.include_usage:
        completion = sum(state.completion_tokens for state in states)
        yield chunks.event(_now(last.header), None, usage=Usage(prompt_tokens, completion))
    yield chunks.EVENT_DONE


def _step_events(state: _Choice, step: Step, setup: ParseSetup, prompt_tokens: int, options: StreamOptions,
                 logprobs: dict[str, Any] | None) -> list[str]:
    header, index = _now(state.header), state.index
    usage = Usage(prompt_tokens, state.completion_tokens) if options.continuous_usage else None
    events = []
    if not state.started:  # sent with the first output, i.e. after the prefill
        state.started = True
        events.append(chunks.event(header, chunks.delta(role="assistant", content=""), index=index))
    pieces = state.router.feed(step.text)
    if pieces.reasoning:
        events.append(chunks.event(header, chunks.delta(reasoning=pieces.reasoning), index=index, usage=usage))
    if setup.tool_mode == "off":
        if pieces.content:
            events.append(chunks.event(header, chunks.delta(content=pieces.content), index=index, usage=usage,
                                       logprobs=logprobs))
        return events
    if pieces.content:
        events.append(chunks.event(header, chunks.delta(content=pieces.content), index=index, usage=usage))
    for call in pieces.calls:
        state.streamed_calls = True
        call_json = chunks.tool_call_json(new_call_id() if call.name else None, call.index, call.name,
                                          call.arguments)
        events.append(chunks.event(header, chunks.delta(tool_calls=[call_json]), index=index, usage=usage))
    return events


def _now(header: ChunkHeader) -> ChunkHeader:
    return ChunkHeader(header.id, int(time.time()), header.model)


def choice_body(index: int, text: str, finish: Finish, setup: ParseSetup,
                logprobs: dict[str, Any] | None) -> dict[str, Any]:
    """One choice of the non-streaming response (serving_chat._build_chat_response)."""
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
    return chunks.choice(index, content=text or None, reasoning=reasoning, tool_calls=tool_calls,
                         finish_reason=reason, matched_stop=matched, logprobs=logprobs)
