"""Token counts from the engine, over real HTTP on 127.0.0.1: the simulated engine's /v1/messages/count_tokens
(docs/ENGINE_CONTRACT.md §7) gives a text's own count (the chat template's markers taken off), and every chip
says where its count came from; an engine that cannot count gives a labelled estimate, never a wrong "exact"."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from launch.sim.tokens import count_tokens
from m3ui.documents.engine_count import EngineCounter
from m3ui.documents.reader import read_upload
from m3ui.documents.token_count import ENGINE_MAX_CHARS, TokenCounter
from tests.sim_process import free_port, running_sim, sim_settings

TEXT = "def main():\n    print('hello, wörld ✓')  # 42 tokens or so\n" * 30


@pytest.fixture(scope="module")
def sim():
    with running_sim(sim_settings(free_port())) as sim:
        yield sim


def test_the_engine_counts_a_text_as_it_reads_it(sim) -> None:
    engine = EngineCounter(sim.url, "MiniMax-M3")
    assert engine.count(TEXT) == count_tokens(TEXT)  # the sim's own tokenizer, markers off
    assert engine.count("") == 0
    counter = TokenCounter(None, engine)
    count = counter.count(TEXT)
    assert count.exact and count.source == "engine" and count.label() == f"{count_tokens(TEXT):,} tokens (engine)"
    engine.close()


def test_a_chip_says_its_count_is_the_engines(sim, tmp_path: Path) -> None:
    path = tmp_path / "main.py"
    path.write_text(TEXT)
    got = read_upload(path, "main.py", TokenCounter(None, EngineCounter(sim.url, "MiniMax-M3")))
    assert got.chip()["tokens_label"] == f"{count_tokens(TEXT):,} tokens (engine)"
    assert got.chip()["exact"] is True


def test_trimming_with_engine_counts_keeps_a_start_that_fits(sim) -> None:
    counter = TokenCounter(None, EngineCounter(sim.url, "MiniMax-M3"))
    head = counter.head(TEXT, 300)
    assert TEXT.startswith(head) and 250 <= count_tokens(head) <= 300


def test_past_the_whole_context_the_engine_is_not_asked(sim) -> None:
    counter = TokenCounter(None, EngineCounter(sim.url, "MiniMax-M3"))
    count = counter.count("x" * (ENGINE_MAX_CHARS + 1))
    assert count.source == "estimate" and count.label().endswith("tokens (estimate)")


class _NoCountRoute(BaseHTTPRequestHandler):
    asked = 0

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        type(self).asked += 1
        self.send_response(404)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


def test_an_engine_without_the_route_or_unreachable_gives_labelled_estimates() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _NoCountRoute)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        counter = TokenCounter(None, EngineCounter(f"http://127.0.0.1:{server.server_port}", "m"))
        for _ in range(3):
            assert counter.count(TEXT).label().endswith("tokens (estimate)")
        assert _NoCountRoute.asked == 1  # a 404 is the route missing (a router in front): not asked again
    finally:
        server.shutdown()
        server.server_close()
    gone = TokenCounter(None, EngineCounter(f"http://127.0.0.1:{free_port()}", "m", timeout_s=2))
    assert gone.count(TEXT).source == "estimate"
