"""Hard quotas on a real simulated engine: every engine request reserves its prompt bound plus its max_tokens
(capped at what is left of the day's quota) before it is sent and settles the real figure at its end, so
concurrent answers never overshoot; an early request nobody takes is charged, and one person cannot hold every
early-request slot."""

from __future__ import annotations

import threading

import pytest

from m3ui.accounts.meter import AnswerMeter
from m3ui.accounts.usage import QuotaRefused, prompt_bound
from m3ui.chat_session import AnswerRequest
from m3ui.client import GenerationSettings
from m3ui.conversation import AssistantTurn, Conversation
from m3ui.conversation.library import new_chat
from m3ui.conversation.openai_messages import to_openai_messages
from m3ui.ui.chat.controls import link_runner
from tests.test_accounts_usage import ledger, link

FIXTURES = (ledger, link)  # test_accounts_usage's: a simulated engine, and a ledger over two accounts

QUESTION = "Write a long story about a lighthouse keeper and the sea, in many paragraphs."


def ask(user: str | None, max_tokens: int = 4096) -> AnswerRequest:
    return AnswerRequest(new_chat().with_conversation(Conversation().ask(QUESTION)),
                         GenerationSettings(max_tokens=max_tokens), user=user)


def test_sixteen_concurrent_answers_stay_within_the_quota(link, ledger):
    quota = 3000
    ledger.accounts.set_quota("bob", quota)
    runner = link_runner(link, meter=AnswerMeter(ledger))
    finals: list[object] = [None] * 16

    def one(i: int) -> None:
        finals[i] = list(runner.answer(f"s{i}", ask("bob", max_tokens=400)))[-1]

    threads = [threading.Thread(target=one, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    answered = [f for f in finals if isinstance(f.chat.conversation.turns[-1], AssistantTurn)]
    refused = [f for f in finals if not isinstance(f.chat.conversation.turns[-1], AssistantTurn)]
    (bob,) = ledger.days("bob")
    assert bob.tokens <= quota, f"{bob.tokens} tokens used on a {quota}-token quota"
    assert answered and refused, "some answers fit the quota, the rest are refused"
    assert all("Daily token quota" in f.chat.notes[-1].text for f in refused)
    assert all(f.chat.notes[-1].kind == "refused" and "Regenerate" not in f.chat.notes[-1].text for f in refused), \
        "a refusal is not an error to retry (issue 26 #7)"
    assert bob.requests == len(answered) and ledger.held.total(ledger.accounts.get("bob").id) == 0


def test_a_huge_max_tokens_is_capped_at_what_is_left(link, ledger):
    runner = link_runner(link, meter=AnswerMeter(ledger))
    conversation = Conversation().ask(QUESTION)
    bound = prompt_bound(to_openai_messages(conversation, False), [])
    quota = bound + 12  # room for 12 completion tokens
    ledger.accounts.set_quota("bob", quota)
    final = list(runner.answer("s1", ask("bob", max_tokens=100_000)))[-1]
    turn = final.chat.conversation.turns[-1]
    assert isinstance(turn, AssistantTurn) and turn.finish_reason == "length"
    (bob,) = ledger.days("bob")
    assert bob.completion_tokens == 12 and bob.tokens <= quota
    with pytest.raises(QuotaRefused) as refused:  # what is left cannot even hold the prompt now
        ledger.reserve("bob", bound, 100)
    assert refused.value.retry_after_s > 0


def test_a_cancelled_early_request_is_charged_and_slots_are_shared(link, ledger):
    runner = link_runner(link, meter=AnswerMeter(ledger))
    for page in range(6):  # bob asks early from six pages: only his newest four stay
        assert runner.send_early(f"page-{page}", QUESTION, ask("bob"))
    assert runner.send_early("carol-page", QUESTION, ask("carol")), "a slot is left for carol"
    assert len(runner.early) == 5
    bound = prompt_bound([{"role": "user", "content": QUESTION}], [])
    (bob,) = ledger.days("bob")  # the two cancelled ones are charged their prompt
    assert bob.tokens == 2 * bound and bob.requests == 2
    assert runner.early.take("carol-page", "mallory", QUESTION) is None  # another person's: cancelled, charged
    assert ledger.days("carol")[0].tokens == bound
