"""AnswerMeter: what the chat core asks of the accounts around an answer (m3ui/chat_session/runner.py).

Each engine request of an answer (a tool loop makes several) goes through a MeteredClient: it reserves the
request's tokens in the person's ledger before it is sent, with `max_tokens` capped at what is left of the quota,
and settles the real figure when its stream ends. A stream cut short reports no usage: it is charged its prompt
bound plus the pieces it streamed (one token each). An early request (m3ui.client.early_request) reserves when it
is sent; the answer that takes it inherits the reservation, and one nobody takes is charged what the engine
reported for it once aborted (its prompt and what it generated before the abort), else its prompt bound.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import replace

from m3ui.accounts.usage import AnswerUsage, QuotaRefused, Reservation, UsageLedger, prompt_bound, unmetered
from m3ui.client.client import ChatClient
from m3ui.client.early_request import EarlyRequest, EngineUsage
from m3ui.client.events import (
    ContentDelta,
    Finished,
    ReasoningDelta,
    StreamError,
    StreamEvent,
    ToolCallDelta,
    Usage,
)
from m3ui.client.request import ToolChoice, WireMessage, WireTool
from m3ui.client.settings import GenerationSettings
from m3ui.client.stream import ChatStream, ReadGap

_PIECES = (ContentDelta, ReasoningDelta, ToolCallDelta)


class AnswerMeter:
    def __init__(self, ledger: UsageLedger) -> None:
        self.ledger = ledger

    def refusal(self, user: str | None) -> str | None:
        """Why `user` may not send a request now (its quota is used up), or None (also for no account)."""
        return self.ledger.refusal(user)

    def client(self, client: ChatClient, user: str | None) -> MeteredClient:
        return MeteredClient(client, self.ledger, user)


class MeteredStream:
    """A ChatStream whose tokens are settled in the ledger when it ends (however it ends)."""

    def __init__(self, stream: ChatStream | None, reservation: Reservation, refusal: str | None = None) -> None:
        """No `stream`: the request was refused (`refusal` says why) and nothing was sent."""
        self._stream, self._reservation, self._refusal = stream, reservation, refusal
        self._started = time.monotonic()
        self._iterator = self._events()

    def __iter__(self) -> Iterator[StreamEvent]:
        return self._iterator

    def stop(self) -> None:
        if self._stream is not None:
            self._stream.stop()

    @property
    def stopped(self) -> bool:
        return self._stream is None or self._stream.stopped

    def _events(self) -> Iterator[StreamEvent]:
        if self._stream is None:
            yield StreamError("refused", 429, self._refusal or "the daily token quota is used up")
            return
        usage: tuple[int, int] | None = None
        pieces = 0
        try:
            for event in self._stream:
                if isinstance(event, _PIECES):
                    pieces += 1
                elif isinstance(event, Usage):
                    usage = (event.prompt_tokens, event.completion_tokens)
                elif isinstance(event, Finished) and event.stats.prompt_tokens is not None:
                    usage = (event.stats.prompt_tokens, event.stats.completion_tokens or 0)
                yield event
        finally:
            prompt, completion = usage or (self._reservation.prompt_tokens, pieces)
            self._reservation.settle(AnswerUsage(prompt, completion, time.monotonic() - self._started))


class MeteredClient:
    """ChatClient's `stream` and `send_early` for one person, each request reserved in their ledger first."""

    def __init__(self, client: ChatClient, ledger: UsageLedger, user: str | None) -> None:
        self.endpoint = client.endpoint
        self._client, self._ledger, self._user = client, ledger, user

    def _reserve(self, messages: Sequence[WireMessage], settings: GenerationSettings,
                 tools: Sequence[WireTool]) -> tuple[Reservation, GenerationSettings]:
        reservation = self._ledger.reserve(self._user, prompt_bound(messages, tools), settings.max_tokens)
        return reservation, _capped(settings, reservation)

    def send_early(self, messages: Sequence[WireMessage], settings: GenerationSettings,
                   tools: Sequence[WireTool] = (), tool_choice: ToolChoice = "auto") -> EarlyRequest:
        """QuotaRefused when nothing is left; a request nobody takes is charged, when cancelled, what the engine
        reported it used, or its prompt bound when it reported nothing."""
        reservation, capped = self._reserve(messages, settings, tools)
        early = self._client.send_early(messages, capped, tools, tool_choice)
        early.attachment = reservation
        early.on_cancel(lambda used: reservation.settle(_cancelled_usage(reservation, used)))
        return early

    def stream(self, messages: Sequence[WireMessage], settings: GenerationSettings, tools: Sequence[WireTool] = (),
               tool_choice: ToolChoice = "auto", read_gap: ReadGap | None = None,
               early: EarlyRequest | None = None) -> MeteredStream:
        if early is not None and isinstance(reservation := early.attachment, Reservation):
            # sent early with the settings capped by its own reservation: asked the same way, the answer takes it
            # (and the reservation with it); anything else cancels it, charged as cut short
            stream = self._client.stream(messages, _capped(settings, reservation), tools, tool_choice, read_gap,
                                         early)
            if early.state == "taken":
                return MeteredStream(stream, reservation)
            early = None
        try:
            reservation, capped = self._reserve(messages, settings, tools)
        except QuotaRefused as refused:
            if early is not None:
                early.cancel()
            return MeteredStream(None, unmetered(None), refused.message)
        return MeteredStream(self._client.stream(messages, capped, tools, tool_choice, read_gap, early), reservation)


def _cancelled_usage(reservation: Reservation, used: EngineUsage) -> AnswerUsage:
    prompt, completion = used if used is not None else (reservation.prompt_tokens, 0)
    return AnswerUsage(prompt, completion, 0.0)


def _capped(settings: GenerationSettings, reservation: Reservation) -> GenerationSettings:
    if reservation.max_tokens is None or reservation.max_tokens == settings.max_tokens:
        return settings
    return replace(settings, max_tokens=reservation.max_tokens)
