"""Build the keyword arguments of one streaming chat-completions call (openai SDK)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from m3ui.client.settings import GenerationSettings

WireMessage = dict[str, object]  # one OpenAI chat message, exactly as sent on the wire
WireTool = dict[str, object]  # one OpenAI `tools` entry


@dataclass(frozen=True)
class ForceTool:
    """tool_choice naming one tool: the model must call it."""

    name: str


ToolChoice = Literal["auto", "none", "required"] | ForceTool


def tool_choice_wire(choice: ToolChoice) -> object:
    if isinstance(choice, ForceTool):
        return {"type": "function", "function": {"name": choice.name}}
    return choice


def chat_request_kwargs(
    model: str,
    messages: Sequence[WireMessage],
    settings: GenerationSettings,
    tools: Sequence[WireTool] = (),
    tool_choice: ToolChoice = "auto",
) -> dict[str, object]:
    """All fields for `client.chat.completions.create(**kwargs)`.

    The thinking mode goes out explicitly on every request: without it multi-turn M3 chats have been seen
    to answer with a literal `</mm:think>` and no reasoning. skip_special_tokens=False keeps M3's tags intact.
    """
    extra_body: dict[str, object] = {
        "chat_template_kwargs": {"thinking_mode": settings.thinking_mode},
        "skip_special_tokens": False,
    }
    for key in ("top_k", "min_p", "repetition_penalty"):
        value = getattr(settings, key)
        if value is not None:
            extra_body[key] = value
    kwargs: dict[str, object] = {
        "model": model,
        "messages": list(messages),
        "stream": True,
        "stream_options": {"include_usage": True},
        "temperature": settings.temperature,
        "top_p": settings.top_p,
        "max_tokens": settings.max_tokens,
        "extra_body": extra_body,
    }
    if settings.seed is not None:
        kwargs["seed"] = settings.seed
    if tools:
        kwargs["tools"] = list(tools)
        kwargs["tool_choice"] = tool_choice_wire(tool_choice)
    return kwargs
