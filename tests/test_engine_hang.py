"""A hung engine (SIGSTOP: its process alive, its sockets open, nothing answered) mid-answer, as the app runs it:
the supervisor launches the simulated engine with its expert recorder on, the monitor dumps it, and the chat asks
for each answer's GPU hit rate. The answer ends with its stall error within the stall limit plus 2 s (the end of
an answer that broke off does not wait on the stopped engine), and the header says the engine is not responding
(its health probe times out), until it answers again."""

from __future__ import annotations

import os
import signal
import time

import pytest

from launch.command import Engine
from launch.supervisor import Supervisor
from m3ui.chat_session import AnswerRequest, AnswerUpdate
from m3ui.client import GenerationSettings
from m3ui.conversation import Conversation
from m3ui.conversation.library import new_chat
from m3ui.engine_link import EngineLink
from m3ui.monitor.sampler import SamplerConfig
from m3ui.monitor.service import MonitorService
from m3ui.services import simulated_settings
from m3ui.ui.chat.controls import link_runner
from tests.waiting import wait_until

STALL_S = 3.0
ENGINE_ENV = {"M3UI_SIM_STARTUP_SECONDS": "0.3", "M3UI_SIM_DECODE_TPS": "40", "M3UI_SIM_UNTHROTTLED": "0"}


@pytest.fixture
def app(tmp_path, monkeypatch):
    for key, value in ENGINE_ENV.items():
        monkeypatch.setenv(key, value)  # the supervisor starts the sim with this environment
    supervisor = Supervisor(tmp_path / "data", tick_s=0.05)
    link = EngineLink(supervisor)
    monitor = MonitorService(link, SamplerConfig(interval_s=0.2, expert_dump_every_s=1.0), follow_every_s=0.1)
    monitor.start()
    try:
        assert link.launch(simulated_settings(), Engine("sim")).ok and supervisor.wait_ready(30)
        assert wait_until(lambda: monitor.sampler.latest_experts().status == "recording", 20)
        yield link, monitor
    finally:
        pid = supervisor.snapshot().pid
        if pid is not None:
            os.kill(pid, signal.SIGCONT)
        monitor.stop()
        supervisor.close(grace=1)


def test_a_stopped_engine_ends_the_answer_at_the_stall_limit_and_the_header_says_not_responding(app):
    link, monitor = app
    runner = link_runner(link, monitor.answer_gpu_hit_rate)
    pid = link.supervisor.snapshot().pid
    stopped_at: list[float] = []
    answered_at: list[float] = []
    request = AnswerRequest(new_chat().with_conversation(Conversation().ask("Explain how a CPU cache works.")),
                            GenerationSettings(thinking_mode="disabled", stall_seconds=STALL_S, max_tokens=2000))
    final: AnswerUpdate | None = None
    for final in runner.answer("page", request):
        if not stopped_at and final.live and final.live[-1].content:
            os.kill(pid, signal.SIGSTOP)
            stopped_at.append(time.monotonic())
        if final.phase in ("answered", "done") and not answered_at:
            answered_at.append(time.monotonic())
    ended = time.monotonic()
    assert stopped_at and final is not None and final.done
    notes = [note.text for note in final.chat.notes]
    assert any("stall limit" in note for note in notes), notes
    assert answered_at[0] - stopped_at[0] < STALL_S + 2.0
    assert ended - stopped_at[0] < STALL_S + 2.0, f"the answer ended {ended - stopped_at[0]:.1f} s after the stop"
    assert final.chat.conversation.turns[-1].content, "what arrived before the stop is kept"
    assert wait_until(lambda: "not responding" in link.status().label, 12), link.status().label
    os.kill(pid, signal.SIGCONT)
    assert wait_until(lambda: "not responding" not in link.status().label and link.status().ready, 15), \
        link.status().label
