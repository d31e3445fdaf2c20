"""Conversation model, conversions (OpenAI messages, Gradio history, Markdown/JSON) and the tool loop. No Gradio."""

from m3ui.conversation.assistant_builder import AssistantTurnBuilder
from m3ui.conversation.export import ConversationFormatError, from_json, to_json, to_markdown
from m3ui.conversation.gradio_history import conversation_from_gradio, message_text
from m3ui.conversation.openai_messages import to_openai_messages
from m3ui.conversation.tool_loop import (
    ApprovalHook,
    LoopEvent,
    LoopFinished,
    LoopOptions,
    LoopOutcome,
    StepStarted,
    ToolExecutionFinished,
    ToolExecutionStarted,
    ToolLoop,
)
from m3ui.conversation.turns import AssistantTurn, Conversation, ToolTurn, Turn, UserTurn

__all__ = [
    "ApprovalHook",
    "AssistantTurn",
    "AssistantTurnBuilder",
    "Conversation",
    "ConversationFormatError",
    "LoopEvent",
    "LoopFinished",
    "LoopOptions",
    "LoopOutcome",
    "StepStarted",
    "ToolExecutionFinished",
    "ToolExecutionStarted",
    "ToolLoop",
    "ToolTurn",
    "Turn",
    "UserTurn",
    "conversation_from_gradio",
    "from_json",
    "message_text",
    "to_json",
    "to_markdown",
    "to_openai_messages",
]
