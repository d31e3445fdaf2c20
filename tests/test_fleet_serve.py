"""`python -m launch fleet serve` with the real sglang-router in front of three simulated engines on loopback:
chats stream through it, the cache-aware policy keeps a conversation on one worker, a worker SIGKILLed under
load leaves every new chat answered and is back in the router within 30 s, and Ctrl-C leaves no process."""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator

import httpx
import psutil
import pytest

from launch.fleet.router_api import list_workers
from tests.fleet_process import FleetProcess, free_block, start_fleet
from tests.sim_sse import stream_chat

pytest.importorskip("sglang_router")

WORKERS = 3
# Paced, so that answers overlap and a killed worker has requests in flight; fast, so the tests stay short.
PACED = {"M3UI_SIM_UNTHROTTLED": "0", "M3UI_SIM_DECODE_TPS": "60", "M3UI_SIM_PREFILL_TPS": "20000"}
BACK_WITHIN_S = 30.0
# A long shared opening: each later turn's text starts with the earlier turns', as a chat's does.
OPENING = ("You are helping me plan a garden. It is a small, sunny plot by a brick wall; the soil is clay; "
           "I want vegetables and a few herbs, and I water by hand in the evenings. ") * 4


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FleetProcess]:
    port = free_block(2)
    process = start_fleet(["--engine", "sim", "--workers", str(WORKERS), "--policy", "cache_aware",
                           "--set", f"router_port={port}", "--first-port", str(free_block(WORKERS))],
                          tmp_path_factory.mktemp("fleet"), PACED)
    try:
        process.wait_for(rf"^router: http://127\.0\.0\.1:{port}$", timeout=120)
        yield process
    finally:
        process.kill()


def router_url(fleet: FleetProcess) -> str:
    return fleet.wait_for(r"^router: (\S+)$").group(1)


def ask(url: str, messages: list[dict[str, str]], max_tokens: int = 12) -> str:
    answer = stream_chat(url, {"model": "MiniMax-M3", "messages": messages, "max_tokens": max_tokens})
    assert answer.finish_reason in ("stop", "length"), answer
    return answer.content


def served_by(fleet: FleetProcess) -> list[int]:
    """Chat requests each worker has served so far (uvicorn's access lines in its engine logs)."""
    return [sum(log.read_text(errors="replace").count('"POST /v1/chat/completions HTTP/1.1" 200')
                for log in worker.glob("runs/*/engine.log")) for worker in fleet.worker_dirs()]


def test_chats_stream_through_the_router_to_the_simulated_workers(fleet: FleetProcess) -> None:
    before = served_by(fleet)
    content = ask(router_url(fleet), [{"role": "user", "content": "Say hello."}])
    assert content
    assert sum(served_by(fleet)) == sum(before) + 1
    workers = list_workers(router_url(fleet))
    assert len(workers) == WORKERS and all(w.healthy for w in workers)


def test_cache_aware_sends_every_turn_of_a_conversation_to_one_worker(fleet: FleetProcess) -> None:
    url = router_url(fleet)
    for topic in ("tomatoes", "basil"):
        messages = [{"role": "user", "content": f"{OPENING} First question: where do {topic} go?"}]
        before = served_by(fleet)
        for turn in range(4):
            messages += [{"role": "assistant", "content": ask(url, messages)},
                         {"role": "user", "content": f"Turn {turn}: and then?"}]
        grew = [after - was for after, was in zip(served_by(fleet), before, strict=True)]
        assert sorted(grew) == [0, 0, 4], grew


def test_a_worker_killed_under_load_leaves_every_new_chat_answered_and_is_back_within_30_s(
        fleet: FleetProcess) -> None:
    url = router_url(fleet)
    victim_url = list_workers(url)[0].url
    victim = next(i for i in range(WORKERS) if victim_url.endswith(f":{_port_of(fleet, i)}"))
    old_pid = fleet.worker_pid(victim)
    assert old_pid is not None
    stop = threading.Event()
    load = [threading.Thread(target=_keep_chatting, args=(url, stop, n)) for n in range(2)]
    for thread in load:
        thread.start()
    time.sleep(1.0)
    seen = len(fleet.lines)
    os.kill(old_pid, signal.SIGKILL)
    killed_at = time.monotonic()
    results: list[bool] = []
    # Each starts at once, so new chats are sent while the dead worker is still in the router, then for 6 s.
    new = [threading.Thread(target=_new_chats, args=(url, results, killed_at + 6.0, n)) for n in range(4)]
    for thread in new:
        thread.start()
    removed = _wait(lambda: victim_url not in {w.url for w in list_workers(url)}, 10.0)
    for thread in new:
        thread.join(timeout=60)
    stop.set()
    for thread in load:
        thread.join(timeout=60)
    assert removed, "the dead worker was never taken out of the router"
    assert len(results) >= 4 and all(results), f"{results.count(False)} of {len(results)} new chats failed"
    print(f"{len(results)} new chats in the 6 s after the kill, all answered")  # the figure, with -s
    assert fleet.wait_for(r"degraded: serving on .* with 2 of 3 workers", timeout=1, since=seen)

    def back() -> bool:
        listed = [w for w in list_workers(url) if w.url == victim_url and w.healthy]
        return bool(listed) and fleet.worker_pid(victim) not in (None, old_pid)

    assert _wait(back, BACK_WITHIN_S - (time.monotonic() - killed_at)), (
        f"worker {victim_url} not back in the router after {BACK_WITHIN_S} s:\n{fleet.output[-2000:]}")
    print(f"back in the router {time.monotonic() - killed_at:.1f} s after the kill")
    assert fleet.wait_for(r"ready: serving on .* with 3 of 3 workers$", timeout=5, since=seen)
    n = victim + 1
    assert fleet.wait_for(rf"worker {n} {victim_url}: failed \(.*auto-restart attempt 1 of 5 in", 1, seen)
    assert fleet.wait_for(rf"worker {n} {victim_url}: ready \(ready\), in the router$", 1, seen)
    assert ask(url, [{"role": "user", "content": "Still there?"}])


def _wait(condition: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    return False


def _port_of(fleet: FleetProcess, index: int) -> int:
    command = next(fleet.worker_dirs()[index].glob("runs/*/command.sh")).read_text()
    return int(command.split("--port ", 1)[1].split()[0])


def _keep_chatting(url: str, stop: threading.Event, n: int) -> None:
    while not stop.is_set():
        # A chat in flight on the killed worker may end; only new chats must all be answered.
        with contextlib.suppress(AssertionError, httpx.HTTPError):
            ask(url, [{"role": "user", "content": f"Background load {n}: tell me about {time.time()}."}], 40)


def _new_chats(url: str, results: list[bool], until: float, n: int) -> None:
    while time.monotonic() < until:
        try:
            results.append(bool(ask(url, [{"role": "user", "content": f"New chat {n} at {time.time()}."}])))
        except (AssertionError, httpx.HTTPError):
            results.append(False)


def test_ctrl_c_stops_the_router_and_every_worker(fleet: FleetProcess) -> None:
    processes = fleet.processes()
    assert len(processes) >= WORKERS + 1  # the router and every worker were found by pid (never by name)
    assert fleet.interrupt() == 0
    gone, alive = psutil.wait_procs(processes, timeout=5)
    assert not alive, alive
    assert fleet.processes() == []
    assert not _port_open(router_url(fleet))


def _port_open(url: str) -> bool:
    try:
        httpx.get(f"{url}/health", timeout=1)
        return True
    except httpx.TransportError:
        return False
