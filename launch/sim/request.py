"""The chat request as sglang-kt's OpenAI layer accepts it, its checks, and the conversation it describes.

Field names and defaults follow entrypoints/openai/protocol.py (ChatCompletionRequest): unknown fields are
ignored, tool_choice defaults to "auto" with tools and "none" without, separate_reasoning and
stream_reasoning default to true. `check_request` returns serving_chat._validate_request's messages.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, field_validator, model_validator

from launch.sim.answers import Conversation, ToolChoiceMode, Turn
from launch.sim.m3_text import PlannedCall
from launch.sim.tool_intent import ToolSpec

ROLES = ("system", "assistant", "tool", "function", "developer", "user")


class _Lenient(BaseModel):
    model_config = ConfigDict(extra="allow")


class FunctionIn(_Lenient):
    name: str
    description: str | None = None
    parameters: dict[str, Any] | None = None


class ToolIn(_Lenient):
    type: str = "function"
    function: FunctionIn


class NamedFunction(_Lenient):
    name: str | None = None


class NamedToolChoice(_Lenient):
    type: Literal["function"] = "function"
    function: NamedFunction


class CalledFunction(_Lenient):
    name: str | None = None
    arguments: str | dict[str, Any] | None = None


class ToolCallIn(_Lenient):
    id: str | None = None
    type: str = "function"
    function: CalledFunction


class MessageIn(_Lenient):
    role: str
    content: str | list[dict[str, Any]] | None = None
    tool_calls: list[ToolCallIn] | None = None
    tool_call_id: str | None = None
    reasoning_content: str | None = None

    @field_validator("role", mode="before")
    @classmethod
    def _known_role(cls, value: Any) -> str:
        if not isinstance(value, str) or value.lower() not in ROLES:
            raise ValueError(f"'role' must be one of {', '.join(ROLES)} (case-insensitive).")
        return value.lower()

    @property
    def text(self) -> str:
        if isinstance(self.content, list):
            return "".join(str(p.get("text", "")) for p in self.content if isinstance(p, dict))
        return self.content or ""


class StreamOptions(_Lenient):
    include_usage: bool | None = False
    continuous_usage_stats: bool | None = False


class ChatRequest(_Lenient):
    messages: list[MessageIn]
    model: str = "default"
    stream: bool = False
    stream_options: StreamOptions | None = None
    max_tokens: int | None = None
    max_completion_tokens: int | None = None
    tools: list[ToolIn] | None = None
    tool_choice: Literal["auto", "required", "none"] | NamedToolChoice | None = None
    chat_template_kwargs: dict[str, Any] | None = None
    separate_reasoning: bool = True
    stream_reasoning: bool = True
    skip_special_tokens: bool = True
    continue_final_message: bool = False
    rid: str | None = None
    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    min_p: float | None = None
    repetition_penalty: float | None = None
    frequency_penalty: float = 0.0
    presence_penalty: float = 0.0

    @model_validator(mode="before")
    @classmethod
    def _tool_choice_default(cls, values: Any) -> Any:
        """protocol.py's set_tool_choice_default, kept as it is: it calls `.get` on whatever the body is, so a
        JSON array (or any non-object) raises AttributeError, which is no validation error, and the server
        answers 500 Internal Server Error, not 400."""
        if values.get("tool_choice") is None:
            values["tool_choice"] = "none" if values.get("tools") is None else "auto"
        return values

    @property
    def choice_mode(self) -> ToolChoiceMode:
        if isinstance(self.tool_choice, NamedToolChoice):
            return "named"
        return self.tool_choice or "none"

    @property
    def named_tool(self) -> str | None:
        return self.tool_choice.function.name if isinstance(self.tool_choice, NamedToolChoice) else None

    @property
    def max_new_tokens(self) -> int | None:
        return self.max_completion_tokens or self.max_tokens

    @property
    def thinking_mode(self) -> str | None:
        """chat_template_kwargs.thinking_mode as sent (None when the key is absent)."""
        value = (self.chat_template_kwargs or {}).get("thinking_mode")
        return value if isinstance(value, str) else None


def check_request(request: ChatRequest, context_length_flag: int | None) -> str | None:
    """The first reason sglang-kt refuses the request before generating (HTTP 400), or None.

    max_tokens is held against `--context-length` only when that flag was given; otherwise an oversized
    request passes here and fails in the tokenizer manager (chat_route._context_error)."""
    if not request.messages:
        return "Messages cannot be empty."
    tools = request.tools or []
    if request.choice_mode == "required" and not tools:
        return "Tools cannot be empty if tool choice is set to required."
    if request.choice_mode == "named":
        if not tools:
            return "Tools cannot be empty if tool choice is set to a specific tool."
        if not any(t.function.name == request.named_tool for t in tools):
            return f"Tool '{request.named_tool}' not found in tools list."
    limit = request.max_new_tokens
    if limit and context_length_flag and limit > context_length_flag:
        return (f"max_completion_tokens is too large: {limit}."
                f"This model supports at most {context_length_flag} completion tokens.")
    return None


def sampling_error(request: ChatRequest) -> str | None:
    """SamplingParams.verify's complaint about the request's sampling settings (unset ones take the defaults)."""
    temperature = 1.0 if request.temperature is None else request.temperature
    top_p = 1.0 if request.top_p is None else request.top_p
    top_k = -1 if request.top_k is None else request.top_k
    min_p = 0.0 if request.min_p is None else request.min_p
    repetition = 1.0 if request.repetition_penalty is None else request.repetition_penalty
    checks = (
        (temperature < 0.0, f"temperature must be non-negative, got {temperature}."),
        (not 0.0 < top_p <= 1.0, f"top_p must be in (0, 1], got {top_p}."),
        (not 0.0 <= min_p <= 1.0, f"min_p must be in [0, 1], got {min_p}."),
        (top_k < 1 and top_k != -1, f"top_k must be -1 (disable) or at least 1, got {top_k}."),
        (not -2.0 <= request.frequency_penalty <= 2.0,
         f"frequency_penalty must be in [-2, 2], got {request.frequency_penalty}."),
        (not -2.0 <= request.presence_penalty <= 2.0,
         f"presence_penalty must be in [-2, 2], got {request.presence_penalty}."),
        (not 0.0 <= repetition <= 2.0, f"repetition_penalty must be in [0, 2], got {repetition}."),
        ((request.max_new_tokens or 0) < 0, f"max_new_tokens must be at least 0, got {request.max_new_tokens}."),
    )
    return next((message for failed, message in checks if failed), None)


def _calls(message: MessageIn) -> tuple[tuple[PlannedCall, ...], tuple[str, ...]]:
    """An assistant turn's tool calls; string arguments are parsed (invalid JSON raises ValueError)."""
    calls, ids = [], []
    for call in message.tool_calls or []:
        args = call.function.arguments
        parsed = json.loads(args) if isinstance(args, str) else (args or {})
        calls.append(PlannedCall(call.function.name or "", parsed if isinstance(parsed, dict) else {}))
        ids.append(call.id or "")
    return tuple(calls), tuple(ids)


def to_conversation(request: ChatRequest) -> Conversation:
    """What the model is shown. Raises ValueError for tool-call arguments that are not JSON."""
    turns = []
    for message in request.messages:
        calls, ids = _calls(message) if message.role == "assistant" else ((), ())
        turns.append(Turn(message.role, message.text, calls, ids, message.tool_call_id))
    if turns and turns[-1].role == "assistant" and not request.continue_final_message:
        turns[-1] = Turn("user", turns[-1].text)  # serving_chat rewrites a trailing assistant turn as the user's
    tools = tuple(ToolSpec(t.function.name, t.function.description or "", t.function.parameters)
                  for t in request.tools or [] if request.named_tool in (None, t.function.name))
    return Conversation(tuple(turns), tools, request.choice_mode, request.named_tool)


def prompt_texts(request: ChatRequest) -> list[str]:
    """The pieces the chat template renders, for counting prompt tokens."""
    texts = [f"{m.role}\n{m.text}" + "".join(json.dumps(c.function.model_dump(), ensure_ascii=False)
                                             for c in m.tool_calls or []) for m in request.messages]
    if request.tools and request.choice_mode != "none":
        texts.append(json.dumps([t.model_dump() for t in request.tools], ensure_ascii=False))
    return texts


def has_earlier_assistant_turn(request: ChatRequest) -> bool:
    return any(m.role == "assistant" for m in request.messages[:-1])
