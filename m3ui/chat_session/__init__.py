"""Running and showing chat answers, with no UI toolkit: the run in a worker thread with throttled batches,
stop and approval; the views a chat shows (saved or live); settling a finished answer into the saved chat."""

from m3ui.chat_session.answer_run import (
    IDLE_TICK_S,
    UPDATE_INTERVAL_S,
    AnswerRun,
    ApprovalDecided,
    ApprovalRequested,
    RunEvent,
    RunRegistry,
)
from m3ui.chat_session.clients import ClientPool
from m3ui.chat_session.live_answer import LiveAnswer, error_text, not_ready_note, outcome_note
from m3ui.chat_session.runner import AnswerHitRate, AnswerPhase, AnswerRequest, AnswerUpdate, ChatRunner, SessionBusy
from m3ui.chat_session.tool_setup import (
    EXAMPLE_CUSTOM_TOOL,
    TOOL_CHOICE_MODES,
    ToolSetupError,
    add_custom,
    all_tools,
    custom_tools,
    remove_custom,
    selected_registry,
    tool_choice_from,
    tool_choice_options,
)
from m3ui.chat_session.transcript import (
    CallStatus,
    CallView,
    QuestionView,
    StepView,
    TranscriptItem,
    step_from_turn,
    transcript,
)

__all__ = [
    "EXAMPLE_CUSTOM_TOOL",
    "TOOL_CHOICE_MODES",
    "ToolSetupError",
    "add_custom",
    "all_tools",
    "custom_tools",
    "remove_custom",
    "selected_registry",
    "tool_choice_from",
    "tool_choice_options",
    "AnswerHitRate",
    "AnswerPhase",
    "AnswerRequest",
    "AnswerUpdate",
    "ChatRunner",
    "SessionBusy",
    "IDLE_TICK_S",
    "UPDATE_INTERVAL_S",
    "AnswerRun",
    "ApprovalDecided",
    "ApprovalRequested",
    "CallStatus",
    "CallView",
    "ClientPool",
    "LiveAnswer",
    "QuestionView",
    "RunEvent",
    "RunRegistry",
    "StepView",
    "TranscriptItem",
    "error_text",
    "not_ready_note",
    "outcome_note",
    "step_from_turn",
    "transcript",
]
