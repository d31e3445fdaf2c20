"""The gateway's refusals and limits on a real app: each comes before the engine is touched, in the API's own error
shape; a client that leaves aborts the engine's request; an engine that goes silent ends the request; quotas hold
under 16 concurrent API requests."""

from __future__ import annotations

import json
import os
import socket
import threading
import time

import httpx
import pytest
from starlette.testclient import TestClient

from m3ui.client.settings import EndpointConfig
from m3ui.gateway import gateway as gateway_module
from m3ui.gateway.callers import Callers
from m3ui.gateway.gateway import OFF_MESSAGE, Gateway
from m3ui.gateway.limits import KeyLimits
from tests.app_process import running_app
from tests.gateway_app import gateway_app

CHAT = "/v1/chat/completions"
QUESTION = {"role": "user", "content": "Write a long story about a lighthouse keeper and the sea."}


@pytest.fixture(scope="module")
def gw(tmp_path_factory):
    with gateway_app(tmp_path_factory.mktemp("gateway-http"), "--gateway-key-limits", "20/40") as gw:
        yield gw


def post(gw, path: str, key: str | None, body: object, **headers: str) -> httpx.Response:
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    auth = {"authorization": f"Bearer {key}"} if key else {}
    return httpx.post(gw.app.url + path, content=content, headers={**auth, **headers}, timeout=30)


def test_bad_keys_get_401_and_never_reach_the_engine(gw):
    requests, prompt = gw.engine_counter("num_requests_total"), gw.engine_counter("prompt_tokens_total")
    key = gw.keys["bob"]
    altered = key[:-1] + ("B" if key[-1] == "A" else "A")  # one character off (a key may end in "A" itself)
    for headers in ({}, {"authorization": "Bearer nope"}, {"x-api-key": altered},
                    {"authorization": "Basic " + gw.keys["bob"]}):
        reply = httpx.post(gw.app.url + CHAT, json={"messages": [QUESTION]}, headers=headers, timeout=10)
        assert reply.status_code == 401 and reply.json()["error"]["type"] == "authentication_error"
    anthropic = httpx.post(gw.app.url + "/v1/messages", json={}, headers={"x-api-key": "nope"}, timeout=10)
    assert anthropic.status_code == 401 and anthropic.json()["type"] == "error"
    assert gw.engine_counter("num_requests_total") == requests and gw.engine_counter("prompt_tokens_total") == prompt
    assert gw.keys["bob"] not in gw.app.log(), "keys never reach the log"


def test_bad_bodies_get_400_or_413_in_the_apis_own_shape(gw):
    key = gw.keys["bob"]
    broken = post(gw, CHAT, key, b'{"messages": [')
    assert broken.status_code == 400 and "not valid JSON" in broken.json()["error"]["message"]
    typed = post(gw, CHAT, key, {"messages": [QUESTION], "max_tokens": "lots"})
    assert typed.status_code == 400 and "max_tokens: expected integer" in typed.json()["error"]["message"]
    listed = post(gw, "/v1/messages", key, [1, 2])
    assert listed.status_code == 400 and listed.json()["error"]["type"] == "invalid_request_error"
    missing = post(gw, "/v1/messages", key, {"model": "m", "messages": []})
    assert missing.status_code == 400 and "max_tokens: this field is required" in missing.json()["error"]["message"]
    deep = post(gw, CHAT, key, b"[" * 100_000 + b"]" * 100_000)
    assert deep.status_code == 400
    huge = post(gw, CHAT, key, b'{"messages": "' + b"x" * (33 * 1024 * 1024) + b'"}')
    assert huge.status_code == 413 and huge.json()["error"]["type"] == "invalid_request_error"
    wrong_method = httpx.get(gw.app.url + CHAT, headers={"authorization": f"Bearer {key}"}, timeout=10)
    assert wrong_method.status_code == 405


def test_foreign_host_and_origin_are_refused(gw):
    key = gw.keys["bob"]
    host = httpx.get(gw.app.url + "/v1/models", headers={"authorization": f"Bearer {key}", "host": "evil.example"},
                     timeout=10)
    assert host.status_code in (400, 403)
    origin = post(gw, CHAT, key, {"messages": [QUESTION]}, origin="https://evil.example")
    assert origin.status_code == 403 and "access-control-allow-origin" not in origin.headers


def test_cors_is_off_unless_one_origin_is_allowed(tmp_path):
    key_file = tmp_path / "gateway.key"
    key_file.write_text("the-one-key-of-this-app\n")
    os.chmod(key_file, 0o600)
    site = "https://chat.example.org"
    with running_app(tmp_path, "--endpoint", "http://127.0.0.1:9", "--gateway-key-file", str(key_file),
                     "--gateway-cors", site) as app:
        auth = {"authorization": "Bearer the-one-key-of-this-app"}
        preflight = httpx.options(app.url + "/v1/models", headers={"origin": site}, timeout=10)
        assert preflight.status_code == 204 and preflight.headers["access-control-allow-origin"] == site
        assert "authorization" in preflight.headers["access-control-allow-headers"]
        allowed = httpx.get(app.url + "/v1/models", headers={**auth, "origin": site}, timeout=10)
        assert allowed.status_code == 503 and allowed.headers["access-control-allow-origin"] == site
        other = httpx.get(app.url + "/v1/models", headers={**auth, "origin": "https://evil.example"}, timeout=10)
        assert other.status_code == 403 and "access-control-allow-origin" not in other.headers


def test_requests_per_minute_limit_is_a_429_with_retry_after(gw):
    key = gw.keys["dave"]
    statuses = [httpx.get(gw.app.url + "/v1/models", headers={"authorization": f"Bearer {key}"}, timeout=10)
                for _ in range(41)]
    assert [s.status_code for s in statuses[:40]] == [200] * 40
    refused = statuses[40]
    assert refused.status_code == 429 and refused.json()["error"]["type"] == "rate_limit_error"
    assert 1 <= int(refused.headers["retry-after"]) <= 60
    anthropic = post(gw, "/v1/messages/count_tokens", key, {"model": "m", "messages": []})
    assert anthropic.status_code == 429 and anthropic.json()["error"]["type"] == "rate_limit_error"


def test_concurrency_limit_counts_running_requests_per_key():
    limits = KeyLimits(concurrency=2, per_minute=100)
    assert limits.enter("k") is None and limits.enter("k") is None
    refused = limits.enter("k")
    assert refused is not None and refused.retry_after_s == 1 and "2 requests at once" in refused.message
    assert limits.enter("other") is None, "another key has its own"
    limits.leave("k")
    assert limits.enter("k") is None


def test_a_client_that_leaves_aborts_the_engine_request(gw):
    aborted = gw.engine_counter("num_aborted_requests_total")
    with httpx.stream("POST", gw.app.url + CHAT, headers={"authorization": f"Bearer {gw.keys['bob']}"},
                      json={"messages": [QUESTION], "stream": True, "max_tokens": 4000}, timeout=30) as reply:
        assert reply.status_code == 200
        next(reply.iter_raw())
    deadline = time.monotonic() + 5
    while gw.engine_counter("num_aborted_requests_total") == aborted and time.monotonic() < deadline:
        time.sleep(0.05)
    assert gw.engine_counter("num_aborted_requests_total") == aborted + 1


def test_sixteen_concurrent_api_requests_stay_within_the_quota(gw):
    quota = 4000
    gw.set_quota("carol", quota)
    statuses: list[int] = []

    def one(i: int) -> None:
        path, body = (CHAT, {"messages": [QUESTION], "stream": i % 4 == 0, "max_tokens": 300}) if i % 2 else (
            "/v1/messages", {"model": "m", "messages": [QUESTION], "max_tokens": 100_000, "stream": i % 4 == 0})
        statuses.append(post(gw, path, gw.keys["carol"], body).status_code)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    carol = gw.usage("carol")
    assert carol.tokens <= quota, f"{carol.tokens} tokens on a {quota}-token quota"
    assert 200 in statuses and 429 in statuses and set(statuses) <= {200, 429}
    gw.set_quota("carol", carol.tokens)  # used up: refused until midnight UTC
    refused = post(gw, CHAT, gw.keys["carol"], {"messages": [QUESTION]})
    assert refused.status_code == 429 and "Daily token quota reached" in refused.json()["error"]["message"]
    assert int(refused.headers["retry-after"]) >= 1


def test_without_accounts_the_gateway_is_off_and_says_how_to_turn_it_on():
    client = TestClient(Gateway(lambda: None, lambda: "no engine", Callers(None, None), None))  # no lifespan
    for path in ("/v1/models", "/v1/messages"):
        reply = client.get(path)
        assert reply.status_code == 404 and OFF_MESSAGE in reply.text


def test_a_key_file_turns_it_on_and_an_engine_down_is_a_503(tmp_path):
    key_file = tmp_path / "gateway.key"
    key_file.write_text("the-one-key-of-this-app\n")
    os.chmod(key_file, 0o600)
    with running_app(tmp_path, "--endpoint", "http://127.0.0.1:9", "--gateway-key-file", str(key_file)) as app:
        down = httpx.post(app.url + CHAT, json={"messages": [QUESTION]}, timeout=10,
                          headers={"authorization": "Bearer the-one-key-of-this-app"})
        assert down.status_code == 503 and "the engine is not ready" in down.json()["error"]["message"]
        assert int(down.headers["retry-after"]) > 0
        assert httpx.get(app.url + "/v1/models", headers={"x-api-key": "other"}, timeout=10).status_code == 401


class _StallingEngine:
    """A real HTTP server on 127.0.0.1 that answers a request with `first` (raw bytes: nothing, or headers and part
    of a stream) and then sends nothing more, holding the connection open."""

    def __init__(self, first: bytes) -> None:
        self.first = first
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.held: list[socket.socket] = []
        threading.Thread(target=self._serve, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}/v1"

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.held.append(conn)
            conn.recv(65536)
            conn.sendall(self.first)

    def close(self) -> None:
        for conn in [*self.held, self.sock]:
            conn.close()


STREAM_START = (b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
                b"13\r\ndata: {\"a\":\"one\"}\n\n\r\n")


@pytest.mark.parametrize(("first", "status", "body"), [
    (b"", 503, "the engine sent nothing for 1 s"),  # no answer at all (a hung engine)
    (STREAM_START, 200, 'data: {"a":"one"}\n\n'),  # a stream that stops: it ends cut, what came passed on
])
def test_an_engine_that_sends_nothing_more_ends_the_request(monkeypatch, first, status, body):
    monkeypatch.setattr(gateway_module, "READ_TIMEOUT_S", 0.6)
    monkeypatch.setattr(gateway_module, "STALL_CHECK_S", 0.1)
    engine = _StallingEngine(first)
    try:
        gateway = Gateway(lambda: EndpointConfig(base_url=engine.url), lambda: "ready", Callers(None, "k"), None)
        started = time.monotonic()
        reply = TestClient(gateway).post(CHAT, json={"messages": [QUESTION], "stream": True},
                                         headers={"authorization": "Bearer k"})
        assert reply.status_code == status and body in reply.text
        assert time.monotonic() - started < 10
    finally:
        engine.close()
