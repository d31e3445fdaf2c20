"""Streaming chat client for OpenAI-compatible servers, with MiniMax-M3 / sglang-kt adapters. No Gradio."""

from m3ui.client.client import ChatClient
from m3ui.client.events import (
    ContentDelta,
    ErrorKind,
    Finished,
    FinishReason,
    ReasoningDelta,
    StreamError,
    StreamEvent,
    StreamStats,
    ToolCall,
    ToolCallDelta,
    ToolCallsComplete,
    ToolCallStarted,
    Usage,
)
from m3ui.client.request import ForceTool, ToolChoice, WireMessage, WireTool
from m3ui.client.safe_text import safe_text
from m3ui.client.settings import (
    MAX_STALL_SECONDS,
    MIN_STALL_SECONDS,
    THINKING_MODES,
    EndpointConfig,
    GenerationSettings,
    SettingsError,
    ThinkingMode,
    validate_thinking_mode,
)
from m3ui.client.stream import ChatStream

__all__ = [
    "MAX_STALL_SECONDS",
    "MIN_STALL_SECONDS",
    "THINKING_MODES",
    "ChatClient",
    "ChatStream",
    "ContentDelta",
    "EndpointConfig",
    "ErrorKind",
    "Finished",
    "FinishReason",
    "ForceTool",
    "GenerationSettings",
    "ReasoningDelta",
    "SettingsError",
    "StreamError",
    "StreamEvent",
    "StreamStats",
    "ThinkingMode",
    "ToolCall",
    "ToolCallDelta",
    "ToolCallStarted",
    "ToolCallsComplete",
    "ToolChoice",
    "Usage",
    "WireMessage",
    "WireTool",
    "safe_text",
    "validate_thinking_mode",
]
