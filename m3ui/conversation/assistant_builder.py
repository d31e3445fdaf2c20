"""Collect the events of one stream into an AssistantTurn (and keep the running text for live display)."""

from __future__ import annotations

import time

from m3ui.client.events import (
    ContentDelta,
    Finished,
    FinishReason,
    ReasoningDelta,
    StreamError,
    StreamEvent,
    StreamStats,
    ToolCall,
    ToolCallsComplete,
)
from m3ui.conversation.turns import AssistantTurn


class AssistantTurnBuilder:
    def __init__(self) -> None:
        self._content: list[str] = []
        self._reasoning: list[str] = []
        self._calls: tuple[ToolCall, ...] = ()
        self._finish_reason: FinishReason | None = None
        self._stats: StreamStats | None = None
        self.error: StreamError | None = None

    def feed(self, event: StreamEvent) -> None:
        if isinstance(event, ContentDelta):
            self._content.append(event.text)
        elif isinstance(event, ReasoningDelta):
            self._reasoning.append(event.text)
        elif isinstance(event, ToolCallsComplete):
            self._calls = event.calls
        elif isinstance(event, Finished):
            self._finish_reason, self._stats = event.reason, event.stats
        elif isinstance(event, StreamError):
            self.error = event

    @property
    def content(self) -> str:
        return "".join(self._content)

    @property
    def reasoning(self) -> str:
        return "".join(self._reasoning)

    def build(self) -> AssistantTurn:
        return AssistantTurn(self.content, self.reasoning, self._calls, self._stats, self._finish_reason, time.time())
