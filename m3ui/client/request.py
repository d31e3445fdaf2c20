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

    Messages that end with an assistant message ask the engine to continue that answer (Continue after a cut or a
    stop): `continue_final_message` makes sglang-kt append its text after the generation prompt, where it would
    otherwise rewrite it as the user's (docs/ENGINE_CONTRACT.md); the thinking is over, so the mode is "disabled"
    and what streams is the rest of the answer's text.

    The body goes out as `extra_body`, which the SDK sends as it is, over a placeholder `messages`: the SDK
    otherwise walks every message against its typed schema before sending (measured: 0.4 ms for one message,
    4.4 ms for 21, on the path to the first token and growing with the chat), and these are already in wire form.
    """
    continuing = bool(messages) and messages[-1].get("role") == "assistant"
    body: dict[str, object] = {
        "messages": list(messages),
        "stream": True,
        "stream_options": {"include_usage": True},
        "temperature": settings.temperature,
        "top_p": settings.top_p,
        "max_tokens": settings.max_tokens,
        "chat_template_kwargs": {"thinking_mode": "disabled" if continuing else settings.thinking_mode},
        "skip_special_tokens": False,
    }
    if continuing:
        body["continue_final_message"] = True
    for key in ("top_k", "min_p", "repetition_penalty", "seed"):
        value = getattr(settings, key)
        if value is not None:
            body[key] = value
    if tools:
        body["tools"] = list(tools)
        body["tool_choice"] = tool_choice_wire(tool_choice)
    return {"model": model, "messages": [], "stream": True, "extra_body": body}
