"""A question's engine request sent at the click (m3ui.live.early_ask -> ChatController.send_early), against a real
HTTP server: the answer takes it when it asks for the very same request (one request reaches the engine, timed from
when it went out), and cancels it otherwise (the engine sees the hang-up and the answer asks again); one nobody
takes is cancelled; a page, form or person it was not sent for never gets it. With the page's channel open, the
question goes first on it and Gradio's first frame waits for the answer's first text."""

from __future__ import annotations

import gc
import threading
import time

import httpx
import pytest

from m3ui.chat_session import ChatRunner
from m3ui.chat_session.early_starts import EarlyStarts
from m3ui.client import ChatClient, EndpointConfig, GenerationSettings, early_request
from m3ui.client.early_request import EarlyRequest
from m3ui.client.events import ContentDelta, Finished
from m3ui.conversation.library import ChatLibrary
from m3ui.ui.chat.controller import FORM, ChatController
from tests.sse_replay import ReplayServer, SseReply, answer_reply, chunk
from tests.test_ui_chat_handlers import answer, request

PAGE = "pageTicket-0123456789abcdef"
FORM_VALUES = ("disabled", 0.6, 0.95, 4096, 60, False, "Be brief.", False)
LIBRARY = "library"


def page_form(text: str, **changes: object) -> dict[str, object]:
    return {"text": text, **dict(zip(FORM, FORM_VALUES, strict=True)), **changes}


def opened_page(chat: ChatController) -> ChatLibrary:
    """The library of a page that loaded with its live ticket (what chat.load hands the page's State)."""
    library = chat.load({}, None, PAGE)[LIBRARY]
    assert isinstance(library, ChatLibrary) and library.page == PAGE
    return library


def wait_for(condition, timeout_s: float = 5.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def controller(server: ReplayServer) -> ChatController:
    endpoint = EndpointConfig(base_url=server.base_url)
    return ChatController(ChatRunner(lambda: endpoint, lambda: "ready"))


def test_the_answer_takes_the_request_sent_at_the_click_and_the_engine_gets_it_once():
    with ReplayServer([answer_reply("Early bird.", delay_s=0.01)]) as server:
        chat = controller(server)
        library = opened_page(chat)
        assert chat.send_early(PAGE, page_form("  Hello?  "), None)
        wait_for(lambda: len(server.requests) == 1)  # out before the answer's handler ran
        updates = answer(chat, chat.send("Hello?", library, *FORM_VALUES, PAGE, request()))
    assert len(server.requests) == 1
    saved = updates[-1][LIBRARY].active
    assert [turn.content for turn in saved.conversation.turns] == ["Hello?", "Early bird."]
    assert server.requests[0]["messages"] == [{"role": "system", "content": "Be brief."},
                                              {"role": "user", "content": "Hello?"}]


def test_a_request_sent_early_for_something_else_is_cancelled_and_the_answer_asks_its_own():
    slow = SseReply((chunk(content="wrong"),), hold_open_s=10)
    with ReplayServer([slow, answer_reply("Right one.")]) as server:
        chat = controller(server)
        library = opened_page(chat)
        assert chat.send_early(PAGE, page_form("Hello?", system_prompt="Another prompt"), None)
        wait_for(lambda: len(server.requests) == 1)
        updates = answer(chat, chat.send("Hello?", library, *FORM_VALUES, PAGE, request()))
        assert server.client_disconnected.wait(5), "the engine must see the early request dropped"
    assert len(server.requests) == 2
    # first asked to abort by its request id; this server has no /abort_request (404), so the connection is closed
    assert [a["rid"] for a in server.aborts] == [server.requests[0]["rid"]] and "rid" not in server.requests[1]
    assert server.requests[1]["messages"][0] == {"role": "system", "content": "Be brief."}
    assert updates[-1][LIBRARY].active.conversation.turns[-1].content == "Right one."


def test_an_early_request_nobody_reads_is_cancelled_in_time_taken_or_not():
    for taken in (False, True):  # (taken: its answer was stopped before its stream opened)
        with ReplayServer([SseReply((chunk(content="never read"),), hold_open_s=10)]) as server:
            client = ChatClient(EndpointConfig(base_url=server.base_url))
            messages = [{"role": "user", "content": "hi"}]
            early = EarlyRequest(client, {}, client._opener(client._kwargs(messages, GenerationSettings(), (), "auto")),
                                 time.monotonic(), expires_s=0.3)
            opens = early.take() if taken else None
            assert server.client_disconnected.wait(5), taken
        assert early.state == "cancelled" and early.take() is None
        if opens is not None:
            with pytest.raises(httpx.ReadError, match="cancelled"):
                opens()


def test_the_stream_of_a_taken_request_is_timed_from_when_it_went_out():
    with ReplayServer([answer_reply("Timed.", delay_s=0.01)]) as server:
        client = ChatClient(EndpointConfig(base_url=server.base_url))
        messages = [{"role": "user", "content": "hi"}]
        early = client.send_early(messages, GenerationSettings())
        time.sleep(0.4)  # the page's click came this long before the answer's handler
        events = list(client.stream(messages, GenerationSettings(), early=early))
    assert len(server.requests) == 1 and early.state == "used"
    assert "".join(e.text for e in events if isinstance(e, ContentDelta)) == "Timed."
    finished = events[-1]
    assert isinstance(finished, Finished) and finished.stats.total_s >= 0.4


def test_nothing_is_sent_early_for_a_page_form_or_engine_it_cannot_be_for():
    with ReplayServer([]) as server:
        chat = controller(server)
        library = opened_page(chat)
        assert not chat.send_early("unknownTicket-0123456789", page_form("Hello?"), None)
        assert not chat.send_early(PAGE, page_form("   "), None)
        assert not chat.send_early(PAGE, page_form(["not", "text"]), None)  # type: ignore[arg-type]
        assert not chat.send_early(PAGE, page_form("Hello?", thinking_mode="loud"), None)
        assert not chat.send_early(PAGE, page_form("Hello?", keep_reasoning="yes"), None)
        assert not chat.send_early(PAGE, {k: v for k, v in page_form("Hello?").items() if k != "top_p"}, None)
        not_ready = ChatController(ChatRunner(lambda: None, lambda: "starting"))
        opened = not_ready.load({}, None, PAGE)[LIBRARY]
        assert opened.page == PAGE and not not_ready.send_early(PAGE, page_form("Hello?"), None)
        time.sleep(0.2)
        assert server.requests == []
        # a malformed ticket never names a page
        assert chat.load({}, None, "../../etc")[LIBRARY].page == ""
        assert chat.send_early(PAGE, page_form("Hello?"), None) and library.page == PAGE  # (the page itself can)
        chat._runner.early.take(PAGE, None, "Hello?").cancel()


def test_the_chats_of_a_page_that_is_gone_are_not_kept():
    chat = controller(ReplayServer([]))
    library = opened_page(chat)
    assert chat._pages.get(PAGE) is library
    del library  # Gradio dropped the page's session (its State held the library)
    gc.collect()
    assert chat._pages.get(PAGE) is None and len(chat._pages) == 0


def test_an_early_request_goes_only_to_the_answer_of_the_person_it_was_sent_for():
    with ReplayServer([SseReply((chunk(content="alice's"),), hold_open_s=10)]) as server:
        client = ChatClient(EndpointConfig(base_url=server.base_url))
        starts = EarlyStarts()
        early = client.send_early([{"role": "user", "content": "hi"}], GenerationSettings())
        starts.put(PAGE, "alice", "hi", early)
        assert starts.take(PAGE, "mallory", "hi") is None
        assert early.state == "cancelled" and server.client_disconnected.wait(5)
        assert starts.take(PAGE, "alice", "hi") is None  # gone: taken once, by whoever came first


def test_a_newer_early_request_of_a_page_cancels_its_older_one_and_the_pending_ones_are_bounded():
    with ReplayServer([]) as server:
        client = ChatClient(EndpointConfig(base_url=server.base_url))
        starts = EarlyStarts(limit=2)
        sent = [client.send_early([{"role": "user", "content": str(i)}], GenerationSettings()) for i in range(4)]
        starts.put("page-a", None, str(0), sent[0])
        starts.put("page-a", None, str(1), sent[1])
        assert sent[0].state == "cancelled" and len(starts) == 1
        starts.put("page-b", None, str(2), sent[2])
        starts.put("page-c", None, str(3), sent[3])
        assert sent[1].state == "cancelled" and len(starts) == 2
        assert starts.take("page-c", None, "3") is sent[3]
        for early in sent:
            early.cancel()


def test_a_request_that_comes_after_its_answer_started_without_it_is_cancelled_not_run():
    with ReplayServer([answer_reply("Asked at once."), SseReply((chunk(content="late"),), hold_open_s=10)]) as server:
        chat = controller(server)
        library = opened_page(chat)
        updates = answer(chat, chat.send("Hello?", library, *FORM_VALUES, PAGE, request()))  # the ask is held up
        assert updates[-1][LIBRARY].active.conversation.turns[-1].content == "Asked at once."
        assert not chat.send_early(PAGE, page_form("Hello?"), None)  # ... and comes now: not sent
        assert len(server.requests) == 1 and len(chat._runner.early) == 0
        late = ChatClient(EndpointConfig(base_url=server.base_url)).send_early([{"role": "user", "content": "x"}],
                                                                               GenerationSettings())
        chat._runner.early.take(PAGE, None, "Hello?")  # an answer again without its early request ...
        chat._runner.early.put(PAGE, None, "Hello?", late)  # ... which was on its way meanwhile: cancelled
        assert server.client_disconnected.wait(5), "the late request must not run on"
        assert len(chat._runner.early) == 0
        assert chat.send_early(PAGE, page_form("Next question"), None)  # the page's next question goes early
        assert len(chat._runner.early) == 1
        chat._runner.early.take(PAGE, None, "Next question").cancel()


def test_a_refused_answer_cancels_the_request_sent_for_it():
    with ReplayServer([SseReply((chunk(content="x"),), hold_open_s=10)]) as server:
        chat = controller(server)
        library = opened_page(chat)
        chat._runner.runs.begin("page-1", object())  # type: ignore[arg-type]  # an answer streams in this page
        assert chat.send_early(PAGE, page_form("Hello?"), None)
        wait_for(lambda: len(server.requests) == 1)
        list(chat.send("Hello?", library, *FORM_VALUES, PAGE, request()))  # refused: SessionBusy
        assert server.client_disconnected.wait(5)



class RecordingPage:
    """A page whose live channel is open: what the answer showed on it, in order with the answer's Gradio frames."""

    def __init__(self, seen: list) -> None:
        self.seen = seen

    def answer(self, ticket: object, request: object) -> RecordingPage:
        return self

    def show(self, start: int, messages: list) -> bool:
        self.seen.append(("channel", start, [str(m.content) for m in messages]))
        return True

    def close(self) -> None:
        pass


def test_with_the_channel_open_the_question_goes_first_on_it_and_gradios_first_frame_waits_for_the_first_text():
    seen: list = []
    with ReplayServer([answer_reply("Soon shown.", delay_s=0.05)]) as server:
        endpoint = EndpointConfig(base_url=server.base_url)
        chat = ChatController(ChatRunner(lambda: endpoint, lambda: "ready"), live=RecordingPage(seen))  # type: ignore[arg-type]
        for frame in chat.send("Hello?", opened_page(chat), *FORM_VALUES, PAGE, request()):
            seen.append(("gradio", frame))
    assert seen[0][0] == "channel" and seen[0][1] == 0 and seen[0][2][0] == "Hello?"  # the question, at once
    first_gradio = next(i for i, item in enumerate(seen) if item[0] == "gradio")
    assert any("Soon" in text for item in seen[:first_gradio] for text in item[2]), seen[:first_gradio]
    outbox = seen[first_gradio][1]["outbox"]
    assert ChatLibrary.from_records(outbox).active.conversation.turns[0].content == "Hello?"  # still saved first


def test_past_the_wind_down_limit_a_cancelled_request_is_closed_at_once(monkeypatch):
    """Each cancelled request is wound down (aborted on the engine, its usage read) in a thread of its own, but only
    so many at once: past that, one is closed at once and reports nothing (its bound is charged)."""
    monkeypatch.setattr(early_request, "_winding_down", threading.BoundedSemaphore(1))
    release, reported = threading.Event(), []

    def held(response: object) -> tuple[int, int]:
        release.wait(10)  # an engine slow to end it
        return (7, 3)

    with ReplayServer([SseReply((chunk(content="never read"),), hold_open_s=10) for _ in range(2)]) as server:
        client = ChatClient(EndpointConfig(base_url=server.base_url))
        opener = client._opener(client._kwargs([{"role": "user", "content": "hi"}], GenerationSettings(), (), "auto"))
        first, second = (EarlyRequest(client, {}, opener, time.monotonic(), wind_down=held) for _ in range(2))
        for early in (first, second):
            early.on_cancel(reported.append)
        wait_for(lambda: len(server.requests) == 2)
        first.cancel()
        second.cancel()
        wait_for(lambda: reported == [None])  # the second, closed at once while the first is still winding down
        assert server.client_disconnected.wait(5)
        release.set()
        wait_for(lambda: reported == [None, (7, 3)])
