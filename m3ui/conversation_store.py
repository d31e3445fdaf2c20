"""The saved chats of one browser: several conversations, one active, plus the notes the chat shows.

The UI keeps a ChatLibrary per browser session and mirrors it into the browser's localStorage (Gradio's
BrowserState) as plain JSON: `to_state()` / `from_state()`. What comes back from a browser is untrusted
and may be from an older version: anything unreadable is skipped, never raised.
"""

from __future__ import annotations

import json
import logging
import re
import secrets
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal, get_args

from m3ui.conversation import Conversation, ConversationFormatError, UserTurn, from_json, to_json, to_markdown

log = logging.getLogger(__name__)

# error: the answer failed; stopped: the user stopped it; cut: max_tokens or the step limit ended it;
# info: a remark on the answer above (e.g. its GPU hit rate), shown with its stats.
NoteKind = Literal["error", "stopped", "cut", "info"]
NOTE_KINDS: tuple[NoteKind, ...] = get_args(NoteKind)
DEFAULT_TITLE = "New chat"
TITLE_CHARS = 48
STATE_VERSION = 1
# A chat's id names its export folder on the server (export_files), and ids come back from the browser.
CHAT_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")


@dataclass(frozen=True)
class ChatNote:
    """Something the chat shows after a turn that is not part of what the model is sent."""

    after_turn: int  # index of the turn it follows; -1: before any turn
    kind: NoteKind
    text: str


@dataclass(frozen=True)
class SavedChat:
    id: str
    title: str = DEFAULT_TITLE
    conversation: Conversation = Conversation()
    notes: tuple[ChatNote, ...] = ()
    updated_at: float = 0.0

    def with_conversation(self, conversation: Conversation, notes: tuple[ChatNote, ...] | None = None) -> SavedChat:
        """New contents; a chat still called "New chat" takes its first question as title."""
        title = self.title
        if title == DEFAULT_TITLE:
            first = next((t.content for t in conversation.turns if isinstance(t, UserTurn)), "")
            title = title_from(first) or title
        return replace(self, title=title, conversation=conversation,
                       notes=self.notes if notes is None else notes, updated_at=time.time())

    def add_notes(self, *notes: ChatNote) -> SavedChat:
        return replace(self, notes=self.notes + notes)

    def before_last_answer(self) -> SavedChat | None:
        """The chat cut back to its last question (its answer, tool results and notes dropped), or None
        when there is no question to answer again."""
        last = self.conversation.last_user_index()
        if last < 0:
            return None
        kept = Conversation(self.conversation.turns[: last + 1], self.conversation.system_prompt)
        return replace(self, conversation=kept, notes=tuple(n for n in self.notes if n.after_turn < last))

    def cleared(self) -> SavedChat:
        return replace(self, conversation=Conversation((), self.conversation.system_prompt), notes=(),
                       updated_at=time.time())


def title_from(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= TITLE_CHARS else line[: TITLE_CHARS - 1].rstrip() + "…"


def new_chat(system_prompt: str = "") -> SavedChat:
    return SavedChat(uuid.uuid4().hex[:12], conversation=Conversation((), system_prompt), updated_at=time.time())


@dataclass(frozen=True)
class ChatLibrary:
    """Immutable; `chats` most recently updated first. There is always at least one chat, and it is active."""

    chats: tuple[SavedChat, ...]
    active_id: str

    @classmethod
    def fresh(cls) -> ChatLibrary:
        chat = new_chat()
        return cls((chat,), chat.id)

    @property
    def active(self) -> SavedChat:
        return next((c for c in self.chats if c.id == self.active_id), self.chats[0])

    def choices(self) -> list[tuple[str, str]]:
        """(title, id) of every chat, for a picker."""
        return [(chat.title, chat.id) for chat in self.chats]

    def put(self, chat: SavedChat) -> ChatLibrary:
        """Store `chat` (new or changed) first in the list and make it the active one."""
        others = tuple(c for c in self.chats if c.id != chat.id)
        return ChatLibrary((chat, *others), chat.id)

    def start_new(self, system_prompt: str = "") -> ChatLibrary:
        """Reuse the active chat when it is still empty, else add an empty one."""
        if not self.active.conversation.turns:
            return self
        return self.put(new_chat(system_prompt))

    def switch(self, chat_id: str) -> ChatLibrary:
        return replace(self, active_id=chat_id) if any(c.id == chat_id for c in self.chats) else self

    def rename(self, chat_id: str, title: str) -> ChatLibrary:
        title = title_from(title) or DEFAULT_TITLE
        return replace(self, chats=tuple(replace(c, title=title) if c.id == chat_id else c for c in self.chats))

    def delete(self, chat_id: str) -> ChatLibrary:
        rest = tuple(c for c in self.chats if c.id != chat_id)
        if not rest:
            return ChatLibrary.fresh()
        active = self.active_id if self.active_id != chat_id else rest[0].id
        return ChatLibrary(rest, active)

    def to_state(self) -> dict[str, object]:
        """JSON-serializable form for the browser's localStorage."""
        return {"version": STATE_VERSION, "active": self.active_id, "chats": [_chat_record(c) for c in self.chats]}

    @classmethod
    def from_state(cls, state: object) -> ChatLibrary:
        if not isinstance(state, Mapping) or state.get("version") != STATE_VERSION:
            return cls.fresh()
        records = state.get("chats")
        chats = tuple(chat for r in records if (chat := _chat_from_record(r)) is not None) if isinstance(
            records, list) else ()
        if not chats:
            return cls.fresh()
        active = state.get("active")
        return cls(chats, active if any(c.id == active for c in chats) else chats[0].id)


def _chat_record(chat: SavedChat) -> dict[str, object]:
    return {"id": chat.id, "title": chat.title, "updated_at": chat.updated_at,
            "conversation": json.loads(to_json(chat.conversation)),
            "notes": [[n.after_turn, n.kind, n.text] for n in chat.notes]}


def _chat_from_record(record: object) -> SavedChat | None:
    try:
        if not isinstance(record, Mapping):
            raise TypeError("not an object")
        chat_id = str(record["id"])
        if not CHAT_ID.fullmatch(chat_id):
            raise ValueError(f"unusable chat id {chat_id[:80]!r}")
        conversation = from_json(json.dumps(record["conversation"]))
        notes = tuple(ChatNote(int(after), kind, str(text)) for after, kind, text in record.get("notes", ())
                      if kind in NOTE_KINDS)
        return SavedChat(chat_id, title_from(str(record.get("title", ""))) or DEFAULT_TITLE,
                         conversation, notes, float(record.get("updated_at", 0.0)))
    except (ConversationFormatError, KeyError, TypeError, ValueError) as exc:
        log.warning("skipping a saved chat that cannot be read: %s", exc)
        return None


def browser_state_secret(data_dir: Path) -> str:
    """The key Gradio's BrowserState obfuscates localStorage with, kept in the data folder so that saved
    chats survive an app restart. (It is sent to the browser: it hides nothing from the user.)"""
    path = data_dir / "browser_state.key"
    try:
        secret = path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        secret = ""
    if not secret:
        secret = secrets.token_urlsafe(24)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(secret, encoding="utf-8")
    return secret


def export_files(chat: SavedChat, folder: Path) -> tuple[Path, Path]:
    """Write the chat as Markdown (to read) and JSON (to load back) under `folder`; (markdown, json) paths.

    Each file is replaced atomically: the same chat open in two pages may export at the same moment."""
    slug = re.sub(r"[^a-z0-9]+", "-", chat.title.lower()).strip("-")[:40] or "chat"
    target = folder / chat.id
    target.mkdir(parents=True, exist_ok=True)
    markdown, document = target / f"{slug}.md", target / f"{slug}.json"
    for path, text in ((markdown, f"# {chat.title}\n\n" + to_markdown(chat.conversation)),
                       (document, to_json(chat.conversation))):
        partial = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}")
        partial.write_text(text, encoding="utf-8")
        partial.replace(path)
    for old in target.iterdir():  # a renamed chat must not leave its old files behind
        if old not in (markdown, document) and not old.name.startswith("."):
            old.unlink(missing_ok=True)
    return markdown, document
