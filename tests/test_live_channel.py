"""A page's live channel against the real `python app.py` (m3ui.live): an answer asked for with the page's
ticket streams its frames over the channel, and its Gradio event carries only the first and last; the channel
rebuilds exactly what the Chatbot shows at the end, and closes with the answer. Without a channel (an API client)
the frames come through Gradio as before. The channel refuses what a page would never send."""

from __future__ import annotations

import re

import httpx
import pytest
from gradio_client import Client

from tests.app_process import RunningApp, running_app
from tests.live_reader import LiveReader, page_ticket
from tests.test_browser_chat import engine_counter

QUESTION = "Count to 400"


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    with running_app(tmp_path_factory.mktemp("live"), env={"M3UI_SIM_DECODE_TPS": "300"}) as running:
        running.wait_engine_ready()
        yield running


@pytest.fixture
def client(app):
    gradio = Client(app.url, verbose=False, download_files=False)
    yield gradio
    gradio.close()


def ask(client: Client, ticket: str = "") -> list:
    """Every chatbot value the answer's Gradio event sent."""
    job = client.submit(QUESTION, "disabled", 0.6, 0.95, 4096, 60, False, "", False, ticket, api_name="/send")
    job.result()
    return [outputs[-1] for outputs in job.outputs()]  # (outbox, chatbot): the States stay on the server


def engine_url(app: RunningApp) -> str:
    command = next(app.data_dir.glob("runs/*/command.sh")).read_text()
    port = re.search(r"--port (\d+)", command)
    assert port, command
    return f"http://127.0.0.1:{port.group(1)}"


def texts(messages: list) -> list[str]:
    return [" ".join(part["text"] for part in m["content"]) if isinstance(m["content"], list) else m["content"]
            for m in messages]


def test_an_answer_streams_over_the_page_channel_and_gradio_carries_only_its_ends(app, client):
    ticket = page_ticket()
    channel = LiveReader(app.url, ticket)
    frames = ask(client, ticket)
    channel.join()
    assert channel.ended and channel.events >= 5, channel.events
    # Gradio's frames show the question (and a waiting answer), the answer shown, the last; the once-a-second saves
    # of the growing answer in between leave the chatbot alone (a skip)
    shown = [frame for frame in frames if frame != {"__type__": "update"}]
    assert len(shown) <= 3, frames
    final = texts(frames[-1])
    assert "399, 400." in final[-1]
    assert channel.start == 0 and texts(channel.live) == final  # the page shows the same, whichever came last


def test_without_a_channel_the_answer_streams_through_gradio(client):
    frames = ask(client)
    assert len(frames) >= 5 and "399, 400." in texts(frames[-1])[-1]


def test_a_channel_closed_mid_answer_hands_the_frames_back_to_gradio(app, client):
    ticket = page_ticket()
    channel = LiveReader(app.url, ticket)
    job = client.submit(QUESTION, "disabled", 0.6, 0.95, 4096, 60, False, "", False, ticket, api_name="/send")
    while channel.events < 3:
        job.status()  # (polls; the channel's thread counts frames)
    channel.close()
    job.result()
    frames = [outputs[-1] for outputs in job.outputs()]
    assert len(frames) >= 5 and "399, 400." in texts(frames[-1])[-1]


def test_the_channel_refuses_what_a_page_never_sends(app):
    ticket = page_ticket()
    with httpx.Client(base_url=app.url, trust_env=False, timeout=10) as http:
        assert http.get("/m3ui-live/not a ticket").status_code in (404, 409)
        assert http.get("/m3ui-live/short").status_code == 409
        assert http.post(f"/m3ui-live/{ticket}").status_code in (404, 405)  # (Gradio answers other methods)
        assert http.get(f"/m3ui-live/{ticket}", headers={"Origin": "http://evil.example"}).status_code == 403
        with http.stream("GET", f"/m3ui-live/{ticket}") as first:
            assert first.status_code == 200 and first.headers["content-type"].startswith("text/event-stream")
            assert http.get(f"/m3ui-live/{ticket}").status_code == 409  # one channel per page
        text = http.get(f"/m3ui-live/{page_ticket()}", timeout=30).text  # no answer comes: it ends
        assert text.endswith("\n\nevent: end\ndata: {}\n\n") and "data: {\"" not in text


def test_a_question_said_at_the_click_is_taken_only_as_a_page_says_it(app):
    """POST /m3ui-live/{ticket}/ask (m3ui.live.early_ask): a page unknown to the app gets nothing sent; anything a
    page's script would never send is refused before it reaches the chat."""
    form = {"text": "Count to 3", "thinking_mode": "disabled", "temperature": 0.6, "top_p": 0.95, "max_tokens": 64,
            "stall_seconds": 60, "keep_reasoning": False, "system_prompt": "", "tools": False}
    with httpx.Client(base_url=app.url, trust_env=False, timeout=10) as http:
        asked = http.post(f"/m3ui-live/{page_ticket()}/ask", json=form)
        assert asked.status_code == 200 and asked.json() == {"sent": False}  # no page of that ticket has loaded
        assert http.post("/m3ui-live/short/ask", json=form).status_code == 400
        for body in (b"not json", b"[1, 2]", b"\xff"):
            assert http.post(f"/m3ui-live/{page_ticket()}/ask", content=body).status_code == 400
        too_long = http.post(f"/m3ui-live/{page_ticket()}/ask", json={**form, "text": "x" * (2 * 1024 * 1024)})
        assert too_long.status_code == 413
        assert http.get(f"/m3ui-live/{page_ticket()}/ask").status_code in (404, 405)


def test_a_page_that_says_its_question_at_the_click_gets_it_answered_from_one_engine_request(app, client):
    """What a page does (assets/js/live.js): it loads its chats with its ticket, and at the click says the question
    (m3ui.live.early_ask) before Gradio delivers it; the answer takes the request that went out then."""
    ticket = page_ticket()
    client.predict(None, ticket, api_name="/load")
    engine = engine_url(app)
    before = engine_counter(engine, "num_requests_total")
    form = {"thinking_mode": "disabled", "temperature": 0.6, "top_p": 0.95, "max_tokens": 4096, "stall_seconds": 60,
            "keep_reasoning": False, "system_prompt": "", "tools": False}
    channel = LiveReader(app.url, ticket)
    said = httpx.post(f"{app.url}/m3ui-live/{ticket}/ask", json={"text": QUESTION, **form}, trust_env=False)
    assert said.status_code == 200 and said.json() == {"sent": True}
    frames = ask(client, ticket)
    channel.join()
    assert "399, 400." in texts(frames[-1])[-1] and texts(channel.live) == texts(frames[-1])
    assert engine_counter(engine, "num_requests_total") - before == 1  # the answer asked for none of its own
    assert engine_counter(engine, "num_aborted_requests_total") == 0
