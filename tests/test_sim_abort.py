"""POST /abort_request over real HTTP, as sglang-kt 0.7.2 answers it (docs/ENGINE_CONTRACT.md, "Aborting a request").

http_server.abort_request answers an empty 200 for any rid (tokenizer_manager.abort_request ignores one it does not
know); the scheduler sets a running request's to_finish = FINISH_ABORT, so it makes one more decode pass and its
stream ends as any other: a finish chunk with finish_reason "abort", then the usage chunk.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator

import httpx
import pytest

from tests.sim_process import SimProcess, free_port, running_sim, sim_settings

STORY = [{"role": "user", "content": "Count to 1000."}]  # 2002 tokens: still running when the abort comes


@pytest.fixture(scope="module")
def sim() -> Iterator[SimProcess]:
    # paced (not the tests' usual unthrottled sim): the request is still generating when the abort comes
    settings = sim_settings(free_port(), max_running_requests=1)
    with running_sim(settings, env={"M3UI_SIM_UNTHROTTLED": "0", "M3UI_SIM_DECODE_TPS": "200"}) as process:
        yield process


def _events(sim: SimProcess, rid: str, started: threading.Event) -> list[dict[str, object]]:
    body = {"model": "default", "messages": STORY, "stream": True, "max_tokens": 4000, "rid": rid,
            "stream_options": {"include_usage": True}}
    events: list[dict[str, object]] = []
    with httpx.stream("POST", f"{sim.url}/v1/chat/completions", json=body, timeout=30) as response:
        for line in response.iter_lines():
            if line.startswith("data: {"):
                events.append(json.loads(line[len("data: "):]))
                started.set()
    return events


def test_an_aborted_stream_ends_with_an_abort_finish_and_its_usage(sim: SimProcess) -> None:
    started, result = threading.Event(), []
    reader = threading.Thread(target=lambda: result.append(_events(sim, "m3ui-early-abc", started)))
    reader.start()
    assert started.wait(20)
    time.sleep(0.3)
    answer = httpx.post(f"{sim.url}/abort_request", json={"rid": "m3ui-early-abc"}, timeout=5)
    assert (answer.status_code, answer.content) == (200, b"")
    reader.join(20)
    (events,) = result
    finishes = [c["finish_reason"] for e in events for c in e["choices"] if c["finish_reason"]]  # type: ignore[union-attr,index]
    assert finishes == ["abort"]
    usage = events[-1]["usage"]
    assert isinstance(usage, dict) and usage["prompt_tokens"] > 0
    generated = sum(1 for e in events for c in e["choices"] if c["delta"].get("content"))  # type: ignore[union-attr,index]
    assert 0 < usage["completion_tokens"] < 2002 and usage["completion_tokens"] >= generated


def test_an_unknown_rid_is_answered_200_and_a_malformed_body_400(sim: SimProcess) -> None:
    assert httpx.post(f"{sim.url}/abort_request", json={"rid": "nobody"}, timeout=5).status_code == 200
    bad = httpx.post(f"{sim.url}/abort_request", content=b"[1]", timeout=5)
    assert bad.status_code == 400 and "AbortReq" in bad.text


def test_a_queued_request_aborted_has_its_stream_cut_without_usage(sim: SimProcess) -> None:
    # the module's sim runs one request at a time: the second waits in the queue
    started, cut, first = threading.Event(), threading.Event(), []
    running = threading.Thread(target=lambda: first.append(_events(sim, "m3ui-early-running", started)))
    running.start()
    assert started.wait(20)
    body = {"model": "default", "messages": STORY, "stream": True, "max_tokens": 50, "rid": "m3ui-early-queued",
            "stream_options": {"include_usage": True}}
    lines: list[str] = []
    with httpx.stream("POST", f"{sim.url}/v1/chat/completions", json=body, timeout=30) as response:
        assert response.status_code == 200
        threading.Timer(0.3, lambda: (httpx.post(f"{sim.url}/abort_request", json={"rid": "m3ui-early-queued"},
                                                 timeout=5), cut.set())).start()
        with pytest.raises(httpx.RemoteProtocolError):  # the body ends mid-way, as 0.7.2's does (a KeyError)
            lines.extend(response.iter_lines())
    assert cut.is_set() and not any('"usage":{' in line for line in lines) and "data: [DONE]" not in lines
    httpx.post(f"{sim.url}/abort_request", json={"rid": "m3ui-early-running"}, timeout=5)
    running.join(20)
    assert [c["finish_reason"] for e in first[0] for c in e["choices"] if c["finish_reason"]] == ["abort"]  # type: ignore[union-attr,index]
