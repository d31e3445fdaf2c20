"""The Chat tab's handlers, called as Gradio calls them, against a real HTTP server: what each update changes,
settings refused before sending, stop, regenerate, the engine not being ready, and no listener limit of one."""

from __future__ import annotations

import threading

import gradio as gr
import pytest

from m3ui.chat_session import ChatRunner
from m3ui.client import EndpointConfig
from m3ui.conversation.library import ChatLibrary
from m3ui.ui.chat.controller import ChatController
from m3ui.ui.chat.following import LIVE_SLOTS
from m3ui.ui.chat.view_slots import SLOTS
from tests.sse_replay import ReplayServer, SseReply, answer_reply, chunk

# thinking, temperature, top-p, max tokens, stall limit, keep reasoning, system prompt, tools
SETTINGS = ("enabled", 0.6, 0.95, 4096, 60, False, "Be brief.", False, "")  # and no live channel (an API client)
SKIP = gr.skip()
LIBRARY, OUTBOX, CHATBOT, MESSAGE, SEND, STOP = "library", "outbox", "chatbot", "message", "send", "stop"


def controller(server: ReplayServer | None) -> ChatController:
    endpoint = EndpointConfig(base_url=server.base_url) if server else None
    return ChatController(ChatRunner(lambda: endpoint, lambda: "Simulated engine starting (10%)"))


def request(session: str = "page-1") -> gr.Request:
    return gr.Request(session_hash=session)


def whole(values: dict[str, object]) -> dict[str, object]:
    """A handler's values as the whole view: the slots it leaves out skipped (Gradio leaves them as they are)."""
    return {name: values.get(name, SKIP) for name in SLOTS}


def answer(chat: ChatController, stream, finished: dict | None = None) -> list[dict[str, object]]:
    """What the page gets: an answer handler's updates (as values of the whole view), then what it shows once
    `finish`, chained after it in chat_view, ran: the value finish sets, else the last one set before. `finished`
    receives finish's own values."""
    updates, following = [], None
    for values in stream:
        assert set(values) <= {*LIVE_SLOTS, "following"}, f"an answer's frame sets {set(values)}"
        updates.append(whole(values))
        following = values.get("following", following)
    done = whole(chat.finish(following, request()))
    if finished is not None:
        finished.update(done)
    last = {name: next((u[name] for u in reversed(updates) if u[name] != SKIP), SKIP) for name in SLOTS}
    return [*updates, {name: value if value != SKIP else last[name] for name, value in done.items()}]


def test_send_streams_frames_that_touch_only_the_chatbot_then_saves_the_answer():
    with ReplayServer([answer_reply("The answer is 42." * 20, reasoning="six sevens", delay_s=0.003)]) as server:
        chat, finished = controller(server), {}
        updates = answer(chat, chat.send("What is 6*7?", ChatLibrary.fresh(), *SETTINGS, request()), finished)
        body = server.requests[0]
    started, *frames, final = updates
    # the page itself moved the question out of the box and turned Send into Stop at the click (chat_view.ASK_JS)
    assert started[MESSAGE] == started[SEND] == started[STOP] == SKIP
    saved_question = ChatLibrary.from_records(started[OUTBOX])  # the browser gets the question already
    assert saved_question.active.conversation.turns[0].content == "What is 6*7?"
    assert frames, "the answer must show while it streams"
    ended = frames.pop()  # the answer saved, the page idle
    for frame in frames:  # the storage box is None between its writes: a skip costs Gradio a component per frame
        assert frame[CHATBOT] != SKIP and frame[OUTBOX] is None
        assert all(value == SKIP for name, value in frame.items() if name not in (CHATBOT, OUTBOX))
    assert ended[OUTBOX] != SKIP, "saved by the stream: an API client runs no finish"
    assert ended[SEND] == SKIP and finished[SEND]["visible"] is True, "idle with the whole view, not before"
    assert finished[CHATBOT] == SKIP and finished[OUTBOX] == SKIP, "finish redraws no message and saves nothing again"
    library = final[LIBRARY]
    saved = library.active
    assert saved.conversation.system_prompt == "Be brief." and saved.title == "What is 6*7?"
    assert saved.conversation.turns[-1].content == "The answer is 42." * 20
    assert final[SEND]["visible"] is True and final[STOP]["visible"] is False
    (record,) = final[OUTBOX]  # the answer, written over the question's version
    assert record["base"] == started[OUTBOX][0]["hash"] and record["hash"] == library.stored[saved.id]
    assert ChatLibrary.from_records(final[OUTBOX]).active == saved
    shown = final[CHATBOT]
    assert shown[1].metadata["title"].startswith("Thought for") and shown[1].metadata["status"] == "done"
    assert "TTFT" in shown[2].content
    markdown = controller(None).export(library, "md")
    assert "six sevens" in markdown["text"] and markdown["name"] == "what-is-6-7.md"
    assert body["chat_template_kwargs"] == {"thinking_mode": "enabled"}
    assert body["messages"][0] == {"role": "system", "content": "Be brief."}


def test_invalid_settings_are_refused_before_anything_is_sent_or_cleared():
    with ReplayServer([]) as server:
        handler = controller(server).send("hi", ChatLibrary.fresh(), "enabled", 0.6, 0.0, 4096, 60, False, "",
                                          False, "", request())
        with pytest.raises(gr.Error, match="top_p"):
            next(handler)
        handler = controller(server).send("hi", ChatLibrary.fresh(), "sometimes", 0.6, 0.9, 4096, 60, False, "",
                                          False, "", request())
        with pytest.raises(gr.Error, match="thinking mode"):
            next(handler)
        assert server.requests == []


def test_the_engine_not_ready_keeps_the_message_in_the_chat_with_a_retry_hint():
    chat = controller(None)
    final = answer(chat, chat.send("hello?", ChatLibrary.fresh(), *SETTINGS, request()))[-1]
    question, note = final[CHATBOT]
    assert question.content == "hello?" and "not ready (Simulated engine starting (10%))" in note.content
    assert final[SEND]["visible"] is True and final[STOP]["visible"] is False


def test_regenerate_answers_the_last_question_again():
    with ReplayServer([answer_reply("first"), answer_reply("second")]) as server:
        chat = controller(server)
        library = answer(chat, chat.send("Tell me", ChatLibrary.fresh(), *SETTINGS, request()))[-1][LIBRARY]
        final = answer(chat, chat.regenerate(library, *SETTINGS, request()))[-1]
        assert len(server.requests) == 2 and server.requests[1]["messages"][-1]["content"] == "Tell me"
    turns = final[LIBRARY].active.conversation.turns
    assert [t.content for t in turns] == ["Tell me", "second"]


def test_stop_from_another_request_ends_the_answer_with_the_text_so_far():
    reply = SseReply((chunk(content="", role="assistant"), chunk(content="1, 2, 3")), hold_open_s=20)
    with ReplayServer([reply]) as server:
        chat = controller(server)
        updates = chat.send("count", ChatLibrary.fresh(), *SETTINGS, request())
        for update in updates:
            if update.get(CHATBOT, SKIP) != SKIP and any("1, 2, 3" in str(m.content) for m in update[CHATBOT]):
                break
        threading.Thread(target=chat.stop, args=(request(),)).start()
        final = list(updates)[-1]
        assert server.client_disconnected.wait(5)
    texts = [m.content for m in final[CHATBOT]]
    assert texts[1].startswith("1, 2, 3") and texts[2].startswith("■ **Stopped**")


def test_streaming_listeners_have_no_concurrency_limit_of_one(tmp_path):
    from m3ui.access import AccessPolicy
    from m3ui.services import AppServices
    from m3ui.ui.chat.view import build_chat_tab
    from m3ui.ui.tools.view import build_tools_tab

    services = AppServices.create(tmp_path, AccessPolicy.from_env("127.0.0.1", None))
    try:
        with gr.Blocks() as demo:
            chat_ui = build_chat_tab(services, demo)
            build_tools_tab(services, demo)
    finally:
        services.close()
    streaming = [fn for fn in demo.fns.values() if fn.fn is not None and getattr(fn.fn, "__name__", "") in
                 ("send", "regenerate", "edit", "retry_from", "continue_answer")]
    assert len(streaming) >= 6  # the chat tab's five and the tools tab's
    assert all(fn.concurrency_limit is None for fn in streaming)
    chat_answers = [fn for fn in streaming if "chat" in fn.fn.__module__]
    assert len(chat_answers) == 5 and all(len(fn.outputs) == len(LIVE_SLOTS) + 1 for fn in chat_answers), \
        "an answer's frames carry the live slots alone: Gradio builds a component for each output they skip"
    buttons_or_box = [type(output).__name__ for fn in chat_answers for output in fn.outputs
                      if isinstance(output, gr.Button | gr.Textbox)]
    assert not buttons_or_box, f"the page turns itself busy: no frame has to carry {buttons_or_box}"
    assert chat_ui.stall_seconds.label == "Stall limit (s)"


def test_pages_that_never_loaded_a_library_each_get_their_own():
    chat = controller(None)
    one, two = (answer(chat, chat.send("hi", None, *SETTINGS, request(s)))[-1] for s in ("a", "b"))
    assert one[LIBRARY].active_id != two[LIBRARY].active_id


@pytest.mark.parametrize("keep", [False, True])
def test_earlier_reasoning_goes_back_to_the_model_only_when_asked(keep):
    settings = (*SETTINGS[:5], keep, *SETTINGS[6:])
    with ReplayServer([answer_reply("42", reasoning="six sevens"), answer_reply("ok")]) as server:
        chat = controller(server)
        library = answer(chat, chat.send("6*7?", ChatLibrary.fresh(), *settings, request()))[-1][LIBRARY]
        answer(chat, chat.send("thanks", library, *settings, request()))
        earlier = server.requests[1]["messages"][2]
    assert earlier["role"] == "assistant" and earlier["content"] == "42"
    assert ("reasoning_content" in earlier) is keep


def test_a_chat_id_from_the_browser_is_a_plain_token():
    """The saved chats come from the browser (or any API client): an id that is a path or markup is refused."""
    library = ChatLibrary.fresh()
    library = library.put(library.active.with_conversation(library.active.conversation.ask("hi")))
    writes, _ = library.outbox()
    for bad_id in ("/etc/victim", "../../victim", "<img src=x>"):
        shown = controller(None).load({"records": [{**writes[0], "id": bad_id}]})
        assert shown[LIBRARY].active.id != bad_id


def answered(chat: ChatController, *questions: str) -> ChatLibrary:
    library = ChatLibrary.fresh()
    for question in questions:
        library = answer(chat, chat.send(question, library, *SETTINGS, request()))[-1][LIBRARY]
    return library


@pytest.mark.parametrize("handler", ["send", "regenerate"])
def test_a_handler_with_nothing_to_do_leaves_every_component_as_it_was(handler):
    """Issue 10 #1: an empty Send or a Regenerate on an empty chat used to blank every label of the tab. Only
    Send and Stop are set: back to idle, as the page turned them busy at the click."""
    chat = controller(None)
    updates = answer(chat, chat.send("   ", ChatLibrary.fresh(), *SETTINGS, request()) if handler == "send"
                     else chat.regenerate(ChatLibrary.fresh(), *SETTINGS, request()))
    assert updates and all(value == SKIP for update in updates for name, value in update.items()
                           if name not in (SEND, STOP))
    assert updates[-1][SEND] == {"__type__": "update", "visible": True}
    assert updates[-1][STOP] == {"__type__": "update", "visible": False}


def test_library_actions_leave_send_and_stop_to_the_answer():
    """A search (or a switch, a rename, a sync) done while an answer streams must not make the page look idle:
    the page turned Send into Stop at the click, and only the answer's `finish` turns it back."""
    chat = controller(None)
    library = ChatLibrary.fresh()
    for view in (chat.search(library, "x"), chat.new_chat(library, ""), chat.rename(library, "t"), chat.load(None)):
        assert view[SEND] == view[STOP] == SKIP


def test_a_question_refused_while_an_answer_streams_goes_back_in_the_box_and_the_page_stays_busy():
    reply = SseReply((chunk(content="", role="assistant"), chunk(content="1, 2, 3")), hold_open_s=20)
    with ReplayServer([reply]) as server:
        chat = controller(server)
        running = chat.send("count", ChatLibrary.fresh(), *SETTINGS, request())
        next(running)  # an answer streams in this page
        refused = answer(chat, chat.send("and then?", ChatLibrary.fresh(), *SETTINGS, request()))
        running.close()
        assert server.client_disconnected.wait(5)
    assert refused[-1][MESSAGE] == "and then?"
    assert refused[-1][SEND] == refused[-1][STOP] == SKIP, "the running answer's finish turns the page idle"
    assert all(value == SKIP for name, value in refused[-1].items() if name != MESSAGE)


def test_stall_limit_from_the_form_is_checked_before_sending():
    with ReplayServer([]) as server:
        handler = controller(server).send("hi", ChatLibrary.fresh(), "enabled", 0.6, 0.9, 4096, 0, False, "",
                                          False, "", request())
        with pytest.raises(gr.Error, match="stall_seconds"):
            next(handler)
    assert server.requests == []


def test_editing_an_earlier_question_resends_from_there_and_undo_brings_the_old_answers_back():
    with ReplayServer([answer_reply("A1"), answer_reply("A2"), answer_reply("B1")]) as server:
        chat = controller(server)
        library = answered(chat, "first", "second")
        edit = gr.EditData(None, {"index": 0, "previous_value": "first", "value": "FIRST"})
        final = answer(chat, chat.edit(library, *SETTINGS, edit, request()))[-1]
        assert [m["content"] for m in server.requests[2]["messages"][1:]] == ["FIRST"]
    edited = final[LIBRARY]
    assert [t.content for t in edited.active.conversation.turns] == ["FIRST", "B1"]
    assert final["undo"]["visible"] is True
    restored = chat.undo(edited)[LIBRARY]
    assert [t.content for t in restored.active.conversation.turns] == ["first", "A1", "second", "A2"]


def test_retry_from_a_chosen_question_and_removing_one_exchange():
    with ReplayServer([answer_reply("A1"), answer_reply("A2"), answer_reply("A1 again")]) as server:
        chat = controller(server)
        library = answered(chat, "first", "second")
        shown = chat.show(library)[CHATBOT]
        picked = chat.select(library, gr.SelectData(None, {"index": 1, "value": shown[1].content}))
        turn = picked["selected"]  # a click on the first answer picks the first question
        assert turn == 0 and picked["message_actions"]["visible"] is True
        final = answer(chat, chat.retry_from(library, turn, *SETTINGS, request()))[-1]
    assert [t.content for t in final[LIBRARY].active.conversation.turns] == ["first", "A1 again"]
    removed = chat.delete_exchange(library, 0)[LIBRARY]
    assert [t.content for t in removed.active.conversation.turns] == ["second", "A2"]


def test_a_message_typed_while_an_answer_streams_is_not_wiped_when_it_ends():
    with ReplayServer([answer_reply("done")]) as server:
        chat, finished = controller(server), {}
        updates = answer(chat, chat.send("q", ChatLibrary.fresh(), *SETTINGS, request()), finished)
    assert all(update[MESSAGE] == SKIP for update in updates) and finished[MESSAGE] == SKIP


def test_an_error_inside_a_turn_ends_it_with_a_note_and_the_page_idle():
    chat = controller(None)
    chat._runner.answer = lambda *_: (_ for _ in ()).throw(UnicodeEncodeError("utf-8", "x", 0, 1, "bad"))
    final = answer(chat, chat.send("hi \ud83d there", ChatLibrary.fresh(), *SETTINGS, request()))[-1]
    assert final[SEND]["visible"] is True and final[STOP]["visible"] is False
    assert "internal error" in final[CHATBOT][-1].content
    assert final[LIBRARY].active.conversation.turns[0].content == "hi ? there"


def test_chats_saved_the_old_way_are_written_as_records_once():
    """Before per-chat records, the whole library was one BrowserState value: an upgrade must lose none of it."""
    conversation = {"format": "m3ui.conversation", "version": 1, "system_prompt": "",
                    "turns": [{"role": "user", "content": "old question"}]}
    legacy = {"version": 1, "active": "abc123", "chats": [
        {"id": "abc123", "title": "Old chat", "updated_at": 5.0, "conversation": conversation, "notes": []},
        {"id": "../x", "title": "bad", "conversation": conversation}, "junk"]}
    shown = controller(None).load({"records": [], "migrated": False}, legacy)
    (record,) = shown[OUTBOX]
    assert record["id"] == "abc123" and record["title"] == "Old chat" and record["base"] is None
    assert shown[LIBRARY].active.conversation.turns[0].content == "old question"
    assert controller(None).load({"records": [], "migrated": True}, legacy)[OUTBOX] == SKIP
