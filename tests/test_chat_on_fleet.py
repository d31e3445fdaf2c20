"""Chat answers through the real sglang-router when the worker serving one dies mid-answer: the router just closes
the stream, and the chat says plainly that the worker stopped, how many healthy workers the fleet has, and that
Regenerate retries on another; what arrived is kept. And the router's log (a line per request) stays bounded.
One fleet (two slow simulated workers, the log bound lowered to a few kB) for the module."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from launch import engine_log
from launch.command import Engine
from launch.fleet.router_settings import RouterSettings
from launch.fleet.spec import Fleet, LaunchedWorker
from launch.fleet.supervisor import FleetSupervisor
from launch.supervisor import Supervisor
from m3ui.chat_session import AnswerRequest
from m3ui.client import GenerationSettings
from m3ui.conversation import AssistantTurn, Conversation
from m3ui.conversation.library import new_chat
from m3ui.engine_link import EngineLink
from m3ui.ui.chat.controls import link_runner
from tests.fleet_process import free_block, serving_fleet
from tests.sim_process import free_port, sim_settings

pytest.importorskip("sglang_router")
LOG_BOUND = 8 << 10
SLOW = {"M3UI_SIM_UNTHROTTLED": "0", "M3UI_SIM_DECODE_TPS": "15"}  # slow enough to die mid-answer


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FleetSupervisor]:
    workers = tuple(LaunchedWorker(sim_settings(free_port())) for _ in range(2))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(engine_log, "LOG_ROTATE_BYTES", LOG_BOUND)
        with serving_fleet(Fleet(RouterSettings(port=free_block(2)), workers, Engine("sim")),
                           tmp_path_factory.mktemp("fleet"), SLOW) as supervisor:
            yield supervisor


def _serving(fleet: FleetSupervisor) -> str:
    """The worker with a request running (the router chose it)."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        for url in fleet.fleet.worker_urls:
            loads = httpx.get(f"{url}/v1/loads", timeout=2, trust_env=False).json()["loads"]
            if sum(rank["num_running_reqs"] for rank in loads):
                return url
        time.sleep(0.05)
    raise AssertionError("no worker is running the request")


def test_a_worker_killed_mid_answer_is_said_plainly_and_the_answer_kept(fleet: FleetSupervisor,
                                                                         tmp_path: Path) -> None:
    link = EngineLink(Supervisor(tmp_path))
    link.attach(fleet.fleet.router.url, None)
    try:
        assert link.supervisor.wait_ready(30)
        request = AnswerRequest(new_chat().with_conversation(Conversation().ask("Explain how a CPU cache works.")),
                                GenerationSettings(thinking_mode="enabled"))
        updates = link_runner(link).answer("s1", request)
        for update in updates:
            if update.live and (update.live[-1].reasoning or update.live[-1].content):
                pid = fleet.worker_engine(_serving(fleet)).snapshot().pid  # type: ignore[union-attr]
                os.kill(pid, signal.SIGKILL)
                break
        final = list(updates)[-1]
        (note,) = final.chat.notes
        assert note.kind == "error"
        assert note.text == ("The engine serving this answer stopped mid-answer; the fleet has 1 healthy worker. "
                             "What arrived is kept: press Regenerate to retry on another.")
        answer = final.chat.conversation.turns[-1]
        assert isinstance(answer, AssistantTurn) and answer.reasoning, "what arrived before the death is kept"
    finally:
        link.supervisor.close()


def test_the_routers_log_is_rotated_past_its_bound(fleet: FleetSupervisor) -> None:
    for _ in range(20):  # a log line or more per request
        httpx.get(f"{fleet.fleet.router.url}/v1/models", timeout=5, trust_env=False)
    run_dir = fleet.snapshot().run_dir
    assert run_dir is not None
    log, rotated = run_dir / "router.log", run_dir / "router.log.1"
    deadline = time.monotonic() + 10
    while not rotated.exists():
        assert time.monotonic() < deadline, f"never rotated: router.log has {log.stat().st_size} bytes"
        time.sleep(0.1)
    assert rotated.stat().st_size >= LOG_BOUND
    time.sleep(0.5)  # a few watcher ticks
    assert log.stat().st_size < 2 * LOG_BOUND
    assert b"\0" not in log.read_bytes()  # the router appends (O_APPEND): no hole where the emptied log was
