"""Live tickets on the real app with logins (issue 27 #5, #6): a ticket is bound to the first session that uses
it, so another session can neither read that page's channel, nor say questions for it, nor push its own answer
into it; and one client can hold only a few channels (per session and per address), never all of the app's."""

from __future__ import annotations

from contextlib import ExitStack

import httpx
import pytest
from gradio_client import Client

from m3ui.live.feed import MAX_PER_CLIENT, MAX_PER_SESSION
from tests.account_calls import data_with_accounts, signed_in
from tests.app_process import running_app
from tests.live_reader import LiveReader, page_ticket

ALICE = ("alice", "alices-password")
BOB = ("bob", "bobs-password")
QUESTION = "Count to 200"
FORM = {"thinking_mode": "disabled", "temperature": 0.6, "top_p": 0.95, "max_tokens": 4096, "stall_seconds": 60,
        "keep_reasoning": False, "system_prompt": "", "tools": False}


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    folder = tmp_path_factory.mktemp("live-tickets")
    data = data_with_accounts(folder, ALICE, BOB)
    with running_app(folder, data_dir=data, env={"M3UI_SIM_DECODE_TPS": "300"}) as running:
        running.wait_engine_ready()
        yield running


def test_another_sessions_ticket_is_refused(app):
    ticket = page_ticket()
    with signed_in(app, "127.0.0.1", *ALICE) as alice, signed_in(app, "127.0.0.2", *BOB) as bob, \
            signed_in(app, "127.0.0.1", *ALICE) as alice_elsewhere:
        said = alice.post(f"/m3ui-live/{ticket}/ask", json={"text": QUESTION, **FORM})
        assert said.status_code == 200  # the ticket is alice's page's from now on
        for other in (bob, alice_elsewhere):  # another user, and another login of the same user
            read = other.get(f"/m3ui-live/{ticket}", timeout=30)
            assert read.status_code == 403 and "another page's session" in read.text, (read.status_code, read.text)
            asked = other.post(f"/m3ui-live/{ticket}/ask", json={"text": QUESTION, **FORM})
            assert asked.status_code == 403, (asked.status_code, asked.text)


def test_a_page_holds_its_ticket_from_the_moment_it_loads(app):
    ticket = page_ticket()
    alice = Client(app.url, auth=ALICE, verbose=False, download_files=False)
    try:
        alice.predict(None, ticket, api_name="/load")  # what the page does when it opens
    finally:
        alice.close()
    with signed_in(app, "127.0.0.2", *BOB) as bob:
        assert bob.get(f"/m3ui-live/{ticket}", timeout=30).status_code == 403


def test_the_pages_own_answer_streams_over_its_channel(app):
    """The same session (the page's cookies) asks through Gradio and reads the channel: the frames go there."""
    ticket = page_ticket()
    with signed_in(app, "127.0.0.1", *ALICE) as alice:
        cookies = "; ".join(f"{name}={value}" for name, value in alice.cookies.items())
        page = Client(app.url, headers={"Cookie": cookies}, verbose=False, download_files=False)
        try:
            page.predict(None, ticket, api_name="/load")
            channel = LiveReader(app.url, ticket, http=alice)
            job = page.submit(QUESTION, *FORM.values(), ticket, api_name="/send")
            job.result()
            frames = [outputs[-1] for outputs in job.outputs()]
        finally:
            page.close()
        channel.join(timeout=20)
    assert channel.ended and channel.events >= 5, channel.events
    assert len(frames) <= 3, len(frames)


def test_another_sessions_answer_is_not_pushed_into_a_page(app):
    ticket = page_ticket()
    with signed_in(app, "127.0.0.1", *ALICE) as alice:
        channel = LiveReader(app.url, ticket, http=alice)
        bob = Client(app.url, auth=BOB, verbose=False, download_files=False)
        try:
            job = bob.submit(QUESTION, *FORM.values(), ticket, api_name="/send")
            job.result()
            frames = [outputs[-1] for outputs in job.outputs()]
        finally:
            bob.close()
        channel.join(timeout=20)
    assert channel.events == 0, "bob's answer reached alice's page"
    assert len(frames) >= 5, "bob's answer streams through Gradio instead"


def test_one_client_cannot_take_every_channel(app):
    sessions = MAX_PER_CLIENT // MAX_PER_SESSION + 1
    with ExitStack() as stack:
        clients = [stack.enter_context(signed_in(app, "127.0.0.3", *ALICE)) for _ in range(sessions)]

        def open_channel(c: httpx.Client) -> int:
            return stack.enter_context(c.stream("GET", f"/m3ui-live/{page_ticket()}")).status_code

        # (an unclaimed channel stays open CLAIM_TIMEOUT_S: all of these are open at once)
        first = [open_channel(clients[0]) for _ in range(MAX_PER_SESSION + 1)]
        assert first == [200] * MAX_PER_SESSION + [429], first
        rest = [open_channel(c) for c in clients[1:-1] for _ in range(MAX_PER_SESSION)]
        assert rest == [200] * (MAX_PER_CLIENT - MAX_PER_SESSION), rest
        assert open_channel(clients[-1]) == 429, "the address holds its share"
        elsewhere = stack.enter_context(signed_in(app, "127.0.0.4", *BOB))
        assert open_channel(elsewhere) == 200, "another address still gets a channel"
