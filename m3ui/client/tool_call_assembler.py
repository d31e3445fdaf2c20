"""Assemble streamed tool-call deltas, keyed by index, into complete calls."""

from __future__ import annotations

from dataclasses import dataclass, field

from m3ui.client.events import ToolCall, ToolCallDelta, ToolCallStarted

CallEvent = ToolCallStarted | ToolCallDelta


@dataclass
class _PartialCall:
    id: str
    name: str
    fragments: list[str] = field(default_factory=list)


class ToolCallAssembler:
    """The first delta of a call carries id and name; later ones only argument fragments."""

    def __init__(self) -> None:
        self._calls: dict[int, _PartialCall] = {}

    def feed(self, index: int, call_id: str | None, name: str | None, arguments: str | None) -> list[CallEvent]:
        events: list[CallEvent] = []
        partial = self._calls.get(index)
        if partial is None:
            # Engines that omit the id still get a stable one: the tool result must refer to it.
            partial = _PartialCall(id=call_id or f"call_{index}", name=name or "")
            self._calls[index] = partial
            events.append(ToolCallStarted(index, partial.id, partial.name))
        elif name and not partial.name:
            partial.name = name
        if arguments:
            partial.fragments.append(arguments)
            events.append(ToolCallDelta(index, arguments))
        return events

    def has_calls(self) -> bool:
        return bool(self._calls)

    def complete(self) -> tuple[ToolCall, ...]:
        return tuple(
            ToolCall.from_json_text(index, partial.id, partial.name, "".join(partial.fragments))
            for index, partial in sorted(self._calls.items())
        )
