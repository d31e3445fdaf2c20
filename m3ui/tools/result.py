"""ToolResult: what running one tool call gave, errors included (the model sees those too)."""

from __future__ import annotations

from dataclasses import dataclass

from m3ui.client.events import ToolCall
from m3ui.client.safe_text import safe_text


@dataclass(frozen=True)
class ToolResult:
    call_id: str
    name: str
    content: str
    is_error: bool = False
    duration_s: float = 0.0

    def __post_init__(self) -> None:  # a tool may echo the model's lone surrogates: keep results encodable
        object.__setattr__(self, "content", safe_text(self.content))

    @classmethod
    def error(cls, call: ToolCall, message: str, duration_s: float = 0.0) -> ToolResult:
        # The tool message has no error flag on the wire, so the text itself must say so.
        return cls(call.id, call.name, f"Error: {message}", is_error=True, duration_s=duration_s)

    def to_openai(self) -> dict[str, object]:
        return {"role": "tool", "tool_call_id": self.call_id, "content": self.content}
