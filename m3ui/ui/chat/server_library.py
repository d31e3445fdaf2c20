"""The Chat tab's library kept on the server (m3ui.accounts.ServerChats) for a signed-in person, instead of the
browser's storage.

The person is always the request's login (Gradio's `request.username`, m3ui.ui.gradio_contacts.event_context), never a
value the page sends. The page's ChatLibrary works as in the browser: each change comes out of `outbox()` as a
record with the hash of the version it was made from ("base"). A record is written over the stored chat only when
that chat is still the version the page saw; otherwise (another tab or device saved meanwhile) ServerChats keeps
it as a branch chat, and the page is shown the library as the server holds it, branch included: nothing is lost.
"""

from __future__ import annotations

import gradio as gr

from m3ui.accounts import AccountError
from m3ui.accounts.server_chats import ServerChats
from m3ui.conversation.library import ChatLibrary, SavedChat
from m3ui.ui.gradio_contacts.event_context import event_request

SIGNED_OUT = "Your chats are kept on the server for signed-in accounts: sign in again."
STALE = -1  # a base revision no stored chat has: the save is kept as a branch


class ServerLibrary:
    def __init__(self, chats: ServerChats) -> None:
        self.chats = chats

    @staticmethod
    def user() -> str:
        """The signed-in person of the event being handled."""
        name = getattr(event_request(), "username", None)
        if not name:
            raise gr.Error(SIGNED_OUT, title="Not signed in")
        return str(name)

    def records(self, user: str) -> list[dict[str, object]]:
        """The person's chats as stored (records with their hash), newest first."""
        return list(reversed(self.chats.export(user)))

    def load(self) -> ChatLibrary:
        try:
            return ChatLibrary.from_records(self.records(self.user()))
        except AccountError as exc:
            raise gr.Error(str(exc), title="Chats not loaded") from None

    def saved(self, library: ChatLibrary, writes: list[dict[str, object]], answer: bool = False) -> ChatLibrary:
        """`library` once its `writes` (ChatLibrary.outbox) are stored; when one met a newer version, the library
        as the server holds it (the branch made active in place of the chat it came from). `answer`: the writes
        save an answer (as it streams, or once it ended), which is kept even if the account was disabled since it
        began."""
        if not writes:
            return library
        user = self.user()
        if answer:
            with self.chats.answer_ending(user):
                return self.saved(library, writes)
        chats = {chat.id: chat for chat in library.chats}
        moved: dict[str, str] = {}
        merge = False
        try:
            for write in writes:
                merge |= self._write(user, write, chats.get(str(write["id"])), moved)
            return library.synced(self.records(user), moved) if merge else library
        except AccountError as exc:
            raise gr.Error(str(exc), title="Not saved") from None

    def _write(self, user: str, write: dict[str, object], chat: SavedChat | None, moved: dict[str, str]) -> bool:
        """Store one outbox record (`chat`: the chat it was made from); whether the page must be shown the
        server's library again. Versions are compared by the hash chat_record gives, stored in each record."""
        chat_id, base = str(write["id"]), write.get("base")
        current = self.chats.version(user, chat_id)
        if write.get("deleted"):
            if current is None:
                return False
            # changed elsewhere since this page saw it (before now, or in between): kept
            return current[1] != base or not self.chats.delete(user, chat_id, current[0])
        if chat is None or (current is not None and current[1] == write["hash"]):
            return False  # nothing to store, or already stored (another tab wrote the same)
        revision = 0 if current is None else current[0] if current[1] == base else STALE
        stored = self.chats.save(user, chat, revision)
        if stored.branched_from is not None:
            moved[chat_id] = stored.chat.id
            return True
        return False
