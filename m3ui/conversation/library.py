"""The saved chats of one browser: several conversations, one active, plus the notes the chat shows.

The UI keeps a ChatLibrary per page and mirrors it into the browser's localStorage, one record per chat
(`chat_record`), so that pages open side by side never overwrite each other's chats. Each record carries a
hash of its contents and the hash of the version it replaces ("base"): the page script writes a record only
over the version it was made from, and saves it as a copy otherwise (assets/js/chat.js), so no page can lose
another page's work. What comes back from a browser is untrusted and may be from an older version: anything
unreadable is skipped, never raised.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal, get_args

from pylatexenc.latex2text import LatexNodes2Text
from pylatexenc.latexwalker import LatexWalkerError

from m3ui.conversation import (
    AssistantTurn,
    Conversation,
    ConversationFormatError,
    Turn,
    UserTurn,
    from_json,
    to_json,
    to_markdown,
)
from m3ui.documents.attachment import without_documents

log = logging.getLogger(__name__)

# error: the answer failed; stopped: the user stopped it; cut: max_tokens or the step limit ended it;
# info: a remark on the answer above (e.g. its GPU hit rate), shown with its stats.
NoteKind = Literal["error", "stopped", "cut", "info", "refused"]  # refused: nothing was sent (a quota); no retry
NOTE_KINDS: tuple[NoteKind, ...] = get_args(NoteKind)
DEFAULT_TITLE = "New chat"
TITLE_CHARS = 40
RECORD_VERSION = 1
MAX_CHATS = 1000  # read from one browser; beyond that the oldest are left in storage, unread
EXPORT_MAX_CHARS = 8_000_000  # an export is built in memory and sent to the page: bounded
MAX_VERSIONS = 10  # versions of one answer kept (a chat's record is bounded): past that the oldest goes
# The generation settings a chat was last answered with (its thinking mode, sampling, limits, whether the model
# may call the built-in tools): name -> the type its value has. They come back with the chat; the UI checks them
# again before any use.
CHAT_SETTINGS: dict[str, type] = {"thinking_mode": str, "temperature": float, "top_p": float, "max_tokens": int,
                                  "stall_seconds": float, "keep_reasoning": bool, "tools": bool}
# Ids come back from the browser and name localStorage keys: a plain token, never a path or markup.
CHAT_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")


@dataclass(frozen=True)
class ChatNote:
    """Something the chat shows after a turn that is not part of what the model is sent."""

    after_turn: int  # index of the turn it follows; -1: before any turn
    kind: NoteKind
    text: str


@dataclass(frozen=True)
class AnswerVersion:
    """One answer to a question: every turn after it (steps, tool calls and results) and the notes after those,
    each note's `after_turn` counted from the question (0: right after it)."""

    turns: tuple[Turn, ...]
    notes: tuple[ChatNote, ...]


@dataclass(frozen=True)
class AnswerVersions:
    """The other answers to the last question (Regenerate keeps the one it replaces; ‹ › shows any of them).
    They belong to that question only: once the chat moves on (a new question, an edit) they are dropped and the
    answer shown stays."""

    question: int  # the turn index of the question
    others: tuple[AnswerVersion, ...]  # every version but the one shown, oldest first
    shown: int  # where the shown one sits among all of them (0-based)

    @property
    def count(self) -> int:
        return len(self.others) + 1


@dataclass(frozen=True)
class SavedChat:
    id: str
    title: str = DEFAULT_TITLE
    conversation: Conversation = Conversation()
    notes: tuple[ChatNote, ...] = ()
    updated_at: float = 0.0
    settings: Mapping[str, object] = field(default_factory=dict)  # see CHAT_SETTINGS; empty: never answered
    versions: AnswerVersions | None = None  # of the last answer

    def with_settings(self, settings: Mapping[str, object]) -> SavedChat:
        """The chat with the settings its next answer is asked with (anything not in CHAT_SETTINGS dropped)."""
        return replace(self, settings=chat_settings(settings))

    def with_conversation(self, conversation: Conversation, notes: tuple[ChatNote, ...] | None = None) -> SavedChat:
        """New contents; a chat still called "New chat" takes its first question as title."""
        title = self.title
        if title == DEFAULT_TITLE:
            first = next((t.content for t in conversation.turns if isinstance(t, UserTurn)), "")
            title = title_from(first) or title
        return replace(self, title=title, conversation=conversation, versions=self._versions_for(conversation),
                       notes=self.notes if notes is None else notes, updated_at=time.time())

    def _versions_for(self, conversation: Conversation) -> AnswerVersions | None:
        """The versions, while `conversation`'s last question is still the one they answer."""
        versions = self.versions
        return versions if versions is not None and versions.question == conversation.last_user_index() else None

    def _answer(self, question: int) -> AnswerVersion:
        """What follows the question at turn index `question`, as a version."""
        return AnswerVersion(self.conversation.turns[question + 1:],
                             tuple(replace(n, after_turn=n.after_turn - question) for n in self.notes
                                   if n.after_turn >= question))

    def _all_versions(self) -> tuple[AnswerVersion, ...]:
        """Every answer to the last question in order, the one shown included."""
        question = self.conversation.last_user_index()
        shown = self._answer(question)
        if self.versions is None:
            return (shown,)
        others = self.versions.others
        return (*others[:self.versions.shown], shown, *others[self.versions.shown:])

    def regenerating(self) -> SavedChat | None:
        """As before_last_answer, with the answer dropped kept as a version; the new one will come last."""
        cut = self.before_last_answer()
        if cut is None:
            return None
        kept = tuple(v for v in self._all_versions() if v.turns or v.notes)[-(MAX_VERSIONS - 1):]
        question = self.conversation.last_user_index()
        return replace(cut, versions=AnswerVersions(question, kept, len(kept)) if kept else None)

    def showing_version(self, position: int) -> SavedChat:
        """The last question's answer number `position` (0-based, clamped) shown; the one shown before is kept."""
        if self.versions is None:
            return self
        every = self._all_versions()
        position = max(0, min(position, len(every) - 1))
        question = self.versions.question
        chosen = every[position]
        turns = self.conversation.turns[:question + 1] + chosen.turns
        notes = tuple(n for n in self.notes if n.after_turn < question) + tuple(
            replace(n, after_turn=n.after_turn + question) for n in chosen.notes)
        versions = AnswerVersions(question, every[:position] + every[position + 1:], position)
        return replace(self, conversation=Conversation(turns, self.conversation.system_prompt), notes=notes,
                       versions=versions, updated_at=time.time())

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

    def to_continue(self) -> SavedChat | None:
        """The chat ready to continue its last answer, which was cut short (max tokens, a stop): without the note
        that said so. None when the last answer was not cut short or has no text to go on from."""
        turns = self.conversation.turns
        last = turns[-1] if turns else None
        ended = [n for n in self.notes if n.after_turn == len(turns) - 1 and n.kind in ("cut", "stopped")]
        if not (isinstance(last, AssistantTurn) and last.content and not last.tool_calls and ended):
            return None
        return replace(self, notes=tuple(n for n in self.notes if n not in ended))

    def cleared(self) -> SavedChat:
        return self._cut(0)

    def user_turn_index(self, ordinal: int) -> int | None:
        """Position in the turns of the `ordinal`-th question (0-based), None when there is no such one."""
        questions = [i for i, turn in enumerate(self.conversation.turns) if isinstance(turn, UserTurn)]
        return questions[ordinal] if 0 <= ordinal < len(questions) else None

    def is_question(self, turn_index: int | None) -> bool:
        """Whether `turn_index` (e.g. a selection made before the chat changed) still points at a question."""
        turns = self.conversation.turns
        return turn_index is not None and 0 <= turn_index < len(turns) and isinstance(turns[turn_index], UserTurn)

    def edited(self, turn_index: int, text: str) -> SavedChat:
        """The question at `turn_index` replaced by `text`, and everything after it dropped (to be answered anew)."""
        cut = self._cut(turn_index)
        return replace(cut, conversation=cut.conversation.ask(text))

    def retried(self, turn_index: int) -> SavedChat:
        """Cut back to the question at `turn_index`: its answer and every later turn dropped."""
        return self._cut(turn_index + 1)

    def without_exchange(self, turn_index: int) -> SavedChat:
        """The question at `turn_index` and its answer (up to the next question) removed; later turns kept."""
        turns = self.conversation.turns
        end = next((i for i in range(turn_index + 1, len(turns)) if isinstance(turns[i], UserTurn)), len(turns))
        removed = end - turn_index
        notes = tuple(n if n.after_turn < turn_index else replace(n, after_turn=n.after_turn - removed)
                      for n in self.notes if not turn_index <= n.after_turn < end)
        kept = Conversation(turns[:turn_index] + turns[end:], self.conversation.system_prompt)
        return replace(self, conversation=kept, notes=notes, versions=self._versions_for(kept), updated_at=time.time())

    def _cut(self, keep: int) -> SavedChat:
        """The first `keep` turns and the notes that follow them."""
        kept = Conversation(self.conversation.turns[:keep], self.conversation.system_prompt)
        return replace(self, conversation=kept, notes=tuple(n for n in self.notes if n.after_turn < keep),
                       versions=self._versions_for(kept), updated_at=time.time())

    def matches(self, query: str) -> bool:
        """Whether the title or any text of the chat contains `query` (case-insensitive)."""
        needle = query.casefold()
        return needle in self.title.casefold() or any(needle in text.casefold() for text in _texts(self))


def _texts(chat: SavedChat) -> Iterable[str]:
    yield chat.conversation.system_prompt
    for turn in chat.conversation.turns:
        if isinstance(turn, UserTurn | AssistantTurn):
            yield turn.content
    yield from (note.text for note in chat.notes)


_FENCED_BLOCK = re.compile(r"(`{3,}|~{3,}).*?(\1|$)", re.DOTALL)
_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_EMPHASIS = re.compile(r"(\*\*|__|~~|\*|_)(?=\S)(.+?)(?<=\S)\1")
_LINE_MARKS = re.compile(r"^\s*(?:#{1,6}|>+|[-+*]|\d+[.)])\s+|`+|\|", re.MULTILINE)
_TABLE_RULE = re.compile(r"(?<!\S)(?::-+:?|-+:|-{3,})(?!\S)")  # a table's |:--|---| row ("5 - 3" stays)
# Math as the chat renders it (m3ui/ui/chat/view.py LATEX_DELIMITERS): $$…$$, $…$, \(…\) and \[…\].
_MATH = re.compile(r"\$\$(.+?)\$\$|\$(?=\S)([^$\n]+?)(?<=\S)\$|\\\((.+?)\\\)|\\\[(.+?)\\\]", re.DOTALL)
_LATEX = LatexNodes2Text(math_mode="text")


def _plain_math(match: re.Match[str]) -> str:
    """A formula as text (\\frac{1}{2} -> 1/2, \\sqrt{2} -> √(2)); left as written if it cannot be read."""
    source = next(group for group in match.groups() if group is not None)
    try:
        return f" {_LATEX.latex_to_text(source)} "
    except (LatexWalkerError, ValueError, IndexError):
        return source


def chat_settings(values: object) -> dict[str, object]:
    """The known settings of `values`, each as its type. A number comes back from the browser as JavaScript wrote
    it (1.0 as 1): it is made a float again, or the chat's record would hash differently each time it is read."""
    if not isinstance(values, Mapping):
        return {}
    settings: dict[str, object] = {}
    for name, kind in CHAT_SETTINGS.items():
        value = values.get(name)
        if kind in (str, bool) and isinstance(value, kind):
            settings[name] = value
        elif kind in (int, float) and isinstance(value, int | float) and not isinstance(value, bool) \
                and (kind is float or float(value).is_integer()):
            settings[name] = kind(value)
    return settings


def title_from(text: str) -> str:
    """A short, plain one-line title: code blocks, link targets, Markdown marks and table rules dropped, math as
    text ("6*7" stays); a question with attachments is titled by what was typed."""
    text = _MATH.sub(_plain_math, _FENCED_BLOCK.sub(" ", without_documents(text)))
    plain = _TABLE_RULE.sub(" ", _LINE_MARKS.sub(" ", _EMPHASIS.sub(r"\2", _LINK.sub(r"\1", text))))
    line = " ".join(plain.split())
    return line if len(line) <= TITLE_CHARS else line[: TITLE_CHARS - 1].rstrip() + "…"


def new_chat(system_prompt: str = "") -> SavedChat:
    return SavedChat(uuid.uuid4().hex[:12], conversation=Conversation((), system_prompt), updated_at=time.time())


@dataclass(frozen=True)
class Undo:
    """What the last destructive action (delete, clear, edit, retry, removing a message) can put back."""

    label: str  # e.g. 'deleted “Trip plan”'
    chat: SavedChat  # the chat as it was


@dataclass(frozen=True)
class ChatLibrary:
    """Immutable; `chats` most recently updated first. There is always at least one chat, and it is active.

    `stored` maps each chat id to the hash of the version this page knows the browser holds, so `outbox()` can
    say what to write (and over which version) and which chats this page deleted."""

    chats: tuple[SavedChat, ...]
    active_id: str
    stored: Mapping[str, str] = field(default_factory=dict)
    undo: Undo | None = None
    query: str = ""  # the page's search: choices() lists the chats that match it
    page: str = ""  # the live ticket of the page showing it (m3ui.live): how a click on Send finds the chat early

    @classmethod
    def fresh(cls) -> ChatLibrary:
        chat = new_chat()
        return cls((chat,), chat.id)

    @property
    def active(self) -> SavedChat:
        return next((c for c in self.chats if c.id == self.active_id), self.chats[0])

    def choices(self) -> list[tuple[str, str]]:
        """(title, id) of every chat matching the search (all when there is none), newest first, for a picker."""
        query = self.query.strip()
        return [(chat.title, chat.id) for chat in self.chats if not query or chat.matches(query)]

    def put(self, chat: SavedChat) -> ChatLibrary:
        """Store `chat` (new or changed) first in the list and make it the active one."""
        others = tuple(c for c in self.chats if c.id != chat.id)
        return replace(self, chats=(chat, *others), active_id=chat.id)

    def put_undoable(self, chat: SavedChat, label: str) -> ChatLibrary:
        """Like put, remembering the active chat as it was so that Undo can bring it back."""
        return replace(self.put(chat), undo=Undo(label, self.active))

    def start_new(self, system_prompt: str = "") -> ChatLibrary:
        """A chat that starts with `system_prompt`: the active one while it is still empty, else a new empty one."""
        if not self.active.conversation.turns:
            if self.active.conversation.system_prompt == system_prompt:
                return self
            return self.put(self.active.with_conversation(Conversation((), system_prompt)))
        return self.put(new_chat(system_prompt))

    def switch(self, chat_id: str) -> ChatLibrary:
        return replace(self, active_id=chat_id) if any(c.id == chat_id for c in self.chats) else self

    def rename(self, chat_id: str, title: str) -> ChatLibrary:
        title = title_from(title) or DEFAULT_TITLE
        return replace(self, chats=tuple(replace(c, title=title) if c.id == chat_id else c for c in self.chats))

    def delete(self, chat_id: str) -> ChatLibrary:
        gone = next((c for c in self.chats if c.id == chat_id), None)
        rest = tuple(c for c in self.chats if c.id != chat_id)
        undo = Undo(f"deleted “{gone.title}”", gone) if gone is not None and gone.conversation.turns else self.undo
        if not rest:
            fresh = new_chat()
            return replace(self, chats=(fresh,), active_id=fresh.id, undo=undo)
        active = self.active_id if self.active_id != chat_id else rest[0].id
        return replace(self, chats=rest, active_id=active, undo=undo)

    def undone(self) -> ChatLibrary:
        """The last destructive action taken back (the chat restored as it was and made active)."""
        if self.undo is None:
            return self
        return replace(self.put(self.undo.chat), undo=None)

    def outbox(self) -> tuple[list[dict[str, object]], ChatLibrary]:
        """The records the browser must write (changed chats, and deletions as {"id", "deleted", "base"}),
        and the library that knows they are written. A new chat with nothing in it is not stored yet."""
        writes: list[dict[str, object]] = []
        stored: dict[str, str] = {}
        for chat in self.chats:
            base = self.stored.get(chat.id)
            if base is None and not chat.conversation.turns:
                continue
            record = chat_record(chat)
            stored[chat.id] = record["hash"]  # type: ignore[assignment]  # chat_record's hash is a str
            if record["hash"] != base:
                writes.append({**record, "base": base})
        writes.extend({"id": chat_id, "deleted": True, "base": base}
                      for chat_id, base in self.stored.items() if chat_id not in stored)
        return writes, replace(self, stored=stored)

    @classmethod
    def from_records(cls, records: object, active_id: str | None = None,
                     unsaved: Sequence[SavedChat] = ()) -> ChatLibrary:
        """The chats the browser holds (its records, untrusted) plus this page's `unsaved` ones (never written),
        newest first; `active_id` stays active when it is among them."""
        stored: dict[str, str] = {}
        chats: list[SavedChat] = []
        for record in records[:MAX_CHATS] if isinstance(records, list) else ():
            chat = chat_from_record(record)
            if chat is not None and chat.id not in stored:
                stored[chat.id] = str(record["hash"])  # the key's version, as the browser holds it
                chats.append(chat)
        chats.extend(c for c in unsaved if c.id not in stored)
        if not chats:
            return cls.fresh()
        chats.sort(key=lambda c: c.updated_at, reverse=True)
        active = active_id if any(c.id == active_id for c in chats) else chats[0].id
        return cls(tuple(chats), active, stored)  # type: ignore[arg-type]  # an id of one of the chats: any() matched it

    def synced(self, records: object, moved: Mapping[str, str] | None = None) -> ChatLibrary:
        """This page's library after the browser's records changed (another page wrote, or a record of this
        page was saved as a copy: `moved` maps its id to the copy's). Unsaved chats, Undo and the search are kept."""
        unsaved = [c for c in self.chats if c.id not in self.stored]
        active = (moved or {}).get(self.active_id, self.active_id)
        return replace(ChatLibrary.from_records(records, active, unsaved), undo=self.undo, query=self.query,
                       page=self.page)


def chat_record(chat: SavedChat) -> dict[str, object]:
    """A chat as the browser stores it: plain JSON with a hash of its contents. Text that cannot be encoded
    (a lone surrogate) is replaced, so a record can always be sent and stored."""
    record = {"v": RECORD_VERSION, "id": chat.id, "title": chat.title, "updated_at": chat.updated_at,
              "conversation": json.loads(to_json(chat.conversation)),
              "notes": [[n.after_turn, n.kind, n.text] for n in chat.notes]}
    if chat.settings:  # absent from a chat never answered: its record (and hash) is as before settings were kept
        record["settings"] = dict(chat.settings)
    if chat.versions is not None:  # absent too while there is one answer
        record["versions"] = {"question": chat.versions.question, "shown": chat.versions.shown, "others": [
            {"conversation": json.loads(to_json(Conversation(v.turns))),
             "notes": [[n.after_turn, n.kind, n.text] for n in v.notes]} for v in chat.versions.others]}
    text = json.dumps(record, ensure_ascii=False, sort_keys=True).encode("utf-8", "replace").decode("utf-8")
    return {**json.loads(text), "hash": hashlib.sha256(text.encode("utf-8")).hexdigest()[:20]}


def chat_from_record(record: object) -> SavedChat | None:
    try:
        if not isinstance(record, Mapping):
            raise TypeError("not an object")
        if record.get("v") != RECORD_VERSION or not isinstance(record.get("hash"), str):
            raise ValueError(f"not a version {RECORD_VERSION} chat record")
        chat_id = str(record["id"])
        if not CHAT_ID.fullmatch(chat_id):
            raise ValueError(f"unusable chat id {chat_id[:80]!r}")
        conversation = from_json(json.dumps(record["conversation"]))
        return SavedChat(chat_id, title_from(str(record.get("title", ""))) or DEFAULT_TITLE,
                         conversation, _notes(record.get("notes", ())), float(record.get("updated_at", 0.0)),
                         chat_settings(record.get("settings")), _versions(record.get("versions"), conversation))
    except (ConversationFormatError, KeyError, TypeError, ValueError) as exc:
        log.warning("skipping a saved chat that cannot be read: %s", exc)
        return None


def _notes(records: Any) -> tuple[ChatNote, ...]:  # parsed JSON: a malformed note raises, for the caller to catch
    return tuple(ChatNote(int(after), kind, str(text)) for after, kind, text in records if kind in NOTE_KINDS)


def _versions(record: object, conversation: Conversation) -> AnswerVersions | None:
    """A record's answer versions; unreadable ones (or ones for another question) are dropped, not the chat."""
    if record is None:
        return None
    try:
        if not isinstance(record, Mapping) or not isinstance(record["others"], list):
            raise TypeError("not an object with a list of versions")
        others = tuple(AnswerVersion(from_json(json.dumps(v["conversation"])).turns, _notes(v["notes"]))
                       for v in record["others"][:MAX_VERSIONS])
        question, shown = int(record["question"]), int(record["shown"])
        if not others or question != conversation.last_user_index() or not 0 <= shown <= len(others):
            raise ValueError("versions of another question")
        return AnswerVersions(question, others, shown)
    except (ConversationFormatError, KeyError, TypeError, ValueError) as exc:
        log.warning("dropping a saved chat's answer versions that cannot be read: %s", exc)
        return None


def export_documents(chat: SavedChat) -> dict[str, dict[str, str]]:
    """The chat as Markdown (to read) and JSON (to load back), for the page to download: {"md": {"name",
    "text"}, "json": {...}}. Built in memory on request, never written to the server's disk."""
    slug = re.sub(r"[^a-z0-9]+", "-", chat.title.lower()).strip("-")[:40] or "chat"
    documents = {"md": f"# {chat.title}\n\n" + to_markdown(chat.conversation), "json": to_json(chat.conversation)}
    for kind, text in documents.items():
        if len(text) > EXPORT_MAX_CHARS:
            raise ValueError(f"the chat is too long to export as {kind} ({len(text):,} characters; the limit is "
                             f"{EXPORT_MAX_CHARS:,}): delete some messages or split the chat")
    return {kind: {"name": f"{slug}.{kind}", "text": text.encode("utf-8", "replace").decode("utf-8")}
            for kind, text in documents.items()}
