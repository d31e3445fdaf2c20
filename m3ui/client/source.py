"""What the tool loop needs of a chat client: ChatClient itself, or a wrapper with the same calls (the accounts'
MeteredClient reserves each request's tokens in the person's ledger first)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Protocol

from m3ui.client.early_request import EarlyRequest
from m3ui.client.events import StreamEvent
from m3ui.client.request import ToolChoice, WireMessage, WireTool
from m3ui.client.settings import GenerationSettings
from m3ui.client.stream import ReadGap


class EventStream(Protocol):
    def __iter__(self) -> Iterator[StreamEvent]: ...

    def stop(self) -> None: ...


class StreamSource(Protocol):
    def stream(self, messages: Sequence[WireMessage], settings: GenerationSettings, tools: Sequence[WireTool] = (),
               tool_choice: ToolChoice = "auto", read_gap: ReadGap | None = None,
               early: EarlyRequest | None = None) -> EventStream: ...

    def send_early(self, messages: Sequence[WireMessage], settings: GenerationSettings,
                   tools: Sequence[WireTool] = (), tool_choice: ToolChoice = "auto") -> EarlyRequest: ...
