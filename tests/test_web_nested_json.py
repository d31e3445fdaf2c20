"""Deeply nested JSON on the real app (issue 27 #10): the queue's join and the live ask route answer 400 with a
plain line, signed in or not, and nothing reaches the log as a traceback (Python's parser raised RecursionError,
which became a 500)."""

import pytest

from m3ui.accounts import AccountStore
from m3ui.web.json_body import MAX_DEPTH
from tests.account_calls import SIGNED_IN
from tests.app_process import running_app
from tests.web_requests import client

ALICE = ("alice", "alices-password")
# Past the parser's recursion limit, and just past the app's own bound (parses, but too deep to be a call).
DEPTHS = (100_000, MAX_DEPTH + 1)


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    folder = tmp_path_factory.mktemp("nested-json")
    AccountStore.open(folder / "data").add(*ALICE)
    with running_app(folder, data_dir=folder / "data") as running:
        yield running


def nested(levels: int) -> bytes:
    return b'{"data": ' + b"[" * levels + b"]" * levels + b', "fn_index": 0, "session_hash": "s"}'


def test_nested_calls_get_a_400_signed_in_or_not(app):
    headers = {"content-type": "application/json"}
    with client(app) as anonymous, client(app) as signed_in:
        login = signed_in.post("/login", data={"username": ALICE[0], "password": ALICE[1]})
        assert login.status_code == SIGNED_IN
        for levels in DEPTHS:
            for c in (anonymous, signed_in):
                answer = c.post("/gradio_api/queue/join", content=nested(levels), headers=headers)
                assert answer.status_code == 400, (levels, answer.status_code, answer.text[:200])
                assert answer.text == f"call refused: JSON nested deeper than {MAX_DEPTH} levels\n"
            ask = signed_in.post("/m3ui-live/" + "t" * 24 + "/ask", content=nested(levels), headers=headers)
            assert ask.status_code == 400 and "nested deeper" in ask.text, (levels, ask.status_code, ask.text[:200])
        shallow = signed_in.post("/m3ui-live/" + "t" * 24 + "/ask", json={"text": [[["x"]]]})
        assert shallow.status_code == 200 and shallow.json() == {"sent": False}
    log = app.log()
    assert "Traceback" not in log and "RecursionError" not in log, log[-2000:]
