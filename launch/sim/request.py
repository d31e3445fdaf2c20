"""The chat request as sglang-kt's OpenAI layer accepts it, its checks, and the conversation it describes.

Field names and defaults follow entrypoints/openai/protocol.py (ChatCompletionRequest): unknown fields are
ignored, tool_choice defaults to "auto" with tools and "none" without, separate_reasoning and
stream_reasoning default to true. `check_request` returns serving_chat._validate_request's messages.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from launch.sim.answers import Conversation, ToolChoiceMode, Turn
from launch.sim.m3_text import PlannedCall
from launch.sim.tool_intent import ToolSpec

GENERIC_ROLES = ("system", "assistant", "tool", "function", "developer")


class _Lenient(BaseModel):
    model_config = ConfigDict(extra="allow")


class FunctionIn(_Lenient):
    name: str
    description: str | None = None
    parameters: Any = None  # any JSON; serving_chat checks it is a JSON Schema

    @property
    def parameters_schema(self) -> dict[str, Any] | None:
        return self.parameters if isinstance(self.parameters, dict) else None


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


# Message and content-part models keep protocol.py's class names and union: a pydantic error then names the
# same member and field as the real one (a user turn without content, a part of an unknown type).
class ChatCompletionMessageContentTextPart(BaseModel):
    type: Literal["text"]
    text: str


class _MediaURL(BaseModel):
    url: str


class _TiledMediaURL(_MediaURL):
    max_dynamic_patch: int | None = None
    min_dynamic_patch: int | None = None


class _ImageURL(_TiledMediaURL):
    detail: Literal["auto", "low", "high"] | None = "auto"


class ChatCompletionMessageContentImagePart(BaseModel):
    type: Literal["image_url"]
    image_url: _ImageURL
    modalities: Literal["image", "multi-images", "video"] | None = "image"


class ChatCompletionMessageContentVideoPart(BaseModel):
    type: Literal["video_url"]
    video_url: _TiledMediaURL


class ChatCompletionMessageContentAudioPart(BaseModel):
    type: Literal["audio_url"]
    audio_url: _MediaURL


ContentPart = (ChatCompletionMessageContentTextPart | ChatCompletionMessageContentImagePart
               | ChatCompletionMessageContentVideoPart | ChatCompletionMessageContentAudioPart)


class _Message(BaseModel):
    role: str
    content: str | list[ContentPart] | None

    @property
    def text(self) -> str:
        if isinstance(self.content, list):
            return "".join(p.text for p in self.content if isinstance(p, ChatCompletionMessageContentTextPart))
        return self.content or ""


class ChatCompletionMessageGenericParam(_Message):
    role: Literal["system", "assistant", "tool", "function", "developer"]
    content: str | list[ContentPart] | None = None
    tool_call_id: str | None = None
    name: str | None = None
    reasoning_content: str | None = None
    tool_calls: list[ToolCallIn] | None = None

    @field_validator("role", mode="before")
    @classmethod
    def _normalize_role(cls, value: Any) -> str:
        if isinstance(value, str):
            if value.lower() not in GENERIC_ROLES:
                raise ValueError("'role' must be one of 'system', 'developer', 'assistant', 'tool', or 'function' "
                                 "(case-insensitive).")
            return value.lower()
        raise ValueError("'role' must be a string")


class ChatCompletionMessageUserParam(_Message):
    role: Literal["user"]
    content: str | list[ContentPart]
    tool_calls: ClassVar[None] = None
    tool_call_id: ClassVar[None] = None


MessageIn = ChatCompletionMessageGenericParam | ChatCompletionMessageUserParam


class StreamOptions(_Lenient):
    include_usage: bool | None = False
    continuous_usage_stats: bool | None = False


class JsonSchemaResponseFormat(BaseModel):
    name: str
    description: str | None = None
    schema_: dict[str, object] | None = Field(alias="schema", default=None)
    strict: bool | None = False


class ResponseFormat(BaseModel):
    type: Literal["text", "json_object", "json_schema"]
    json_schema: JsonSchemaResponseFormat | None = None


class StructuresResponseFormat(BaseModel):
    begin: str
    schema_: dict[str, object] | None = Field(alias="schema", default=None)
    end: str


class LegacyStructuralTagResponseFormat(BaseModel):
    type: Literal["structural_tag"]
    structures: list[StructuresResponseFormat]
    triggers: list[str]


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
    reasoning_effort: str | None = None
    response_format: ResponseFormat | LegacyStructuralTagResponseFormat | None = None
    regex: str | None = None
    ebnf: str | None = None
    stop: str | list[str] | None = None
    stop_regex: str | list[str] | None = None
    no_stop_trim: bool = False
    ignore_eos: bool = False
    min_tokens: int = 0
    n: int = 1
    logprobs: bool = False
    top_logprobs: int | None = None
    return_hidden_states: bool = False
    custom_logit_processor: list[str | None] | str | None = None
    lora_path: list[str | None] | str | None = None

    @model_validator(mode="before")
    @classmethod
    def _tool_choice_default(cls, values: Any) -> Any:
        """protocol.py's set_tool_choice_default, kept as it is: it calls `.get` on whatever the body is, so a
        JSON array (or any non-object) raises AttributeError, which is no validation error, and the server
        answers 500 Internal Server Error, not 400."""
        if values.get("tool_choice") is None:
            values["tool_choice"] = "none" if values.get("tools") is None else "auto"
        return values

    @model_validator(mode="before")
    @classmethod
    def _normalize_reasoning_inputs(cls, values: Any) -> Any:
        """protocol.py's normalize_reasoning_inputs: `reasoning: {"effort": ...}` sets reasoning_effort (its
        `enabled` sets chat_template_kwargs.thinking, which M3's template does not read)."""
        reasoning = values.get("reasoning")
        if isinstance(reasoning, dict):
            effort = reasoning.get("effort") or reasoning.get("reasoning_effort")
            if isinstance(effort, str) and values.get("reasoning_effort") is None:
                values["reasoning_effort"] = effort
        return values

    @model_validator(mode="before")
    @classmethod
    def _set_json_schema(cls, values: Any) -> Any:
        """protocol.py's set_json_schema: a `schema` beside type json_schema becomes its json_schema."""
        response_format = values.get("response_format")
        if not isinstance(response_format, dict) or response_format.get("type") != "json_schema":
            return values
        schema = response_format.pop("schema", None)
        if response_format.get("json_schema") or not schema:
            return values
        strict = False
        if "properties" in schema and "strict" in schema["properties"]:
            item = schema["properties"].pop("strict", None)
            strict = bool(item and item.get("default", False))
        response_format["json_schema"] = {"name": schema.get("title", "Schema"), "schema": schema, "strict": strict}
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
    tools = tuple(ToolSpec(t.function.name, t.function.description or "", t.function.parameters_schema)
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
