"""The tool loop: ask the model, run the tools it calls, hand back the results, until it answers."""

from __future__ import annotations

import threading
from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import dataclass
from typing import Literal

from m3ui.client.early_request import EarlyRequest
from m3ui.client.events import StreamError, StreamEvent, ToolCall
from m3ui.client.request import ForceTool, ToolChoice, WireMessage, WireTool
from m3ui.client.settings import GenerationSettings
from m3ui.client.source import EventStream, StreamSource
from m3ui.client.stream import ReadGap
from m3ui.conversation.assistant_builder import AssistantTurnBuilder
from m3ui.conversation.openai_messages import to_openai_messages
from m3ui.conversation.turns import Conversation, ToolTurn
from m3ui.tools.executor import run_tool_calls
from m3ui.tools.registry import ToolRegistry
from m3ui.tools.result import ToolResult

LoopOutcome = Literal["answer", "step_limit", "error", "cancelled"]
ApprovalHook = Callable[[ToolCall], bool]  # True = run it; called before every call, in the loop's thread
STOPPED_BEFORE_RUN = "stopped by the user before it ran"


@dataclass(frozen=True)
class StepStarted:
    step: int  # 1-based: the n-th request to the model in this loop


@dataclass(frozen=True)
class ToolExecutionStarted:
    call: ToolCall


@dataclass(frozen=True)
class ToolExecutionFinished:
    result: ToolResult


@dataclass(frozen=True)
class LoopFinished:
    """Always the last event; `conversation` holds every turn the loop added."""

    outcome: LoopOutcome
    conversation: Conversation
    message: str = ""
    error: StreamError | None = None


LoopEvent = StreamEvent | StepStarted | ToolExecutionStarted | ToolExecutionFinished | LoopFinished


@dataclass(frozen=True)
class LoopOptions:
    tool_choice: ToolChoice = "auto"
    max_steps: int = 5
    tool_timeout_s: float = 10.0
    keep_reasoning: bool = False

    def __post_init__(self) -> None:
        if self.max_steps < 1 or self.tool_timeout_s <= 0:
            raise ValueError("max_steps must be at least 1 and tool_timeout_s positive")

    def choice_for_step(self, step: int) -> ToolChoice:
        # "required" or a named tool applies to the first request only: kept on, it would force a tool call
        # on every step and the model could never give its answer.
        if step > 1 and (self.tool_choice == "required" or isinstance(self.tool_choice, ForceTool)):
            return "auto"
        return self.tool_choice


class ToolLoop:
    """One loop per user message. run() is a generator of LoopEvent; stop() may come from any thread."""

    def __init__(
        self,
        client: StreamSource,
        registry: ToolRegistry,
        settings: GenerationSettings,
        options: LoopOptions = LoopOptions(),
        approve: ApprovalHook | None = None,
        read_gap: ReadGap | None = None,
        early: EarlyRequest | None = None,
    ) -> None:
        self._client, self._registry, self._settings = client, registry, settings
        self._options, self._approve, self._read_gap = options, approve, read_gap
        self._early = early  # the first request, maybe sent already (taken only if it is the same)
        self._stopped = threading.Event()
        self._stream: EventStream | None = None

    def stop(self) -> None:
        self._stopped.set()
        if self._stream is not None:
            self._stream.stop()

    def run(self, conversation: Conversation) -> Iterator[LoopEvent]:
        try:
            yield from self._steps(conversation)
        finally:
            # Also when the UI drops this generator (Gradio's stop button): the engine must see the disconnect.
            if self._stream is not None:
                self._stream.stop()

    def send_early(self, conversation: Conversation) -> EarlyRequest:
        """Send the loop's first request for `conversation` now (see m3ui.client.early_request)."""
        return self._client.send_early(*self._request(conversation, 1))

    def _request(self, conversation: Conversation, step: int) -> tuple[list[WireMessage], GenerationSettings,
                                                                       list[WireTool], ToolChoice]:
        """The arguments of ChatClient.stream (and send_early) for the loop's request number `step`."""
        return (to_openai_messages(conversation, self._options.keep_reasoning), self._settings,
                self._registry.openai_tools(), self._options.choice_for_step(step))

    def _steps(self, conversation: Conversation) -> Iterator[LoopEvent]:
        early, self._early = self._early, None
        for step in range(1, self._options.max_steps + 1):
            if self._stopped.is_set():
                if early is not None:
                    early.cancel()
                yield LoopFinished("cancelled", conversation, "stopped by the user")
                return
            yield StepStarted(step)
            self._stream = self._client.stream(*self._request(conversation, step), self._read_gap, early)
            early = None
            if self._stopped.is_set():  # stop() raced with the line above
                self._stream.stop()
            builder = AssistantTurnBuilder()
            for event in self._stream:
                builder.feed(event)
                yield event
            if builder.error is not None:
                yield LoopFinished("error", conversation, builder.error.message, builder.error)
                return
            turn = builder.build()
            conversation = conversation.add_answer(turn)  # (appended to the answer it continues, if any)
            if turn.finish_reason == "cancelled":
                yield LoopFinished("cancelled", conversation, "stopped by the user")
                return
            if not turn.tool_calls:
                cut = " (cut off at max_tokens)" if turn.finish_reason == "length" else ""
                yield LoopFinished("answer", conversation, f"answered after {step} step(s){cut}")
                return
            results = yield from self._execute(turn.tool_calls)
            conversation = conversation.add(*(ToolTurn(result) for result in results))
        limit = self._options.max_steps
        yield LoopFinished("step_limit", conversation,
                           f"step limit reached: the model was still calling tools after {limit} requests")

    def _execute(self, calls: Sequence[ToolCall]) -> Generator[LoopEvent, None, list[ToolResult]]:
        """Ask approval one by one, run the approved calls concurrently; results come back in call order."""
        results: dict[int, ToolResult] = {}
        approved: list[tuple[int, ToolCall]] = []
        for position, call in enumerate(calls):
            yield ToolExecutionStarted(call)
            refusal = self._refusal(call)
            if refusal is None:
                approved.append((position, call))
            else:
                results[position] = ToolResult.error(call, refusal)
                yield ToolExecutionFinished(results[position])
        finished = run_tool_calls(self._registry, [call for _, call in approved], self._options.tool_timeout_s)
        for approved_position, result in finished:
            results[approved[approved_position][0]] = result
            yield ToolExecutionFinished(result)
        return [results[position] for position in sorted(results)]

    def _refusal(self, call: ToolCall) -> str | None:
        """Why the call must not run: one that cannot run (an unknown tool, bad arguments) is refused before
        the user is asked to approve it; then the user's no, or their Stop while the question was open."""
        try:
            unrunnable = self._registry.refusal(call)
        except Exception as exc:  # a malformed custom schema must not take the loop down
            unrunnable = f"cannot check the arguments of {call.name}: {exc}"
        if unrunnable is not None or self._approve is None:
            return unrunnable
        try:
            approved = self._approve(call)
        except Exception as exc:  # a broken approval UI must deny, not crash the chat
            return f"approval failed ({exc}); not run"
        if approved:
            return None
        return STOPPED_BEFORE_RUN if self._stopped.is_set() else "denied by user"
