"""One streaming chat completion as an iterator of typed events, with a thread-safe stop().

The openai SDK sends the request and classifies what goes wrong opening it; the body is read raw (see
event_stream.py) and each chunk's fields are read from the parsed JSON (see chunk_fields.py).

Reads can be paced (`read_gap`): once the first token is in, the body is read at most once per gap, and each read
takes everything the engine sent meanwhile. An engine sends every token in a chunk of its own, and waking up for
each one cost ~140 µs of CPU per token here (the wake-up, the socket calls, HTTP chunk parsing done one chunk at
a time); read every 50–100 ms the same tokens cost ~45 µs each, and with each read's chunks merged into one
(chunk_merging.py) and its text handed on as one event per run (merged_text) far less. A UI shows them no faster
than that anyway. The price: token times (decode speed, thinking time) are the times of the reads, so late by up
to one gap; the first token's time is exact (its read is not paced)."""

from __future__ import annotations

import contextlib
import itertools
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Literal, cast

import openai

from m3ui.client.chunk_fields import (
    MalformedChunk,
    chunk_object,
    chunk_usage,
    delta_of,
    delta_text,
    finish_reason,
    first_choice,
    malformed_chunk_error,
    tool_call_fragments,
)
from m3ui.client.errors import preview, stream_error_from, streamed_error
from m3ui.client.event_stream import event_batches, parse_json
from m3ui.client.events import (
    ContentDelta,
    Finished,
    FinishReason,
    ReasoningDelta,
    StreamError,
    StreamEvent,
    StreamStats,
    ToolCallDelta,
    ToolCallsComplete,
    Usage,
)
from m3ui.client.http_library import http
from m3ui.client.output_cap import OutputCap
from m3ui.client.safe_text import safe_text
from m3ui.client.settings import GenerationSettings
from m3ui.client.think_tags import StrayCloserFilter
from m3ui.client.timing import Clock, StreamTimer
from m3ui.client.tool_call_assembler import ToolCallAssembler

ReadGap = Callable[[], float]  # seconds between two reads of the body, asked before each wait
HttpResponse = Any  # the streamed Response of the SDK's HTTP library (see http_library.py)
_STREAM_FAILURES = (openai.APIError, http.HTTPError, json.JSONDecodeError)
_READ_FAILURES = (*_STREAM_FAILURES, UnicodeDecodeError)  # a non-UTF-8 byte in the event stream


class ChatStream:
    """Iterate once for events; the last one is always Finished or StreamError.

    stop() may be called from any thread: it shuts the socket down, which wakes a blocked read and makes
    the engine see the disconnect and abort the request. Closing the iterator early does the same.
    """

    def __init__(
        self,
        open_stream: Callable[[], HttpResponse],
        base_url: str,
        settings: GenerationSettings,
        content_filter: StrayCloserFilter,
        clock: Clock,
        read_gap: ReadGap | None = None,
        sent_at: float | None = None,
    ) -> None:
        self._open_stream = open_stream
        self._sent_at = sent_at  # when the request went out, if open_stream takes one sent before (on `clock`)
        self._base_url = base_url
        self._settings = settings
        self._filter = content_filter
        self._clock = clock
        self._read_gap = read_gap
        self._stopped = threading.Event()
        self._response: HttpResponse | None = None
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
            response = self._response
        if response is None or response.is_closed:
            return
        disconnect(response)

    def _events(self) -> Iterator[StreamEvent]:
        timer = StreamTimer(self._clock, self._sent_at)
        if self.stopped:
            yield Finished("cancelled", timer.stats(None, None))
            return
        try:
            response = self._open_stream()
        except _STREAM_FAILURES as exc:
            yield stream_error_from(exc, self._base_url, False, self._settings.stall_seconds)
            return
        with self._lock:
            self._response = response
        if self.stopped:  # stop() came while the request was being opened
            self.stop()
        try:
            yield from self._read(response, timer)
        finally:
            # Also on GeneratorExit (the UI dropped the generator): closing an unfinished response closes its
            # connection, and the engine aborts the request when it sees the disconnect.
            response.close()

    def _read(self, response: HttpResponse, timer: StreamTimer) -> Iterator[StreamEvent]:
        state = _ReadState(ToolCallAssembler(), OutputCap(self._settings.max_tokens))
        try:
            wrong_body = not_an_event_stream(response, self._base_url)  # reads: may stall
            if wrong_body is not None:
                yield wrong_body
                return
            if self._read_gap is not None:
                _pace_reads(response, self._read_gap, timer, self._stopped)
            for batch in event_batches(response.iter_bytes()):
                shown: list[StreamEvent] = []
                end: _End | None = None
                try:
                    for data in batch:
                        end = self._take_chunk(data, timer, state, shown)
                        if end is not None:
                            break
                finally:  # also before an error: what came before it is not lost
                    yield from merged_text(shown)
                if isinstance(end, StreamError):
                    yield end
                    return
                if end == "capped":
                    disconnect(response)  # the engine sees the disconnect and stops generating
                if end is not None:
                    break
        except _READ_FAILURES as exc:
            if not self.stopped:
                yield stream_error_from(exc, self._base_url, True, self._settings.stall_seconds)
                return
        prompt_tokens = state.usage.prompt_tokens if state.usage else None
        completion_tokens = state.usage.completion_tokens if state.usage else None
        yield self._final_event(state.finish_reason, timer.stats(prompt_tokens, completion_tokens))

    def _take_chunk(self, data: str, timer: StreamTimer, state: _ReadState, shown: list[StreamEvent]) -> _End | None:
        """Add one chunk's events to `shown`; how the stream ends here, if it does."""
        if data.startswith("[DONE]"):
            return "done"
        chunk = parse_json(data)
        error = chunk.get("error") if isinstance(chunk, dict) else None
        if error:
            return streamed_error(error)
        try:
            events = self._chunk_events(chunk, timer, state.tool_calls)
        except MalformedChunk as problem:
            return malformed_chunk_error(chunk, problem)
        chars = 0  # of text in this chunk, for the output cap
        for event in events:
            if isinstance(event, _FinishMark):
                state.finish_reason = event.reason
                continue
            if isinstance(event, Usage):
                state.usage = event
            elif isinstance(event, ToolCallDelta):
                chars += len(event.arguments_fragment)
            elif isinstance(event, ReasoningDelta | ContentDelta):
                chars += len(event.text)
            shown.append(event)
        state.cap.add(chars)
        if self.stopped:
            return "done"
        if state.cap.exceeded and state.finish_reason is None:
            state.finish_reason = "capped"
            shown += self._filter.flush()
            return "capped"
        return None

    def _chunk_events(self, value: object, timer: StreamTimer, tool_calls: ToolCallAssembler) -> list[_ChunkEvent]:
        """The events of one chunk, in order; MalformedChunk when it is not in the chat-stream shape."""
        chunk = chunk_object(value)
        usage = chunk_usage(chunk)
        events: list[_ChunkEvent] = [usage] if usage is not None else []
        choice = first_choice(chunk, has_usage=usage is not None)
        if choice is None:
            return events
        events += self._delta_events(delta_of(choice), timer, tool_calls)
        reason = finish_reason(choice)
        if reason is not None:
            events.append(_FinishMark(reason))
            events += self._filter.flush()
            if tool_calls.has_calls():
                events.append(ToolCallsComplete(tool_calls.complete()))
        return events

    def _final_event(self, finish_reason: str | None, stats: StreamStats) -> StreamEvent:
        if self.stopped:
            return Finished("cancelled", stats)
        if finish_reason == "abort":
            return StreamError("abort", None, "The engine aborted the request without giving a reason (the engine "
                               "log may say why)")
        if finish_reason is None:
            return StreamError("stream", None, "The engine ended the answer without saying why (no finish reason): "
                               "it may have restarted or be misbehaving")
        return Finished(cast(FinishReason, finish_reason), stats)  # other engines' reasons pass through as-is

    def _delta_events(self, delta: Any, timer: StreamTimer, tool_calls: ToolCallAssembler) -> list[_ChunkEvent]:
        events: list[_ChunkEvent] = []
        reasoning = delta_text(delta, "reasoning_content")
        if reasoning:
            timer.reasoning()
            events.append(ReasoningDelta(safe_text(reasoning)))
        content = delta_text(delta, "content")
        if content:
            timer.token()
            for event in self._filter.feed(safe_text(content)):
                if isinstance(event, ReasoningDelta):
                    timer.reasoning()
                else:
                    timer.answer()
                events.append(event)
        for call in tool_call_fragments(delta):
            timer.answer()
            events += tool_calls.feed(call.index, call.id and safe_text(call.id), call.name and safe_text(call.name),
                                      call.arguments and safe_text(call.arguments))
        return events


@dataclass
class _ReadState:
    """What reading one stream gathers along the way."""

    tool_calls: ToolCallAssembler
    cap: OutputCap
    finish_reason: str | None = None
    usage: Usage | None = None


_End = Literal["done", "capped"] | StreamError  # the [DONE] mark or a stop; the output cap; an error


def merged_text(events: list[StreamEvent]) -> list[StreamEvent]:
    """`events` with each run of text deltas of one kind (reasoning, answer, one tool call's arguments) as one.

    An engine sends a token per chunk, and a read brings all it sent meanwhile (up to 0.1 s of tokens): handed on
    as one event, they cost everything downstream (the tool loop, the hand-over between threads, the view) one
    step instead of one per token."""
    merged: list[StreamEvent] = []
    for key, run in itertools.groupby(events, _run_key):
        group = list(run)
        if len(group) == 1:
            merged.append(group[0])
        elif key is ContentDelta or key is ReasoningDelta:
            merged.append(key("".join(cast(ContentDelta, e).text for e in group)))
        else:
            fragments = "".join(cast(ToolCallDelta, e).arguments_fragment for e in group)
            merged.append(ToolCallDelta(cast(ToolCallDelta, group[0]).index, fragments))
    return merged


def _run_key(event: StreamEvent) -> object:
    """Events with equal keys in a row merge: text deltas by kind, argument deltas by call; nothing else."""
    if isinstance(event, ContentDelta | ReasoningDelta):
        return type(event)
    if isinstance(event, ToolCallDelta):
        return ToolCallDelta, event.index
    return id(event)


@dataclass(frozen=True)
class _FinishMark:
    """The chunk's finish reason, in its place among the chunk's events (not shown to consumers)."""

    reason: str


_ChunkEvent = StreamEvent | _FinishMark


def not_an_event_stream(response: HttpResponse, base_url: str) -> StreamError | None:
    """An error when a 200 answer is not an event stream: a web page (a proxy, a wrong port) or one JSON
    document (a server that ignored stream=true) would otherwise read as a stream that ended too early."""
    content_type = response.headers.get("content-type", "")
    if "text/event-stream" in content_type:
        return None
    body = preview(next(response.iter_bytes(), b"").decode("utf-8", "replace"))
    if "html" in content_type:
        what = f"a web page, not a chat stream: is {base_url} the engine's address?"
    elif "json" in content_type:
        what = "one JSON document, not a chat stream: it may have ignored stream=true"
    else:
        what = f"{content_type or 'an untyped body'}, not a chat stream"
    return StreamError("protocol", None, f"The engine answered with {what} (it sent: {body})")


def _pace_reads(response: HttpResponse, gap: ReadGap, timer: StreamTimer, stopped: threading.Event) -> None:
    """Make the response's socket reads wait out the read gap once a token has come (stop() cuts a wait short).

    The HTTP library hands the body over as it reads it, so the pacing sits under it, at the connection's own
    reads (its network stream, which the library exposes to its user; chunk_merging.py wraps the same reads). A
    read that filled the buffer is followed at once: more is waiting."""
    network_stream = response.extensions.get("network_stream")
    if network_stream is None:
        return
    read = network_stream.read
    last = {"at": 0.0, "full": False}

    def paced_read(max_bytes: int, timeout: float | None = None) -> bytes:
        if timer.started and not last["full"]:
            wait = gap() - (time.monotonic() - last["at"])
            if wait > 0:
                stopped.wait(wait)
        data = read(max_bytes, timeout)
        last["at"], last["full"] = time.monotonic(), len(data) >= max_bytes
        return data

    network_stream.read = paced_read


def disconnect(response: HttpResponse) -> None:
    # A transport without a socket to shut down is closed instead: that takes effect at its next byte.
    if not _shutdown_socket(response):
        response.close()


def _shutdown_socket(response: HttpResponse) -> bool:
    """Shut the response's socket down: the engine sees the disconnect at once and a read blocked in
    another thread wakes up (closing alone would wait for the next byte). False when there is no socket."""
    network_stream = response.extensions.get("network_stream")
    sock = network_stream.get_extra_info("socket") if network_stream is not None else None
    if not isinstance(sock, socket.socket):
        return False
    with contextlib.suppress(OSError):  # already closed by the other side
        sock.shutdown(socket.SHUT_RDWR)
    return True
