"""The Chat tab's saved system prompts: a picker of the person's prompts beside the System prompt box, "Save as…"
(named) and Delete for the one selected, and "Use for new chats", the default that New chat starts with.

Picking a prompt starts the chat with it: it fills the box of a chat still empty; a chat already answered keeps
the system prompt its answers were made with, and the pick opens a new chat instead (the other stays in the list).
The prompt is then the chat's own system prompt, kept with the chat (a reload keeps it).

Where they are kept follows the chats (m3ui.ui.chat.view.build_chat_tab): with accounts, per person on the server
(m3ui.accounts.saved_prompts), the person always the request's login, never a value the page sends; without, in
the browser's storage (assets/js/saved_prompts.js), each change made on what the storage holds at the click. The
rules are PromptBook's (m3ui.conversation.saved_prompts) either way.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Protocol

import gradio as gr

from m3ui.accounts import AccountError
from m3ui.accounts.saved_prompts import SavedPrompts
from m3ui.conversation.library import ChatLibrary
from m3ui.conversation.saved_prompts import MAX_NAME_CHARS, NONE_CHOICE, PromptBook, PromptError, check_name
from m3ui.ui.chat.controller import ChatController
from m3ui.ui.chat.controls import clean_text
from m3ui.ui.chat.server_library import SIGNED_OUT
from m3ui.ui.chat.view_slots import SLOTS, Slots, Values

# In the browser, an event's last input (the book) is what the storage holds at the click.
READ_JS = "(...inputs) => [...inputs.slice(0, -1), window.m3uiPrompts.read()]"
WRITE_JS = "(book) => { window.m3uiPrompts.write(book); }"
# The picker shows the saved prompt the box holds, and "Use for new chats" whether it is the default.
MATCH_JS = ("(text, book) => { const name = window.m3uiPrompts.match(text, book); "
            "return [name, window.m3uiPrompts.defaultBox(name, book)]; }")
DEFAULT_JS = "(name, book) => window.m3uiPrompts.defaultBox(name, book)"
DEFAULT_INFO = "New chats start with the prompt selected above."


class PromptKeeper(Protocol):
    in_browser: bool  # whether the page's script reads and writes the book (the `book` component)

    def book(self, page: object, user: str | None) -> PromptBook:
        """The person's book; `page`: what the browser holds (untrusted), read only in the browser."""
        ...

    def change(self, page: object, user: str | None, edit: Callable[[PromptBook], PromptBook]) -> PromptBook:
        """The book after `edit`, kept (PromptError: refused, nothing changed)."""
        ...


class BrowserPrompts:
    in_browser = True

    def book(self, page: object, user: str | None) -> PromptBook:
        return PromptBook.from_record(page)

    def change(self, page: object, user: str | None, edit: Callable[[PromptBook], PromptBook]) -> PromptBook:
        return edit(self.book(page, user))  # the page's script stores what comes back


class ServerPrompts:
    in_browser = False

    def __init__(self, store: SavedPrompts) -> None:
        self.store = store

    def book(self, page: object, user: str | None) -> PromptBook:
        return self.store.book(_signed_in(user))

    def change(self, page: object, user: str | None, edit: Callable[[PromptBook], PromptBook]) -> PromptBook:
        return self.store.change(_signed_in(user), edit)


def _signed_in(user: str | None) -> str:
    if not user:
        raise gr.Error(SIGNED_OUT, title="Not signed in")
    return user


@dataclass
class PromptsView:
    pick: gr.Dropdown
    delete: gr.Button
    name: gr.Textbox
    save: gr.Button
    default: gr.Checkbox
    book: gr.JSON  # the person's book as the page knows it: what the picker matches the box against

    @classmethod
    def build(cls) -> PromptsView:
        """Under the System prompt box, as compact as the generation settings: the picker, the name to save the
        box's text as, the two buttons on one line, and the default."""
        pick = gr.Dropdown([NONE_CHOICE], value=NONE_CHOICE, label="Saved prompts", elem_id="m3-prompt-pick")
        name = gr.Textbox(placeholder="Name, to save the box's text as", show_label=False, max_lines=1,
                          max_length=MAX_NAME_CHARS, elem_id="m3-prompt-name")
        with gr.Row():
            save = gr.Button("Save as…", size="sm", min_width=60, elem_id="m3-prompt-save")
            delete = gr.Button("Delete", size="sm", min_width=60, elem_id="m3-prompt-delete")
        default = gr.Checkbox(False, label="Use for new chats", info=DEFAULT_INFO, interactive=False,
                              elem_id="m3-prompt-default")
        return cls(pick, delete, name, save, default, gr.JSON(None, visible=False))


def _choices(book: PromptBook) -> list[str]:
    return [NONE_CHOICE, *book.names()]


def _selected(name: object) -> str | None:
    return name if isinstance(name, str) and name and name != NONE_CHOICE else None


@contextmanager
def _refused(title: str) -> Iterator[None]:
    try:
        yield
    except (PromptError, AccountError) as exc:
        raise gr.Error(str(exc), title=title, print_exception=False) from None


class SavedPromptsController:
    def __init__(self, keeper: PromptKeeper, chat: ChatController, view: PromptsView) -> None:
        self.keeper = keeper
        self.chat = chat
        self.view = view

    def _shown(self, book: PromptBook, value: str | None = None) -> dict[Any, object]:
        """The page's book and the picker's choices (and value, when given)."""
        pick = gr.update(choices=_choices(book)) if value is None else gr.update(choices=_choices(book), value=value)
        return {self.view.book: book.record(), self.view.pick: pick}

    def load(self, page: object, request: gr.Request) -> dict[Any, object]:
        try:
            book = self.keeper.book(page, request.username)
        except AccountError:  # the admin password's user has no account to keep prompts with
            book = PromptBook()
        return self._shown(book)

    def pick(self, library: ChatLibrary | None, name: object, page: object, request: gr.Request) -> Values:
        """The chat starts with the picked prompt (None: with none)."""
        chosen = _selected(name)
        text = ""
        if chosen is not None:
            with _refused("Not picked"):
                text = self.keeper.book(page, request.username).require(chosen).text
        library = self.chat.owned(library)
        if library.active.conversation.turns:
            started = f"New chat with “{chosen}”" if chosen else "New chat without a saved prompt"
            gr.Info(f"{started}: the chat you were in keeps its system prompt and stays in the list.")
        return self.chat.new_chat(library, text)

    def new_chat(self, library: ChatLibrary | None, system_prompt: str, page: object, request: gr.Request) -> Values:
        """New chat: with the person's default prompt when there is one, else with the box as it is."""
        try:
            default = self.keeper.book(page, request.username).default_text
        except AccountError:
            default = None
        return self.chat.new_chat(library, system_prompt if default is None else default)

    def save(self, name: object, text: object, selected: object, page: object,
             request: gr.Request) -> dict[Any, object]:
        """The box's text saved as `name`; the selected prompt's name replaces its text."""
        replacing = _selected(selected)
        with _refused("Not saved"):
            kept = check_name(name)
            book = self.keeper.change(page, request.username,
                                      lambda book: book.saved(kept, clean_text(text), replacing))
        replaced = replacing is not None and replacing.casefold() == kept.casefold()
        gr.Info(f"Replaced the text of “{kept}”." if replaced else f"Saved “{kept}”: pick it when a chat starts.")
        return {**self._shown(book, value=kept), self.view.name: ""}

    def delete(self, selected: object, page: object, request: gr.Request) -> object:
        chosen = _selected(selected)
        if chosen is None:
            gr.Info("Select the saved prompt to delete in the list first.")
            return gr.skip()
        with _refused("Not deleted"):
            book = self.keeper.change(page, request.username, lambda book: book.without(chosen))
        gr.Info(f"Deleted “{chosen}”.")
        return self._shown(book, value=NONE_CHOICE)

    def set_default(self, selected: object, use: object, page: object, request: gr.Request) -> object:
        chosen = _selected(selected)
        if chosen is None:
            return gr.skip()

        def edit(book: PromptBook) -> PromptBook:
            if use is True:
                return book.with_default(chosen)
            is_default = book.default is not None and book.default.casefold() == chosen.casefold()
            return book.with_default(None) if is_default else book

        with _refused("Not changed"):
            book = self.keeper.change(page, request.username, edit)
        gr.Info(f"New chats start with “{book.default}”." if book.default
                else "New chats start with the system prompt box as it is.")
        return {self.view.book: book.record(), self.view.default: book.default is not None}


def wire_saved_prompts(view: PromptsView, prompts: SavedPromptsController, slots: Slots, library: gr.State,
                       system_prompt: gr.Textbox, new_chat: gr.Button, page: gr.Blocks, quick: dict[str, Any]) -> None:
    """Its events, and New chat's (which starts with the default prompt). Each is named `prompts_*` in the API:
    Gradio names an event after its function, first come first named, and the chat's /load and /delete stay the
    chat's."""
    read: dict[str, Any] = {"js": READ_JS} if prompts.keeper.in_browser else {}
    instant: dict[str, Any] = {"queue": False, "show_progress": "hidden"}
    # The person's prompts when the page loads, and again as the picker opens (another tab or device may have
    # saved one since)
    for opened, name in ((page.load, "prompts_load"), (view.pick.focus, "prompts_reload")):
        opened(prompts.load, [view.book], [view.book, view.pick], api_name=name, **read, **instant)
    if prompts.keeper.in_browser:
        view.book.change(None, [view.book], None, js=WRITE_JS)
    for changed in (view.book.change, system_prompt.change):  # page-side only: no call to the server
        changed(None, [system_prompt, view.book], [view.pick, view.default], js=MATCH_JS)
    view.pick.change(None, [view.pick, view.book], [view.default], js=DEFAULT_JS)
    view.pick.select(inputs=[library, view.pick, view.book], **slots.keyed(prompts.pick, SLOTS), preprocess=False,
                     api_name="prompts_pick", **read, **quick)
    new_chat.click(inputs=[library, system_prompt, view.book], **slots.keyed(prompts.new_chat, SLOTS), **read,
                   **quick)
    gr.on([view.save.click, view.name.submit], prompts.save, [view.name, system_prompt, view.pick, view.book],
          [view.book, view.pick, view.name], api_name="prompts_save", **read, **quick)
    view.delete.click(prompts.delete, [view.pick, view.book], [view.book, view.pick], api_name="prompts_delete",
                      **read, **quick)
    view.default.input(prompts.set_default, [view.pick, view.default, view.book], [view.book, view.default],
                       api_name="prompts_default", **read, **quick)
