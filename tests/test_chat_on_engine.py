"""Chat answers through the app's engine link with a real simulated engine: an engine launched without a
reasoning parser still has its thinking shown apart, and an engine killed mid-answer is explained once, in
plain words, with its own diagnosis."""

from __future__ import annotations

import os
import signal

import pytest

from launch.command import Engine
from launch.supervisor import Supervisor
from m3ui.chat_session import AnswerRequest
from m3ui.client import GenerationSettings
from m3ui.conversation import AssistantTurn, Conversation
from m3ui.conversation.library import new_chat
from m3ui.engine_link import EngineLink
from m3ui.services import simulated_settings
from m3ui.ui.chat.controls import link_runner


@pytest.fixture
def engine(tmp_path, monkeypatch):
    """Start a simulated engine with the given setting changes; returns its link once it is ready."""
    monkeypatch.setenv("M3UI_SIM_STARTUP_SECONDS", "0.3")
    supervisor = Supervisor(tmp_path / "m3ui", tick_s=0.05)

    def start(**changes: object) -> EngineLink:
        link = EngineLink(supervisor)
        assert link.launch(simulated_settings().replace(**changes), Engine("sim")).ok
        assert supervisor.wait_ready(30), supervisor.snapshot().diagnosis
        return link

    yield start
    supervisor.close(grace=1)


def ask(question: str, mode: str = "enabled") -> AnswerRequest:
    return AnswerRequest(new_chat().with_conversation(Conversation().ask(question)),
                         GenerationSettings(thinking_mode=mode))


def test_without_a_reasoning_parser_the_thinking_still_goes_to_the_reasoning_pane(engine):
    link = engine(reasoning_parser=None)
    runner = link_runner(link)
    for mode in ("enabled", "adaptive"):  # the template opens the block / the model writes its own opener
        final = list(runner.answer("s1", ask("What is 17 * 23?", mode)))[-1]  # the sim thinks on arithmetic
        answer = final.chat.conversation.turns[-1]
        assert isinstance(answer, AssistantTurn) and final.chat.notes == (), mode
        assert "mm:think" not in answer.content + answer.reasoning, (mode, answer)
        assert answer.reasoning.startswith("The user wants 17 × 23") and answer.content == "391", (mode, answer)


def test_an_engine_killed_mid_answer_is_explained_once_with_its_diagnosis(engine, monkeypatch):
    monkeypatch.setenv("M3UI_SIM_DECODE_TPS", "15")  # slow enough to be killed mid-answer
    link = engine()
    updates = link_runner(link).answer("s1", ask("Explain how a CPU cache works."))
    for update in updates:
        if update.live and (update.live[-1].reasoning or update.live[-1].content):
            os.kill(link.supervisor.snapshot().pid, signal.SIGKILL)
            break
    final = list(updates)[-1]
    (note,) = final.chat.notes
    assert note.kind == "error"
    assert note.text == ("The answer broke off because the engine stopped. The engine was killed by SIGKILL — "
                         "probably the out-of-memory killer; an admin can restart it from the admin panel. Your "
                         "message is kept: press Regenerate once the engine is ready again.")
    assert final.chat.conversation.turns[-1].reasoning, "what arrived before the death is kept"
