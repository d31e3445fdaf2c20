"""Transcript views -> gr.ChatMessage list: reasoning and tool calls as collapsible blocks, answers as messages.

Blocks carry `metadata.title` (so they are display-only); a reasoning block is "pending" (open, spinner) while
the model thinks and "done" (collapsed, titled with how long it thought) once the answer starts; a tool call
block holds its arguments and, nested inside it through `parent_id`, its result; it shows a spinner while
pending and its outcome ("done" / "error") and duration once settled.
"""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from datetime import UTC, datetime

import gradio as gr
from gradio.components.chatbot import MetadataDict

from m3ui.chat_session import CallStatus, CallView, QuestionView, StepView, TranscriptItem
from m3ui.client.safe_text import safe_text
from m3ui.conversation.export import fenced
from m3ui.conversation.library import ChatNote, NoteKind
from m3ui.ui.chat.folding import fold_question

_CALL_LOG: dict[CallStatus, str] = {
    "receiving": "receiving arguments…",
    "queued": "queued",
    "awaiting_approval": "waiting for your approval",
    "running": "running…",
    "done": "done",
    "error": "error",
}
_NOTE_LEAD: dict[NoteKind, str] = {"error": "⚠ **Error**", "stopped": "■ **Stopped**", "cut": "✂ **Cut off**",
                                   "info": "ℹ", "refused": '⊘ <span class="m3-refused">**Refused**</span>'}
WAITING_TITLE = "Waiting for the first token…"


def render(items: Sequence[TranscriptItem] = (), live: Sequence[StepView] = (), running: bool = False
           ) -> list[gr.ChatMessage]:
    """The chat as messages; `live` are the steps of the answer still streaming (shown after `items`)."""
    messages: list[gr.ChatMessage] = []
    for position, item in enumerate(items):
        messages.extend(_item_messages(item, f"m{position}"))
    for position, step in enumerate(live):
        messages.extend(step_messages(step, f"l{position}"))
    if running and (not live or live[-1].empty):
        messages.append(gr.ChatMessage(content="", metadata={"title": WAITING_TITLE, "status": "pending"}))
    return messages


def message_times(items: Sequence[TranscriptItem]) -> list[str | None]:
    """When each message `render(items)` shows was written (ISO 8601, UTC), or None when unknown: the page shows
    it, in the reader's own time, when the pointer rests on the message (assets/js/chat.js)."""
    times: list[str | None] = []
    for position, item in enumerate(items):
        at = None if isinstance(item, ChatNote) else item.at
        stamp = None if at is None else datetime.fromtimestamp(at, UTC).isoformat(timespec="seconds")
        times.extend(stamp for _ in _item_messages(item, f"m{position}"))
    return times


def _item_messages(item: TranscriptItem, key: str) -> list[gr.ChatMessage]:
    if isinstance(item, QuestionView):
        return [gr.ChatMessage(role="user", content=fold_question(item.text))]
    if isinstance(item, ChatNote):
        return [note_message(item)]
    return step_messages(item, key)


def note_message(note: ChatNote) -> gr.ChatMessage:
    return gr.ChatMessage(content=f"{_NOTE_LEAD[note.kind]} — {note.text}")


def step_messages(step: StepView, key: str) -> list[gr.ChatMessage]:
    messages: list[gr.ChatMessage] = []
    if step.reasoning or step.thinking:
        messages.append(gr.ChatMessage(content=step.reasoning, metadata={
            "title": _thinking_title(step), "status": "pending" if step.thinking else "done", "id": f"{key}r"}))
    stats = step.stats_line()
    footer = f'<div class="m3-stats">{html.escape(stats)}</div>' if stats else ""
    if step.content or (footer and not step.calls):
        messages.append(gr.ChatMessage(content=f"{step.content}\n\n{footer}" if step.content and footer
                                       else step.content or footer))
    for position, call in enumerate(step.calls):
        messages.extend(call_messages(call, f"{key}c{position}"))
    if footer and step.calls and not step.content:  # a tool-call step's figures, like any answer's
        messages.append(gr.ChatMessage(content=footer))
    return messages


def _thinking_title(step: StepView) -> str:
    if step.thinking:
        return "Thinking…"
    return "Thought" if step.thinking_s is None else f"Thought for {step.thinking_s:.1f} s"


def call_messages(call: CallView, block_id: str) -> list[gr.ChatMessage]:
    """A settled call has no status, so it stays open: in a tool demo its arguments and result are the point."""
    metadata: MetadataDict = {"title": f"Tool call: {call.name}", "id": block_id, "log": _CALL_LOG[call.status]}
    if call.status not in ("done", "error"):
        metadata["status"] = "pending"
    if call.result is not None and call.result.duration_s > 0:  # refused calls never ran
        metadata["duration"] = call.result.duration_s
    messages = [gr.ChatMessage(content=fenced(pretty_json(call.arguments_json), "json"), metadata=metadata)]
    if call.result is not None:
        title = "Error" if call.result.is_error else "Result"
        messages.append(gr.ChatMessage(content=fenced(call.result.content),
                                       metadata={"title": title, "parent_id": block_id, "id": f"{block_id}r"}))
    return messages


def pretty_json(text: str) -> str:
    """Indented when it parses (it may still be streaming, or broken: then shown as it came); a `\\ud83d` escape
    must not turn into a lone surrogate that the page cannot encode."""
    try:
        return safe_text(json.dumps(json.loads(text), indent=2, ensure_ascii=False))
    except ValueError:
        return text


