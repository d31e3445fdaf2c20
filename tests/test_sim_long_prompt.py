"""A long prompt on the simulated engine: `usage.prompt_tokens` is the count of what was sent, the first token
waits for the prefill at the configured rate, and hanging up during the prefill aborts the request."""

from __future__ import annotations

import json
import re
import time

import httpx

from launch.sim.tokens import count_tokens
from tests.sim_process import free_port, sim_settings, start_sim  # noqa: F401  (fixture)

GPU_PREFILL_TPS = 20_000.0  # prompts past the seed preset's 500-token threshold prefill on the GPU path
PACED = {"M3UI_SIM_STARTUP_SECONDS": "0.3", "M3UI_SIM_UNTHROTTLED": "0"}  # the fixture's default never waits
PAGE = "The quick brown fox jumps over the lazy dog near the riverbank at dawn. " * 1500  # ≈ 25K tokens


def _first_token_and_usage(url: str, content: str) -> tuple[float, dict[str, int]]:
    body = {"model": "m3", "messages": [{"role": "user", "content": content}], "max_tokens": 4, "stream": True,
            "stream_options": {"include_usage": True}}
    started, first, usage = time.monotonic(), None, {}
    with httpx.stream("POST", f"{url}/v1/chat/completions", json=body, timeout=60) as reply:
        assert reply.status_code == 200
        for line in reply.iter_lines():
            if not line.startswith("data: {"):
                continue
            chunk = json.loads(line[6:])
            if first is None and chunk.get("choices") and chunk["choices"][0]["delta"].get("content"):
                first = time.monotonic() - started
            usage = chunk.get("usage") or usage
    assert first is not None
    return first, usage


def _aborted(url: str) -> float:
    found = re.search(r"^sglang:num_aborted_requests_total\{[^}]*\} (\S+)$", httpx.get(f"{url}/metrics").text, re.M)
    return float(found.group(1)) if found else 0.0


def test_prompt_tokens_are_counted_and_prefill_time_grows_with_them(start_sim) -> None:  # noqa: F811
    sim = start_sim(sim_settings(free_port()), env={**PACED, "M3UI_SIM_GPU_PREFILL_TPS": str(GPU_PREFILL_TPS)})
    sim.wait_ready()
    short_ttft, short = _first_token_and_usage(sim.url, "Hi there")
    long_ttft, usage = _first_token_and_usage(sim.url, PAGE)
    # the same template around both: the difference is exactly the tokens of the text sent
    assert usage["prompt_tokens"] - short["prompt_tokens"] == count_tokens(PAGE) - count_tokens("Hi there")
    sent = usage["prompt_tokens"]
    assert sent > 20_000 and short["prompt_tokens"] < 20
    expected = sent / GPU_PREFILL_TPS
    assert long_ttft >= expected and long_ttft > short_ttft + expected * 0.8


def test_hanging_up_during_the_prefill_aborts_the_engine_request(start_sim) -> None:  # noqa: F811
    sim = start_sim(sim_settings(free_port(), enable_metrics=True), env={**PACED, "M3UI_SIM_GPU_PREFILL_TPS": "2000"})
    sim.wait_ready()
    before = _aborted(sim.url)
    body = {"model": "m3", "messages": [{"role": "user", "content": PAGE}], "max_tokens": 4, "stream": True}
    with httpx.stream("POST", f"{sim.url}/v1/chat/completions", json=body, timeout=60) as reply:
        assert reply.status_code == 200
        time.sleep(0.5)  # well inside the ≈12 s prefill; leaving the block closes the connection
    deadline = time.monotonic() + 5  # aborted while the prefill still had seconds to run
    while _aborted(sim.url) <= before and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _aborted(sim.url) == before + 1
