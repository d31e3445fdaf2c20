"""Where a streaming answer is saved, and when.

- It is saved as it grows, at most once a second, so an app killed mid-answer (SIGKILL: no code runs after) keeps
  what had arrived, with a note that the answer did not end there; the settled answer replaces it. Both
  libraries: the browser's (a frame hands the record to the page's storage) and the server's (a signed-in person).
- An account disabled while its answer streams (docs/ACCOUNTS.md: an answer already streaming is not cut off): the
  answer ends as it would have, with no internal message, and is saved with its question in the server's chats.
  Nothing else is written for the disabled account: its next action is refused as signed out.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import gradio as gr
import pytest
from gradio.context import LocalContext

from m3ui.accounts import AccountStore
from m3ui.accounts.server_chats import ServerChats
from m3ui.chat_session import ChatRunner
from m3ui.chat_session.live_answer import IN_FLIGHT_TEXT
from m3ui.client import EndpointConfig
from m3ui.conversation.library import ChatLibrary
from m3ui.ui.chat.controller import ChatController
from m3ui.ui.chat.server_library import ServerLibrary
from tests.sse_replay import ReplayServer, answer_reply

SETTINGS = ("disabled", 0.6, 0.95, 4096, 60, False, "", False, "")
QUESTION = "How do tides work?"
ANSWER = "Tides follow the moon. " * 60  # 345 chunks of 4 characters, 10 ms apart: ~3.5 s


def request(user: str | None = None) -> gr.Request:
    made = gr.Request(username=user, session_hash="page-1")
    LocalContext.request.set(made)
    return made


def records_of(frame: dict[str, object]) -> list[dict[str, object]]:
    outbox = frame.get("outbox")
    return outbox if isinstance(outbox, list) else []


@contextmanager
def answering(server_chats: ServerChats | None = None) -> Iterator[ChatController]:
    """A chat whose engine streams ANSWER; with `server_chats`, bob's library is kept there."""
    with ReplayServer([answer_reply(ANSWER, delay_s=0.01)]) as server:
        endpoint = EndpointConfig(base_url=server.base_url)
        library = ServerLibrary(server_chats) if server_chats is not None else None
        yield ChatController(ChatRunner(lambda: endpoint, lambda: "ready"), library)


def bob(tmp_path: Path) -> tuple[AccountStore, ServerChats]:
    store = AccountStore.open(tmp_path / "data")
    store.add("bob", "bobs-password")
    return store, ServerChats(store)


def stored_records(store: AccountStore) -> list[dict[str, object]]:
    return [json.loads(row["record"]) for row in store.db.query("SELECT record FROM chats")]


def test_a_streaming_answer_reaches_the_browsers_storage_about_once_a_second_then_settles():
    with answering() as chat:
        started = time.monotonic()
        frames = list(chat.send(QUESTION, ChatLibrary.fresh(), *SETTINGS, request()))
        took = time.monotonic() - started
    saves = [ChatLibrary.from_records(records_of(f)).active for f in frames if records_of(f)]
    question, *partials, final = saves
    assert question.conversation.turns[-1].content == QUESTION
    assert partials and len(partials) <= took + 1, f"{len(partials)} partial saves in {took:.1f} s"
    texts = [p.conversation.turns[-1].content for p in partials]
    assert all(ANSWER.startswith(t) and 0 < len(t) < len(ANSWER) for t in texts) and texts == sorted(texts, key=len)
    assert all(p.notes[-1].text == IN_FLIGHT_TEXT for p in partials)
    assert final.conversation.turns[-1].content == ANSWER and not final.notes


def test_an_app_killed_mid_answer_keeps_the_partial_answer_in_the_servers_chats(tmp_path):
    store, server_chats = bob(tmp_path)
    with answering(server_chats) as chat:
        request("bob")
        answer = chat.send(QUESTION, chat.load(None)["library"], *SETTINGS, request("bob"))
        started = time.monotonic()
        for _ in answer:  # the app is killed 1.5 s into the answer: no more of its code runs
            if time.monotonic() - started > 1.5:
                break
        records = stored_records(store)
        answer.close()
    [record] = records
    saved = ChatLibrary.from_records([record]).active
    kept = saved.conversation.turns[-1].content
    assert saved.conversation.turns[0].content == QUESTION
    assert kept and ANSWER.startswith(kept) and len(kept) < len(ANSWER)
    assert saved.notes[-1].text == IN_FLIGHT_TEXT


def test_an_account_disabled_mid_answer_keeps_the_answer_saved_and_sees_no_internal_message(tmp_path):
    store, server_chats = bob(tmp_path)
    with answering(server_chats) as chat:
        request("bob")
        frames = []
        for values in chat.send(QUESTION, chat.load(None)["library"], *SETTINGS, request("bob")):
            frames.append(values)
            if len(frames) == 3:
                store.set_enabled("bob", False)  # the admin disables bob while his answer streams
        ended = frames[-1]
        saved = ended["library"].active
        shown = json.dumps([str(getattr(m, "content", m)) for m in ended["chatbot"]])
        assert saved.conversation.turns[-1].content == ANSWER
        assert not [note for note in saved.notes if note.kind == "error"], saved.notes
        assert "internal error" not in shown and "signed-in accounts only" not in shown
        [record] = stored_records(store)
        assert ChatLibrary.from_records([record]).active.conversation == saved.conversation, "saved with its question"
        with pytest.raises(gr.Error, match="signed-in accounts"):
            chat.load(None)  # anything bob's pages do next is refused
