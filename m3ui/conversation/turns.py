"""The value types of a chat: user turns, assistant turns (answer, reasoning, tool calls, stats), tool results."""

from __future__ import annotations

from dataclasses import dataclass

from m3ui.client.events import FinishReason, StreamStats, ToolCall
from m3ui.tools.result import ToolResult


@dataclass(frozen=True)
class UserTurn:
    content: str


@dataclass(frozen=True)
class AssistantTurn:
    content: str = ""
    reasoning: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    stats: StreamStats | None = None
    finish_reason: FinishReason | None = None


@dataclass(frozen=True)
class ToolTurn:
    result: ToolResult


Turn = UserTurn | AssistantTurn | ToolTurn


@dataclass(frozen=True)
class Conversation:
    """Immutable: every change gives a new Conversation (safe to keep in per-session UI state)."""

    turns: tuple[Turn, ...] = ()
    system_prompt: str = ""

    def add(self, *turns: Turn) -> Conversation:
        return Conversation(self.turns + turns, self.system_prompt)

    def ask(self, text: str) -> Conversation:
        return self.add(UserTurn(text))

    def last_user_index(self) -> int:
        """Position of the last user turn, -1 when there is none."""
        return max((i for i, turn in enumerate(self.turns) if isinstance(turn, UserTurn)), default=-1)
