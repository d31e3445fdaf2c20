"""The simulated engine serves what sglang-router asks of a worker, in sglang-kt 0.7.2's shapes: /get_load (the
power-of-two policy's load), /flush_cache, and the model/server info the router reads when it registers a worker."""

from __future__ import annotations

import ast
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from tests.sim_process import SimProcess, free_port, running_sim, sim_settings
from tests.sim_sse import stream_chat
from tests.wheel_cache import fetch_wheel, unpack

# Paced so that a long answer is still running while its load is read.
PACED = {"M3UI_SIM_UNTHROTTLED": "0", "M3UI_SIM_DECODE_TPS": "8"}
LONG = {"messages": [{"role": "user", "content": "Write a long story about a lighthouse."}], "max_tokens": 400}


@pytest.fixture(scope="module")
def sim() -> Iterator[SimProcess]:
    with running_sim(sim_settings(free_port()), PACED) as process:
        yield process


def _dataclass_fields(source: Path, *classes: str) -> list[str]:
    tree = ast.parse(source.read_text())
    found = {node.name: node for node in ast.walk(tree) if isinstance(node, ast.ClassDef)}
    return [stmt.target.id for name in classes for stmt in found[name].body
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)]


@pytest.mark.wheel
def test_get_load_has_the_fields_of_the_wheels_get_load_req_output_in_order(sim: SimProcess) -> None:
    root = unpack(fetch_wheel("sglang-kt", "0.7.2"), "sglang/srt/managers/io_struct.py")
    expected = _dataclass_fields(root / "sglang/srt/managers/io_struct.py", "BaseReq", "GetLoadReqOutput")
    (load,) = httpx.get(f"{sim.url}/get_load", timeout=5).json()
    assert list(load) == expected
    assert (load["rid"], load["http_worker_ipc"], load["dp_rank"]) == (None, None, 0)


def test_get_load_counts_a_running_request_and_its_tokens_then_falls_back_to_zero(sim: SimProcess) -> None:
    idle = httpx.get(f"{sim.url}/get_load", timeout=5).json()[0]
    assert (idle["num_reqs"], idle["num_waiting_reqs"], idle["num_tokens"]) == (0, 0, 0)
    answer = threading.Thread(target=stream_chat, args=(sim.url, LONG))
    answer.start()
    try:
        busy = _poll(sim, lambda load: load["num_reqs"] == 1 and load["num_tokens"] > 0)
        assert busy["num_waiting_reqs"] == 0
        flush = httpx.post(f"{sim.url}/flush_cache", timeout=5)
        assert flush.status_code == 400 and flush.text.startswith("Cache flushed.")  # sglang's text, refused
    finally:
        answer.join(timeout=120)
    _poll(sim, lambda load: load["num_reqs"] == 0 and load["num_tokens"] == 0)
    assert httpx.post(f"{sim.url}/flush_cache", timeout=5).status_code == 200
    assert httpx.get(f"{sim.url}/flush_cache", timeout=5).status_code == 200
    assert "Endpoint '/get_load' is deprecated" in sim.output  # logged on every call, as sglang does


def _poll(sim: SimProcess, done: Callable[[dict], bool], timeout: float = 20.0) -> dict:
    deadline = time.monotonic() + timeout
    load: dict = {}
    while time.monotonic() < deadline:
        load = httpx.get(f"{sim.url}/get_load", timeout=5).json()[0]
        if done(load):
            return load
        time.sleep(0.05)
    raise AssertionError(f"load never matched; last {load}")
