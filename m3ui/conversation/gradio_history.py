"""Gradio 6 chat history (plain dicts, no gradio import) -> Conversation.

Gradio hands handlers a normalized history: `content` is a list of parts `[{"type": "text", "text": ..}]`,
and messages whose `metadata.title` is set are display-only blocks (reasoning, tool calls) to drop.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from m3ui.conversation.turns import AssistantTurn, Conversation, Turn, UserTurn


def conversation_from_gradio(history: Sequence[Mapping[str, object]], system_prompt: str = "") -> Conversation:
    turns: list[Turn] = []
    for message in history:
        if _is_display_only(message):
            continue
        text = message_text(message.get("content"))
        role = message.get("role")
        if role == "system" and text:
            system_prompt = text
        elif role == "user" and text:
            turns.append(UserTurn(text))
        elif role == "assistant" and text:
            turns.append(AssistantTurn(content=text))
    return Conversation(tuple(turns), system_prompt)


def _is_display_only(message: Mapping[str, object]) -> bool:
    metadata = message.get("metadata")
    return isinstance(metadata, Mapping) and bool(metadata.get("title"))


def message_text(content: object) -> str:
    """Text of a message's content: a string, one part, or a list of parts (non-text parts are skipped)."""
    if isinstance(content, str):
        return content
    if isinstance(content, Mapping):
        text = content.get("text")
        return text if content.get("type", "text") == "text" and isinstance(text, str) else ""
    if isinstance(content, Sequence):
        return "\n".join(part for part in map(message_text, content) if part)
    return ""
