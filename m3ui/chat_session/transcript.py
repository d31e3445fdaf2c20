"""What a chat shows, independent of any UI toolkit: questions, assistant steps (reasoning, answer, tool calls
with their results, stats) and notes. Saved chats and answers still streaming both become these views, so one
renderer draws both and the last live frame looks exactly like the saved chat."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from m3ui.client.events import FinishReason, StreamStats, ToolCall
from m3ui.conversation import AssistantTurn, ToolTurn, UserTurn
from m3ui.conversation.library import ChatNote, SavedChat
from m3ui.tools.result import ToolResult

TOO_FEW_FOR_RATE = "— tok/s"  # too few tokens to time the decode

# receiving: arguments still streaming; queued: complete, waiting for its turn; awaiting_approval: waiting for
# the user; running: executing.
CallStatus = Literal["receiving", "queued", "awaiting_approval", "running", "done", "error"]


@dataclass(frozen=True)
class CallView:
    id: str
    name: str
    arguments_json: str
    status: CallStatus
    result: ToolResult | None = None

    @classmethod
    def settled(cls, call: ToolCall, result: ToolResult | None) -> CallView:
        status: CallStatus = "error" if result is None or result.is_error else "done"
        return cls(call.id, call.name, call.arguments_json, status, result)


@dataclass(frozen=True)
class StepView:
    """One assistant message: one request to the model."""

    reasoning: str = ""
    content: str = ""
    thinking: bool = False  # reasoning is still streaming
    thinking_s: float | None = None
    calls: tuple[CallView, ...] = ()
    stats: StreamStats | None = None
    finish_reason: FinishReason | None = None
    remarks: tuple[str, ...] = ()  # info notes shown with the stats
    at: float | None = None  # when it was answered (a saved turn's time; None while it streams)

    @property
    def empty(self) -> bool:
        return not (self.reasoning or self.content or self.calls)

    def stats_line(self) -> str:
        """e.g. "TTFT 0.42 s · thought 3.1 s · 38.5 tok/s · 812 → 240 tokens"; empty when nothing is known."""
        parts: list[str] = []
        stats = self.stats
        if stats is not None:
            if stats.time_to_first_token_s is not None:
                parts.append(f"TTFT {stats.time_to_first_token_s:.2f} s")
            if stats.thinking_s is not None:
                parts.append(f"thought {stats.thinking_s:.1f} s")
            if stats.decode_tokens_per_s is not None:
                parts.append(f"{stats.decode_tokens_per_s:.1f} tok/s")
            elif stats.completion_tokens is not None:
                parts.append(TOO_FEW_FOR_RATE)
            if stats.prompt_tokens is not None and stats.completion_tokens is not None:
                parts.append(f"{stats.prompt_tokens} → {stats.completion_tokens} tokens")
        return " · ".join(parts + list(self.remarks))


@dataclass(frozen=True)
class QuestionView:
    text: str
    at: float | None = None  # when it was asked


TranscriptItem = QuestionView | StepView | ChatNote


def step_from_turn(turn: AssistantTurn, results: dict[str, ToolResult], remarks: tuple[str, ...] = ()) -> StepView:
    calls = tuple(CallView.settled(call, results.get(call.id)) for call in turn.tool_calls)
    thinking_s = turn.stats.thinking_s if turn.stats else None
    return StepView(turn.reasoning, turn.content, False, thinking_s, calls, turn.stats, turn.finish_reason, remarks,
                    turn.at)


def transcript(chat: SavedChat) -> tuple[TranscriptItem, ...]:
    """The saved chat as views; a tool result is shown inside the call it answers, an info note with the stats
    of the step before it, other notes after the turn they follow."""
    turns = chat.conversation.turns
    results = {t.result.call_id: t.result for t in turns if isinstance(t, ToolTurn)}
    items: list[TranscriptItem] = [n for n in chat.notes if n.after_turn < 0]
    for index, turn in enumerate(turns):
        notes = [n for n in chat.notes if n.after_turn == index]
        if isinstance(turn, UserTurn):
            items.append(QuestionView(turn.content, turn.at))
        elif isinstance(turn, AssistantTurn):
            remarks = tuple(n.text for n in notes if n.kind == "info")
            items.append(step_from_turn(turn, results, remarks))
        items.extend(n for n in notes if n.kind != "info")
    return tuple(items)
