"""A person's saved system prompts: named texts to start a chat with, one of them perhaps the default for new chats.

One set of rules for both places they are kept: per person in the accounts database (m3ui.accounts.saved_prompts),
or without accounts in the browser's storage, as the chats are (assets/js/saved_prompts.js). A PromptBook is
immutable; each change checks its input and raises PromptError saying what to fix, changing nothing. Names are
case-insensitive ("Coder" and "coder" are one prompt). What comes back from a browser is untrusted:
`from_record` keeps what is readable and within the bounds, and drops the rest.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

MAX_NAME_CHARS = 60
MAX_TEXT_CHARS = 32_000  # about 8k tokens: a long system prompt, still a bounded write
MAX_PROMPTS = 100  # per person (or per browser)
NONE_CHOICE = "None"  # the picker's "no saved prompt": not a name a prompt may take


class PromptError(ValueError):
    """A change the saved prompts refuse, with a message fit to show as is."""


@dataclass(frozen=True)
class SavedPrompt:
    name: str
    text: str


def _key(name: str) -> str:
    return name.casefold()


def check_name(name: object) -> str:
    """The name as kept (runs of spaces made one), or PromptError."""
    name = " ".join(str(name or "").split())
    if not name:
        raise PromptError("Give the prompt a name first.")
    if len(name) > MAX_NAME_CHARS or not name.isprintable():
        raise PromptError(f"A prompt's name is at most {MAX_NAME_CHARS} printable characters.")
    if _key(name) == _key(NONE_CHOICE):
        raise PromptError(f"“{NONE_CHOICE}” stands for no saved prompt: choose another name.")
    return name


def check_text(text: object) -> str:
    text = str(text or "").strip()
    if not text:
        raise PromptError("The system prompt box is empty: write the prompt there, then save it.")
    if len(text) > MAX_TEXT_CHARS:
        raise PromptError(f"A saved prompt holds at most {MAX_TEXT_CHARS:,} characters (this one has "
                          f"{len(text):,}).")
    return text


@dataclass(frozen=True)
class PromptBook:
    prompts: tuple[SavedPrompt, ...] = ()  # sorted by name, case-insensitively
    default: str | None = None  # the name of the prompt New chat starts with

    def get(self, name: str) -> SavedPrompt | None:
        return next((p for p in self.prompts if _key(p.name) == _key(name)), None)

    def names(self) -> list[str]:
        return [p.name for p in self.prompts]

    @property
    def default_text(self) -> str | None:
        found = self.get(self.default) if self.default is not None else None
        return found.text if found is not None else None

    def require(self, name: object) -> SavedPrompt:
        """The prompt of that name, or PromptError (it may have been deleted in another tab or device)."""
        found = self.get(str(name or ""))
        if found is None:
            raise PromptError(f"You have no saved prompt named “{str(name or '')[:MAX_NAME_CHARS]}” (deleted "
                              "elsewhere?): pick one from the list.")
        return found

    def saved(self, name: object, text: object, replacing: str | None = None) -> PromptBook:
        """With `text` saved as `name`. A name already taken is refused unless it is `replacing`'s (the prompt
        the person has selected: its text is replaced, under the name as now written)."""
        name, text = check_name(name), check_text(text)
        taken = self.get(name)
        if taken is not None and (replacing is None or _key(replacing) != _key(name)):
            raise PromptError(f"You have a prompt named “{taken.name}” already: choose another name (or select "
                              f"“{taken.name}” in the list first to replace its text).")
        if taken is None and len(self.prompts) >= MAX_PROMPTS:
            raise PromptError(f"At most {MAX_PROMPTS} prompts are kept: delete one first.")
        others = [p for p in self.prompts if _key(p.name) != _key(name)]
        default = name if taken is not None and self.default == taken.name else self.default
        return PromptBook(tuple(sorted((*others, SavedPrompt(name, text)), key=lambda p: _key(p.name))), default)

    def without(self, name: object) -> PromptBook:
        gone = self.require(name)
        return PromptBook(tuple(p for p in self.prompts if p is not gone),
                          None if self.default == gone.name else self.default)

    def with_default(self, name: object | None) -> PromptBook:
        """`name` is the prompt New chat starts with (None: none is)."""
        return replace(self, default=None if name is None else self.require(name).name)

    def record(self) -> dict[str, object]:
        """As the browser stores it (json.dumps-able)."""
        return {"prompts": [{"name": p.name, "text": p.text} for p in self.prompts], "default": self.default}

    @classmethod
    def from_record(cls, record: object) -> PromptBook:
        """A stored book (untrusted): the readable prompts within the bounds, the first of each name."""
        book = cls()
        items = record.get("prompts") if isinstance(record, dict) else None
        for item in items[:MAX_PROMPTS] if isinstance(items, list) else ():
            try:
                book = book.saved(item.get("name"), item.get("text")) if isinstance(item, dict) else book
            except PromptError:
                continue
        default = record.get("default") if isinstance(record, dict) else None
        found = book.get(default) if isinstance(default, str) else None
        return replace(book, default=found.name if found is not None else None)
