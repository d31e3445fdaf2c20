"""An account disabled while its answer streams (docs/ACCOUNTS.md: an answer already streaming is not cut off): the
answer ends as it would have, with no internal message, and it is saved into the person's chats on the server, as
the question was. Nothing else is written for the disabled account: its next action is refused as signed out."""

from __future__ import annotations

import json

import gradio as gr
import pytest
from gradio.context import LocalContext

from m3ui.accounts import AccountStore
from m3ui.accounts.server_chats import ServerChats
from m3ui.chat_session import ChatRunner
from m3ui.client import EndpointConfig
from m3ui.conversation.library import ChatLibrary
from m3ui.ui.chat.controller import ChatController
from m3ui.ui.chat.following import LIVE_SLOTS
from m3ui.ui.chat.server_library import ServerLibrary
from tests.sse_replay import ReplayServer, answer_reply

SETTINGS = ("disabled", 0.6, 0.95, 4096, 60, False, "", "")
ANSWER = "Tides follow the moon. " * 30


def as_bob() -> gr.Request:
    request = gr.Request(username="bob", session_hash="bobs-page")
    LocalContext.request.set(request)
    return request


def test_an_account_disabled_mid_answer_keeps_the_answer_saved_and_sees_no_internal_message(tmp_path):
    store = AccountStore.open(tmp_path / "data")
    store.add("bob", "bobs-password")
    with ReplayServer([answer_reply(ANSWER, delay_s=0.01)]) as server:
        endpoint = EndpointConfig(base_url=server.base_url)
        chat = ChatController(ChatRunner(lambda: endpoint, lambda: "ready"), ServerLibrary(ServerChats(store)))
        as_bob()
        library = chat.load(None)[0]
        assert isinstance(library, ChatLibrary)
        frames = []
        for values in chat.send("How do tides work?", library, *SETTINGS, as_bob()):
            frames.append(dict(zip(LIVE_SLOTS, values, strict=False)))
            if len(frames) == 3:
                store.set_enabled("bob", False)  # the admin disables bob while his answer streams
    ended = next(frame for frame in reversed(frames) if isinstance(frame.get("library"), ChatLibrary))
    saved = ended["library"].active
    shown = json.dumps([str(getattr(m, "content", m)) for m in ended["chatbot"]]) if ended.get("chatbot") else ""
    assert saved.conversation.turns[-1].content == ANSWER
    assert not [note for note in saved.notes if note.kind == "error"], saved.notes
    assert "internal error" not in shown and "signed-in accounts only" not in shown
    records = [json.loads(row["record"]) for row in store.db.query("SELECT record FROM chats")]
    assert len(records) == 1 and ANSWER in json.dumps(records[0]), "the answer is saved with its question"
    with pytest.raises(gr.Error, match="sign in again|signed-in accounts"):
        chat.load(None)  # anything bob's pages do next is refused
