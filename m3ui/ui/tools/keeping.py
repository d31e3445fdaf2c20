"""Where the Tools tab keeps its tool chat, so that it comes back on reload and exports like a Chat tab chat.

Without accounts: in the browser's storage, one tool chat per browser, with the name of the person it is for when
there are logins (assets/js/tools.js), so that another person signing in on that browser does not get it back.

With accounts: on the server, among the person's saved chats (m3ui.accounts.server_chats, under TOOL_CHAT_ID), as
the Chat tab keeps ordinary chats: it follows the person to any device, is part of their export and of their
delete-my-data, and no other account can read it. The person is always the request's login, never a value the
page sends. A save made from a version that is no longer the stored one (another tab or device saved the tool
chat meanwhile) is kept as a branch chat, which the page carries on with: nothing is lost.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Protocol

import gradio as gr

from m3ui.accounts import AccountError
from m3ui.accounts.server_chats import ServerChats
from m3ui.conversation.library import SavedChat, chat_from_record, chat_record, new_chat
from m3ui.ui.chat.server_library import SIGNED_OUT, STALE

TOOL_CHAT_ID = "tools"  # the person's tool chat among their saved chats (new_chat's ids are hex: never this one)


def new_tool_chat() -> SavedChat:
    return replace(new_chat(), id=TOOL_CHAT_ID)


@dataclass(frozen=True)
class Kept:
    chat: SavedChat  # the chat as kept (a branch has an id of its own)
    saved: object  # the value for the page's `saved` component: the browser's record, or gr.skip() on the server


class ToolChatKeeper(Protocol):
    in_browser: bool  # whether the page's script reads and writes the chat (the `saved` component)

    def restored(self, saved: object, user: str | None) -> SavedChat | None:
        """The kept tool chat of `user` (None: without logins) when the page opens; `saved`: what the browser
        sent (untrusted); None: nothing kept."""
        ...

    def kept(self, before: SavedChat, chat: SavedChat, user: str | None, answer: bool = False) -> Kept:
        """Keep `chat`, made from `before` (the version the page showed). `answer`: it holds an answer that
        ended, kept even if the account was disabled while it streamed."""
        ...

    def cleared(self, before: SavedChat, user: str | None) -> Kept:
        """A new empty tool chat in place of `before`."""
        ...


class BrowserKeeper:
    in_browser = True

    def restored(self, saved: object, user: str | None) -> SavedChat | None:
        if not isinstance(saved, dict) or saved.get("user") != (user or ""):
            return None
        return chat_from_record(saved.get("chat"))

    def kept(self, before: SavedChat, chat: SavedChat, user: str | None, answer: bool = False) -> Kept:
        return Kept(chat, {"user": user or "", "chat": chat_record(chat)})

    def cleared(self, before: SavedChat, user: str | None) -> Kept:
        return self.kept(before, new_tool_chat(), user)


class ServerKeeper:
    in_browser = False

    def __init__(self, chats: ServerChats) -> None:
        self.chats = chats

    def restored(self, saved: object, user: str | None) -> SavedChat | None:
        try:
            stored = self.chats.load(_signed_in(user), TOOL_CHAT_ID)
        except AccountError as exc:
            raise gr.Error(str(exc), title="Tool chat not loaded") from None
        return stored.chat if stored is not None else None

    def kept(self, before: SavedChat, chat: SavedChat, user: str | None, answer: bool = False) -> Kept:
        name = _signed_in(user)
        try:
            if answer:
                with self.chats.answer_ending(name):
                    return Kept(self._stored(name, before, chat), gr.skip())
            return Kept(self._stored(name, before, chat), gr.skip())
        except AccountError as exc:
            raise gr.Error(str(exc), title="Tool chat not saved") from None

    def cleared(self, before: SavedChat, user: str | None) -> Kept:
        """The stored chat is deleted while it is still the version the page showed (a newer one is kept)."""
        name = _signed_in(user)
        try:
            current = self.chats.version(name, before.id)
            if current is not None and current[1] == _hash(before):
                self.chats.delete(name, before.id, current[0])
        except AccountError as exc:
            raise gr.Error(str(exc), title="Tool chat not cleared") from None
        return Kept(new_tool_chat(), gr.skip())

    def _stored(self, user: str, before: SavedChat, chat: SavedChat) -> SavedChat:
        current = self.chats.version(user, chat.id)
        if current is not None and current[1] == _hash(chat):
            return chat  # already stored (e.g. an answer that changed nothing)
        revision = 0 if current is None else current[0] if current[1] == _hash(before) else STALE
        return self.chats.save(user, chat, revision).chat


def _hash(chat: SavedChat) -> str:
    return str(chat_record(chat)["hash"])


def _signed_in(user: str | None) -> str:
    if not user:
        raise gr.Error(SIGNED_OUT, title="Not signed in")
    return user
