"""The Chat tab's handlers, called as Gradio calls them, against a real HTTP server: what each update changes,
settings refused before sending, stop, regenerate, the engine not being ready, and no listener limit of one."""

from __future__ import annotations

import threading
from pathlib import Path

import gradio as gr
import pytest

from m3ui.chat_session import ChatRunner
from m3ui.client import EndpointConfig
from m3ui.conversation_store import ChatLibrary
from m3ui.ui.chat_view import ChatController
from tests.sse_replay import ReplayServer, SseReply, answer_reply, chunk

SETTINGS = ("enabled", 0.6, 0.95, 4096, False, "Be brief.")  # thinking, temperature, top-p, max tokens, keep, system
SKIP = gr.skip()
CHATBOT, MESSAGE, SEND, STOP = 2, 8, 9, 10


def controller(server: ReplayServer | None) -> ChatController:
    endpoint = EndpointConfig(base_url=server.base_url) if server else None
    return ChatController(ChatRunner(lambda: endpoint, lambda: "Simulated engine starting (10%)"))


def request(session: str = "page-1") -> gr.Request:
    return gr.Request(session_hash=session)


def test_send_streams_frames_that_touch_only_the_chatbot_then_saves_the_answer():
    with ReplayServer([answer_reply("The answer is 42." * 20, reasoning="six sevens", delay_s=0.003)]) as server:
        updates = list(controller(server).send("What is 6*7?", ChatLibrary.fresh(), *SETTINGS, request()))
        body = server.requests[0]
    started, *frames, final = updates
    assert started[MESSAGE] == "" and started[SEND]["visible"] is False and started[STOP]["visible"] is True
    saved_question = ChatLibrary.from_state(started[1])  # the browser copy has the question already
    assert saved_question.active.conversation.turns[0].content == "What is 6*7?"
    assert frames, "the answer must show while it streams"
    for frame in frames:
        assert frame[CHATBOT] != SKIP and all(value == SKIP for i, value in enumerate(frame) if i != CHATBOT)
    library = final[0]
    chat = library.active
    assert chat.conversation.system_prompt == "Be brief." and chat.title == "What is 6*7?"
    assert chat.conversation.turns[-1].content == "The answer is 42." * 20
    assert final[SEND]["visible"] is True and final[STOP]["visible"] is False
    assert ChatLibrary.from_state(final[1]) == library
    shown = final[CHATBOT]
    assert shown[1].metadata["title"].startswith("Thought for") and shown[1].metadata["status"] == "done"
    assert "TTFT" in shown[2].content
    markdown, document = (Path(button["value"]) for button in final[6:8])
    assert "six sevens" in markdown.read_text() and document.suffix == ".json"
    assert body["chat_template_kwargs"] == {"thinking_mode": "enabled"}
    assert body["messages"][0] == {"role": "system", "content": "Be brief."}


def test_invalid_settings_are_refused_before_anything_is_sent_or_cleared():
    with ReplayServer([]) as server:
        handler = controller(server).send("hi", ChatLibrary.fresh(), "enabled", 0.6, 0.0, 4096, False, "", request())
        with pytest.raises(gr.Error, match="top_p"):
            next(handler)
        handler = controller(server).send("hi", ChatLibrary.fresh(), "sometimes", 0.6, 0.9, 4096, False, "",
                                          request())
        with pytest.raises(gr.Error, match="thinking mode"):
            next(handler)
        assert server.requests == []


def test_the_engine_not_ready_keeps_the_message_in_the_chat_with_a_retry_hint():
    (final,) = controller(None).send("hello?", ChatLibrary.fresh(), *SETTINGS, request())
    question, note = final[CHATBOT]
    assert question.content == "hello?" and "not ready (Simulated engine starting (10%))" in note.content
    assert final[MESSAGE] == ""


def test_regenerate_answers_the_last_question_again():
    with ReplayServer([answer_reply("first"), answer_reply("second")]) as server:
        chat = controller(server)
        library = list(chat.send("Tell me", ChatLibrary.fresh(), *SETTINGS, request()))[-1][0]
        final = list(chat.regenerate(library, *SETTINGS, request()))[-1]
        assert len(server.requests) == 2 and server.requests[1]["messages"][-1]["content"] == "Tell me"
    turns = final[0].active.conversation.turns
    assert [t.content for t in turns] == ["Tell me", "second"]


def test_stop_from_another_request_ends_the_answer_with_the_text_so_far():
    reply = SseReply((chunk(content="", role="assistant"), chunk(content="1, 2, 3")), hold_open_s=20)
    with ReplayServer([reply]) as server:
        chat = controller(server)
        updates = chat.send("count", ChatLibrary.fresh(), *SETTINGS, request())
        for update in updates:
            if update[CHATBOT] != SKIP and any("1, 2, 3" in str(m.content) for m in update[CHATBOT]):
                break
        threading.Thread(target=chat.stop, args=(request(),)).start()
        final = list(updates)[-1]
        assert server.client_disconnected.wait(5)
    texts = [m.content for m in final[CHATBOT]]
    assert texts[1].startswith("1, 2, 3") and texts[2].startswith("■ **Stopped**")


def test_streaming_listeners_have_no_concurrency_limit_of_one(tmp_path):
    from m3ui.access import AccessPolicy
    from m3ui.services import AppServices
    from m3ui.ui.chat_view import build_chat_tab
    from m3ui.ui.tools_view import build_tools_tab

    services = AppServices.create(tmp_path, AccessPolicy.from_env("127.0.0.1", None))
    try:
        with gr.Blocks() as demo:
            chat_ui = build_chat_tab(services)
            build_tools_tab(services)
    finally:
        services.close()
    streaming = [fn for fn in demo.fns.values() if fn.fn is not None and getattr(fn.fn, "__name__", "") in
                 ("send", "regenerate")]
    assert len(streaming) == 3
    assert all(fn.concurrency_limit is None for fn in streaming)
    assert chat_ui.store.storage_key == "m3ui-chats-v1"


def test_pages_that_never_loaded_a_library_each_get_their_own():
    chat = controller(None)
    first, second = (chat.send("hi", None, *SETTINGS, request(s)) for s in ("a", "b"))
    (one,), (two,) = list(first), list(second)
    assert one[0].active_id != two[0].active_id


@pytest.mark.parametrize("keep", [False, True])
def test_earlier_reasoning_goes_back_to_the_model_only_when_asked(keep):
    settings = (*SETTINGS[:4], keep, SETTINGS[5])
    with ReplayServer([answer_reply("42", reasoning="six sevens"), answer_reply("ok")]) as server:
        chat = controller(server)
        library = list(chat.send("6*7?", ChatLibrary.fresh(), *settings, request()))[-1][0]
        list(chat.send("thanks", library, *settings, request()))
        earlier = server.requests[1]["messages"][2]
    assert earlier["role"] == "assistant" and earlier["content"] == "42"
    assert ("reasoning_content" in earlier) is keep


def test_a_chat_id_from_the_browser_cannot_point_the_export_outside_its_folder(tmp_path):
    """The saved chats come from the browser (or any API client): an id that is a path must not make the
    export write into, or clear, a folder of the server."""
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep.txt").write_text("precious")
    library = ChatLibrary.fresh()
    state = library.put(library.active.with_conversation(library.active.conversation.ask("hi"))).to_state()
    for bad_id in (str(victim), "../../victim"):
        state["chats"][0]["id"] = bad_id
        shown = controller(None).load(state)
        assert shown[0].active.id != bad_id
    assert [p.name for p in victim.iterdir()] == ["keep.txt"]
