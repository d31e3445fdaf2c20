"""A live frame, and what the channel sends for it: only the messages that changed since the last frame it sent,
and for a message whose text only grew, the text added (assets/js/live.js applies them)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

Message = dict[str, Any]  # one chat message as the page's Chatbot holds it: role, metadata, content parts, options


@dataclass(frozen=True)
class LiveFrame:
    start: int  # where `messages` begin in the chat the page shows (the messages before it stay as they are)
    messages: list[Message]


def frame_diff(sent: LiveFrame | None, frame: LiveFrame) -> dict[str, Any] | None:
    """{"start", "length", "ops"}: the page's live messages become `frame.messages` by applying `ops` (each
    {"i", "set": message} or {"i", "append": text}) to the ones it holds from `sent` (none when it starts
    elsewhere), cut to `length`. None when the page already shows `frame` (nothing to send)."""
    same_place = sent is not None and sent.start == frame.start
    before = sent.messages if sent is not None and same_place else []
    ops: list[dict[str, Any]] = []
    for index, message in enumerate(frame.messages):
        old = before[index] if index < len(before) else None
        if old == message:
            continue
        added = _appended(old, message)
        ops.append({"i": index, "append": added} if added is not None else {"i": index, "set": message})
    if not ops and same_place and len(before) == len(frame.messages):
        return None
    return {"start": frame.start, "length": len(frame.messages), "ops": ops}


def _appended(old: Message | None, new: Message) -> str | None:
    """The text added to `old`'s only text part when that is all that changed, else None."""
    if old is None or old.keys() != new.keys() or any(old[key] != new[key] for key in old if key != "content"):
        return None
    old_parts, new_parts = old.get("content"), new.get("content")
    if not (isinstance(old_parts, list) and isinstance(new_parts, list) and len(old_parts) == len(new_parts) == 1):
        return None
    old_part, new_part = old_parts[0], new_parts[0]
    if not (isinstance(old_part, dict) and isinstance(new_part, dict) and old_part.keys() == new_part.keys()
            and all(old_part[key] == new_part[key] for key in old_part if key != "text")):
        return None
    old_text, new_text = old_part.get("text"), new_part.get("text")
    if isinstance(old_text, str) and isinstance(new_text, str) and new_text.startswith(old_text):
        return new_text[len(old_text):]
    return None
