"""The value types of a chat: user turns, assistant turns (answer, reasoning, tool calls, stats), tool results."""

from __future__ import annotations

import time
from dataclasses import dataclass

from m3ui.client.events import FinishReason, StreamStats, ToolCall
from m3ui.client.safe_text import safe_text
from m3ui.tools.result import ToolResult

# Text enters a chat only through these types (typed, loaded from the browser or a file, or streamed), so they
# make it encodable: a lone surrogate would otherwise break the page, the saved chats and every export.


@dataclass(frozen=True)
class UserTurn:
    content: str
    at: float | None = None  # when it was asked (epoch seconds; None in chats saved before times were kept)

    def __post_init__(self) -> None:
        object.__setattr__(self, "content", safe_text(self.content))


@dataclass(frozen=True)
class AssistantTurn:
    content: str = ""
    reasoning: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    stats: StreamStats | None = None
    finish_reason: FinishReason | None = None
    at: float | None = None  # when it was answered (epoch seconds), as UserTurn.at

    def __post_init__(self) -> None:
        object.__setattr__(self, "content", safe_text(self.content))
        object.__setattr__(self, "reasoning", safe_text(self.reasoning))


@dataclass(frozen=True)
class ToolTurn:
    result: ToolResult


Turn = UserTurn | AssistantTurn | ToolTurn


@dataclass(frozen=True)
class Conversation:
    """Immutable: every change gives a new Conversation (safe to keep in per-session UI state)."""

    turns: tuple[Turn, ...] = ()
    system_prompt: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "system_prompt", safe_text(self.system_prompt))

    def add(self, *turns: Turn) -> Conversation:
        return Conversation(self.turns + turns, self.system_prompt)

    def add_answer(self, turn: AssistantTurn) -> Conversation:
        """`turn` added; when the conversation ends with an assistant turn (an answer being continued), `turn` is
        the rest of that answer and is appended to it (its figures and finish reason are the rest's)."""
        last = self.turns[-1] if self.turns else None
        if not isinstance(last, AssistantTurn):
            return self.add(turn)
        joined = AssistantTurn(last.content + turn.content, last.reasoning + turn.reasoning,
                               last.tool_calls + turn.tool_calls, turn.stats, turn.finish_reason, turn.at)
        return Conversation((*self.turns[:-1], joined), self.system_prompt)

    def ask(self, text: str) -> Conversation:
        return self.add(UserTurn(text, time.time()))

    def last_user_index(self) -> int:
        """Position of the last user turn, -1 when there is none."""
        return max((i for i, turn in enumerate(self.turns) if isinstance(turn, UserTurn)), default=-1)
