"""Usage per person on a real simulated engine: each finished answer adds its tokens, one request and its engine
time to the person's day; a used-up daily quota refuses the next request before anything is sent."""

from __future__ import annotations

import re

import pytest

from launch.command import Engine
from launch.supervisor import Supervisor
from m3ui.accounts import AccountStore
from m3ui.accounts.meter import AnswerMeter
from m3ui.accounts.usage import DayUsage, UsageLedger
from m3ui.chat_session import AnswerRequest
from m3ui.client import GenerationSettings
from m3ui.conversation import AssistantTurn, Conversation
from m3ui.conversation.library import new_chat
from m3ui.engine_link import EngineLink
from m3ui.services import simulated_settings
from m3ui.ui.chat.controls import link_runner
from m3ui.ui.usage_table import usage_chart, usage_table


@pytest.fixture(scope="module")
def link(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    mp.setenv("M3UI_SIM_STARTUP_SECONDS", "0.3")
    mp.setenv("M3UI_SIM_DECODE_TPS", "400")
    supervisor = Supervisor(tmp_path_factory.mktemp("usage") / "m3ui", tick_s=0.05)
    link = EngineLink(supervisor)
    assert link.launch(simulated_settings(), Engine("sim")).ok
    assert supervisor.wait_ready(30), supervisor.snapshot().diagnosis
    yield link
    supervisor.close(grace=1)
    mp.undo()


@pytest.fixture
def ledger(tmp_path):
    store = AccountStore.open(tmp_path)
    store.add("bob", "bobs-password")
    store.add("carol", "carols-password")
    yield UsageLedger(store)
    store.close()


def ask(user: str | None, question: str = "What is 17 * 23?") -> AnswerRequest:
    return AnswerRequest(new_chat().with_conversation(Conversation().ask(question)), GenerationSettings(),
                         user=user)


def test_each_answer_is_counted_for_its_person(link, ledger):
    runner = link_runner(link, meter=AnswerMeter(ledger))
    for _ in range(2):
        final = list(runner.answer("s1", ask("bob")))[-1]
        assert isinstance(final.chat.conversation.turns[-1], AssistantTurn)
    list(runner.answer("s2", ask(None)))  # no account: nothing recorded, nothing fails
    (bob,) = ledger.days("bob")
    assert bob.requests == 2 and bob.prompt_tokens > 0 and bob.completion_tokens > 0 and bob.engine_seconds > 0
    assert ledger.days("carol") == [] and len(ledger.days()) == 1


def test_a_used_up_quota_refuses_before_sending(link, ledger):
    runner = link_runner(link, meter=AnswerMeter(ledger))
    list(runner.answer("s1", ask("bob")))
    used = ledger.days("bob")[0].tokens
    ledger.accounts.set_quota("bob", used)
    final = list(runner.answer("s1", ask("bob")))[-1]
    assert final.done and not isinstance(final.chat.conversation.turns[-1], AssistantTurn), "nothing was sent"
    assert [n.kind for n in final.chat.notes] == ["refused"]  # a refusal, not an error to retry
    assert f"Daily token quota reached: {used:,} of {used:,}" in final.chat.notes[0].text
    assert ledger.days("bob")[0].requests == 1, "the refused request is not counted"
    carol = list(runner.answer("s2", ask("carol")))[-1]  # another person's quota is their own
    assert isinstance(carol.chat.conversation.turns[-1], AssistantTurn)


def test_the_admin_chart_has_one_bar_per_person_scaled_to_the_heaviest():
    days = [DayUsage("bob", "2026-12-02", 300, 700, 3, 4.0), DayUsage("ann", "2026-12-02", 100, 150, 1, 1.0),
            DayUsage("bob", "2026-12-01", 200, 800, 2, 3.0), DayUsage("<x>", "2026-12-01", 0, 0, 1, 0.1)]
    chart = usage_chart(days)
    bars = re.findall(r'usage-name">([^<]*)<.*?width:([\d.]+)%.*?figure">([\d,]+)<', chart)
    assert bars == [("bob", "100.0", "2,000"), ("ann", "12.5", "250"), ("&lt;x&gt;", "0.0", "0")]
    assert "2026-12-01 to 2026-12-02" in chart
    assert "m3-usage-chart" in usage_table(days) and "m3-usage-chart" not in usage_table(days, with_user=False)
