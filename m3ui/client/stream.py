"""One streaming chat completion as an iterator of typed events, with a thread-safe stop()."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from collections.abc import Callable, Iterator
from typing import Any, cast

import openai

from m3ui.client.errors import stream_error_from
from m3ui.client.events import (
    Finished,
    FinishReason,
    ReasoningDelta,
    StreamError,
    StreamEvent,
    StreamStats,
    ToolCallsComplete,
    Usage,
)
from m3ui.client.http_library import http
from m3ui.client.think_tags import StrayCloserFilter
from m3ui.client.timing import Clock, StreamTimer
from m3ui.client.tool_call_assembler import ToolCallAssembler

SdkStream = openai.Stream[Any]
_STREAM_FAILURES = (openai.APIError, http.HTTPError, json.JSONDecodeError)


class ChatStream:
    """Iterate once for events; the last one is always Finished or StreamError.

    stop() may be called from any thread: it shuts the socket down, which wakes a blocked read and makes
    the engine see the disconnect and abort the request. Closing the iterator early does the same.
    """

    def __init__(
        self,
        open_stream: Callable[[], SdkStream],
        base_url: str,
        content_filter: StrayCloserFilter,
        clock: Clock,
    ) -> None:
        self._open_stream = open_stream
        self._base_url = base_url
        self._filter = content_filter
        self._clock = clock
        self._stopped = threading.Event()
        self._sdk_stream: SdkStream | None = None
        self._lock = threading.Lock()
        self._iterator = self._events()  # nothing is sent until the first event is asked for

    def __iter__(self) -> Iterator[StreamEvent]:
        return self._iterator

    def __enter__(self) -> ChatStream:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def stopped(self) -> bool:
        return self._stopped.is_set()

    def stop(self) -> None:
        self._stopped.set()
        with self._lock:
            sdk_stream = self._sdk_stream
        if sdk_stream is None or sdk_stream.response.is_closed:
            return
        if not _shutdown_socket(sdk_stream.response):
            sdk_stream.close()  # a transport without a socket to shut down: takes effect at its next byte

    def _events(self) -> Iterator[StreamEvent]:
        timer = StreamTimer(self._clock)
        if self.stopped:
            yield Finished("cancelled", timer.stats(None, None))
            return
        try:
            sdk_stream = self._open_stream()
        except _STREAM_FAILURES as exc:
            yield stream_error_from(exc, self._base_url, streaming=False)
            return
        with self._lock:
            self._sdk_stream = sdk_stream
        if self.stopped:  # stop() came while the request was being opened
            self.stop()
        try:
            yield from self._read(sdk_stream, timer)
        finally:
            # Also on GeneratorExit (the UI dropped the generator): closing an unfinished response closes its
            # connection, and the engine aborts the request when it sees the disconnect.
            sdk_stream.close()

    def _read(self, sdk_stream: SdkStream, timer: StreamTimer) -> Iterator[StreamEvent]:
        tool_calls = ToolCallAssembler()
        finish_reason: str | None = None
        usage: Usage | None = None
        try:
            for chunk in sdk_stream:
                if chunk.usage is not None:
                    usage = Usage(chunk.usage.prompt_tokens, chunk.usage.completion_tokens, chunk.usage.total_tokens)
                    yield usage
                for choice in chunk.choices[:1]:
                    yield from self._delta_events(choice.delta, timer, tool_calls)
                    if choice.finish_reason is not None:
                        finish_reason = choice.finish_reason
                        yield from self._filter.flush()
                        if tool_calls.has_calls():
                            yield ToolCallsComplete(tool_calls.complete())
                if self.stopped:
                    break
        except _STREAM_FAILURES as exc:
            if not self.stopped:
                yield stream_error_from(exc, self._base_url, streaming=True)
                return
        prompt_tokens = usage.prompt_tokens if usage else None
        completion_tokens = usage.completion_tokens if usage else None
        yield self._final_event(finish_reason, timer.stats(prompt_tokens, completion_tokens))

    def _final_event(self, finish_reason: str | None, stats: StreamStats) -> StreamEvent:
        if self.stopped:
            return Finished("cancelled", stats)
        if finish_reason == "abort":
            return StreamError("abort", None, "the engine aborted the request (no reason given; see the engine log)")
        if finish_reason is None:
            return StreamError("stream", None, "the stream ended without a finish reason")
        return Finished(cast(FinishReason, finish_reason), stats)  # other engines' reasons pass through as-is

    def _delta_events(self, delta: Any, timer: StreamTimer, tool_calls: ToolCallAssembler) -> Iterator[StreamEvent]:
        # sglang adds reasoning_content to the OpenAI delta; the SDK keeps unknown fields as attributes.
        reasoning = getattr(delta, "reasoning_content", None)
        if reasoning:
            timer.reasoning()
            yield ReasoningDelta(reasoning)
        if delta.content:
            timer.token()
            for event in self._filter.feed(delta.content):
                if isinstance(event, ReasoningDelta):
                    timer.reasoning()
                else:
                    timer.answer()
                yield event
        for call in delta.tool_calls or ():
            timer.answer()
            function = call.function
            yield from tool_calls.feed(
                call.index, call.id, function.name if function else None, function.arguments if function else None
            )


def _shutdown_socket(response: Any) -> bool:
    """Shut the response's socket down: the engine sees the disconnect at once and a read blocked in
    another thread wakes up (closing alone would wait for the next byte). False when there is no socket."""
    network_stream = response.extensions.get("network_stream")
    sock = network_stream.get_extra_info("socket") if network_stream is not None else None
    if not isinstance(sock, socket.socket):
        return False
    with contextlib.suppress(OSError):  # already closed by the other side
        sock.shutdown(socket.SHUT_RDWR)
    return True
