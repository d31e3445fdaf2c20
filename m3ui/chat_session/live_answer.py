"""Fold the events of one running answer into the views the chat shows, and settle the finished answer
into the saved chat (partial text kept, what went wrong said in a note)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace

from m3ui.chat_session.answer_run import ApprovalDecided, ApprovalRequested, RunEvent
from m3ui.chat_session.transcript import CallView, StepView
from m3ui.chat_session.worker_lost import WorkerLost
from m3ui.client.events import (
    ContentDelta,
    Finished,
    FinishReason,
    ReasoningDelta,
    StreamError,
    StreamStats,
    ToolCallDelta,
    ToolCallsComplete,
    ToolCallStarted,
)
from m3ui.client.timing import Clock
from m3ui.conversation import (
    AssistantTurn,
    Conversation,
    LoopFinished,
    StepStarted,
    ToolExecutionFinished,
    ToolExecutionStarted,
)
from m3ui.conversation.library import ChatNote, SavedChat

RETRY_HINT = "Your message is kept: press Regenerate to try again."
AFTER_RESTART_HINT = "Your message is kept: press Regenerate once the engine is ready again."
CAPPED_TEXT = ("The engine went on past the Max tokens limit, so this app cut the answer off and stopped the "
               "request. The engine seems to ignore max_tokens: check how it was started.")
IN_FLIGHT_TEXT = ("This answer was saved while it streamed and did not end here: the app stopped meanwhile. Press "
                  "Regenerate for a whole one.")
STOPPED_TEXT = "You stopped the answer; what had arrived is kept. Press Regenerate for a new one."


@dataclass
class _Step:
    reasoning: list[str] = field(default_factory=list)
    content: list[str] = field(default_factory=list)
    calls: list[CallView] = field(default_factory=list)
    call_positions: dict[int, int] = field(default_factory=dict)  # a call's index in the message -> position
    reasoning_since: float | None = None
    thinking_s: float | None = None
    stats: StreamStats | None = None
    finish_reason: FinishReason | None = None

    def view(self) -> StepView:
        thinking = self.reasoning_since is not None and self.thinking_s is None and self.stats is None
        thinking_s = self.stats.thinking_s if self.stats and self.stats.thinking_s is not None else self.thinking_s
        return StepView("".join(self.reasoning), "".join(self.content), thinking, thinking_s, tuple(self.calls),
                        self.stats, self.finish_reason)


class LiveAnswer:
    """Not thread-safe: fed and read by the one thread that renders the answer."""

    def __init__(self, clock: Clock = time.monotonic) -> None:
        self._clock = clock
        self._steps: list[_Step] = []
        self.finished: LoopFinished | None = None
        self.awaiting_approval: CallView | None = None

    def feed(self, event: RunEvent) -> None:
        if isinstance(event, StepStarted):
            self._steps.append(_Step())
        elif isinstance(event, LoopFinished):
            self.finished, self.awaiting_approval = event, None
        elif isinstance(event, ToolExecutionStarted | ToolExecutionFinished | ApprovalRequested | ApprovalDecided):
            self._feed_execution(event)
        elif self._steps:
            self._feed_stream(self._steps[-1], event)

    def _feed_stream(self, step: _Step, event: RunEvent) -> None:
        if isinstance(event, ReasoningDelta):
            if step.reasoning_since is None:
                step.reasoning_since = self._clock()
            step.reasoning.append(event.text)
            return
        if isinstance(event, ContentDelta | ToolCallStarted) and step.reasoning_since is not None \
                and step.thinking_s is None:
            step.thinking_s = self._clock() - step.reasoning_since  # the answer started: thinking is over
        if isinstance(event, ContentDelta):
            step.content.append(event.text)
        elif isinstance(event, ToolCallStarted):
            step.call_positions[event.index] = len(step.calls)
            step.calls.append(CallView(event.id, event.name, "", "receiving"))
        elif isinstance(event, ToolCallDelta) and event.index in step.call_positions:
            position = step.call_positions[event.index]
            call = step.calls[position]
            step.calls[position] = replace(call, arguments_json=call.arguments_json + event.arguments_fragment)
        elif isinstance(event, ToolCallsComplete):
            step.calls = [CallView(c.id, c.name, c.arguments_json, "queued") for c in event.calls]
        elif isinstance(event, Finished):
            step.stats, step.finish_reason = event.stats, event.reason

    def _feed_execution(self, event: RunEvent) -> None:
        calls = self._steps[-1].calls if self._steps else []
        if isinstance(event, ToolExecutionFinished):
            call_id, update = event.result.call_id, {"status": "error" if event.result.is_error else "done",
                                                      "result": event.result}
        elif isinstance(event, ApprovalRequested):
            call_id, update = event.call.id, {"status": "awaiting_approval"}
        else:  # started, or approved (a denied call's "denied by user" error result follows at once)
            call_id, update = event.call.id, {"status": "running"}  # type: ignore[union-attr]  # a call started or approved: both carry .call
        # A buggy engine may repeat an id: update the first call with it that is not settled yet.
        for position, call in enumerate(calls):
            if call.id == call_id and call.status not in ("done", "error"):
                calls[position] = replace(call, **update)  # type: ignore[arg-type]  # fields of CallView
                break
        self.awaiting_approval = next((c for c in calls if c.status == "awaiting_approval"), None)

    def steps(self) -> tuple[StepView, ...]:
        return tuple(step.view() for step in self._steps)

    def so_far(self, chat: SavedChat) -> SavedChat:
        """The question's `chat` with what the answer streamed so far, every step's text in one turn, and a note
        saying it did not end there: saved while it streams, so an app that is killed keeps it. The settled answer
        replaces it."""
        views = self.steps()
        content, reasoning = "".join(v.content for v in views), "".join(v.reasoning for v in views)
        if not (content or reasoning):
            return chat
        conversation = chat.conversation.add_answer(AssistantTurn(content, reasoning, at=time.time()))
        return chat.with_conversation(conversation).add_notes(
            ChatNote(len(conversation.turns) - 1, "cut", IN_FLIGHT_TEXT))

    def settle(self, chat: SavedChat, engine_failure: str | WorkerLost | None = None) -> SavedChat:
        """The chat with this finished answer saved: every turn the loop completed, plus the partial text of a
        failed step (nothing received is lost), plus a note when it did not simply answer (with the engine's
        diagnosis, `engine_failure`, when it died meanwhile)."""
        finished = self.finished
        if finished is None:
            raise RuntimeError("settle() before the answer finished")
        conversation = finished.conversation
        if finished.outcome == "error" and self._steps and not self._steps[-1].view().empty:
            partial = self._steps[-1].view()
            conversation = conversation.add_answer(AssistantTurn(partial.content, partial.reasoning, at=time.time()))
        turns = conversation.turns
        last = turns[-1] if turns else None
        if isinstance(last, AssistantTurn) and not (last.content or last.reasoning or last.tool_calls):
            conversation = Conversation(turns[:-1], conversation.system_prompt)  # stopped before any token
        note = outcome_note(finished, len(conversation.turns) - 1, engine_failure)
        saved = chat.with_conversation(conversation)
        return saved.add_notes(note) if note else saved


def outcome_note(finished: LoopFinished, after_turn: int,
                 engine_failure: str | WorkerLost | None = None) -> ChatNote | None:
    """What to say after the answer, if anything; `engine_failure` is the engine's own diagnosis when it died."""
    if finished.outcome == "cancelled":
        return ChatNote(after_turn, "stopped", STOPPED_TEXT)
    if finished.outcome == "step_limit":
        return ChatNote(after_turn, "cut", f"{finished.message[:1].upper()}{finished.message[1:]}. Raise the step "
                        "limit and press Regenerate, or ask a narrower question.")
    if finished.outcome == "error" and finished.error is not None and finished.error.kind == "refused":
        return ChatNote(after_turn, "refused", finished.error.message)  # in the quota's words, without a retry hint
    if finished.outcome == "error":
        return ChatNote(after_turn, "error", error_text(finished.error, finished.message, engine_failure))
    last = finished.conversation.turns[-1] if finished.conversation.turns else None
    if isinstance(last, AssistantTurn) and last.finish_reason == "length":
        if not last.content:  # nothing to go on from (SavedChat.to_continue)
            return ChatNote(after_turn, "cut", "The answer was cut off at the max tokens limit while thinking. Raise "
                            "Max tokens and press Regenerate.")
        return ChatNote(after_turn, "cut", "The answer was cut off at the max tokens limit. Press → Continue to go "
                        "on from there, or raise Max tokens and press Regenerate.")
    if isinstance(last, AssistantTurn) and last.finish_reason == "capped":
        return ChatNote(after_turn, "cut", CAPPED_TEXT)
    return None


def error_text(error: StreamError | None, message: str, engine_failure: str | WorkerLost | None = None) -> str:
    """One plain message: what happened (the engine's own diagnosis when it died) and what to do."""
    if isinstance(engine_failure, WorkerLost):  # on a fleet: the router serves on with the other workers
        return engine_failure.text
    if engine_failure:
        return f"The answer broke off because the engine stopped. {engine_failure} {AFTER_RESTART_HINT}"
    what = error.message if error is not None else f"{message[:1].upper()}{message[1:]}"
    return f"{what}. {RETRY_HINT}"


def not_ready_note(after_turn: int, engine_label: str) -> ChatNote:
    return ChatNote(after_turn, "error", f"The engine is not ready ({engine_label}). Your message is kept: press "
                    "Regenerate once the header says ready.")
