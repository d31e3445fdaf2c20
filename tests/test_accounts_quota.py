"""Hard quotas on a real simulated engine: every engine request reserves its prompt bound plus its max_tokens
(capped at what is left of the day's quota) before it is sent and settles the real figure at its end, so
concurrent answers never overshoot; an early request nobody takes is aborted on the engine by its request id and
charged what the engine reports for it, and one person cannot hold every early-request slot."""

from __future__ import annotations

import json
import threading
import time
import urllib.request
from dataclasses import replace

import pytest

from m3ui.accounts.meter import AnswerMeter
from m3ui.accounts.usage import QuotaRefused, prompt_bound
from m3ui.chat_session import AnswerRequest
from m3ui.chat_session.early_starts import EarlyStarts
from m3ui.client import ChatClient, EndpointConfig, GenerationSettings
from m3ui.conversation import AssistantTurn, Conversation
from m3ui.conversation.library import new_chat
from m3ui.conversation.openai_messages import to_openai_messages
from m3ui.ui.chat.controls import link_runner
from tests.account_calls import settled
from tests.sse_replay import ReplayServer, SseReply, chunk
from tests.test_accounts_usage import ledger, link
from tests.test_ui_chat_early_start import wait_for

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


def engine_prompt_tokens(link, question: str = QUESTION) -> int:
    """What the engine itself counts for `question`'s prompt (a request of one token, read over HTTP)."""
    endpoint = link.endpoint()
    body = json.dumps({"model": endpoint.model, "messages": [{"role": "user", "content": question}],
                       "max_tokens": 1, "chat_template_kwargs": {"thinking_mode": "adaptive"}}).encode()
    request = urllib.request.Request(f"{endpoint.base_url}/chat/completions", body,
                                     {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as answer:
        return int(json.load(answer)["usage"]["prompt_tokens"])


def test_a_cancelled_early_request_is_charged_and_slots_are_shared(link, ledger):
    runner = link_runner(link, meter=AnswerMeter(ledger))
    for page in range(6):  # bob asks early from six pages: only his newest four stay
        assert runner.send_early(f"page-{page}", QUESTION, ask("bob"))
    assert runner.send_early("carol-page", QUESTION, ask("carol")), "a slot is left for carol"
    assert len(runner.early) == 5
    bound = prompt_bound([{"role": "user", "content": QUESTION}], [])
    prompt = engine_prompt_tokens(link)
    bob = settled(ledger, "bob", 2)  # the two cancelled ones are charged what the engine reported for them
    assert bob.requests == 2 and bob.prompt_tokens == 2 * prompt < 2 * bound
    assert bob.completion_tokens >= 2, "each ran at least its one decode pass after the abort"
    assert runner.early.take("carol-page", "mallory", QUESTION) is None  # another person's: cancelled, charged
    carol = settled(ledger, "carol", 1)
    assert carol.prompt_tokens == prompt and carol.completion_tokens >= 1
    for page in range(2, 6):  # bob's four still waiting: cancelled, each charged once
        early = runner.early.take(f"page-{page}", "bob", QUESTION)
        assert early is not None
        early.cancel()
    assert settled(ledger, "bob", 6).prompt_tokens == 6 * prompt


def test_an_early_request_nobody_takes_is_charged_what_the_engine_reports(link, ledger):
    """Aborted by its request id (POST /abort_request), its stream still ends with the engine's usage chunk: the
    ledger records that prompt and what it generated before the abort, not the prompt bound."""
    runner = link_runner(link, meter=AnswerMeter(ledger))
    count = "Count to 1000."  # the sim answers it in 2002 tokens, 5 s at its 400 tokens/s
    request = AnswerRequest(new_chat().with_conversation(Conversation().ask(count)), GenerationSettings(), user="bob")
    assert runner.send_early("page-a", count, request)
    early = runner.early.take("page-a", "bob", count)
    assert early is not None
    time.sleep(0.5)  # the engine generates meanwhile: nobody reads it
    early.cancel()  # what an answer asking something else does
    bob = settled(ledger, "bob", 1)
    assert bob.prompt_tokens == engine_prompt_tokens(link, count)
    assert 10 < bob.completion_tokens < 2002, "what it generated before the abort: not 0, not the whole answer"
    assert ledger.held.total(ledger.accounts.get("bob").id) == 0


def test_sixteen_concurrent_asks_keep_the_ledger_consistent(link, ledger):
    """16 pages ask early at once; half their answers take the request, the others ask something else (which
    cancels it): every reservation settles once, nothing stays held, and the day stays within the quota."""
    quota = 6000
    ledger.accounts.set_quota("bob", quota)
    runner = link_runner(link, meter=AnswerMeter(ledger))
    runner.early = EarlyStarts(per_person=16)  # all 16 pending at once, none pushed out by the per-person share

    def one(i: int) -> None:
        runner.send_early(f"p{i}", QUESTION, ask("bob", max_tokens=300))
        early = runner.early.take(f"p{i}", "bob", QUESTION)  # what the answer's handler does (the controller)
        if i % 2:
            if early is not None:
                early.cancel()
        else:
            list(runner.answer(f"p{i}", replace(ask("bob", max_tokens=300), early=early)))

    threads = [threading.Thread(target=one, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    bob_id = ledger.accounts.get("bob").id
    deadline = time.monotonic() + 20
    while ledger.held.total(bob_id) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert ledger.held.total(bob_id) == 0, "every reservation settled"
    (bob,) = ledger.days("bob")
    assert bob.tokens <= quota, f"{bob.tokens} tokens used on a {quota}-token quota"
    assert bob.requests >= 8 and bob.completion_tokens > 0


def test_without_an_abort_route_an_unclaimed_early_request_is_charged_its_prompt_bound(ledger):
    """A server with no /abort_request (sglang-router 0.3.2, another OpenAI server) answers 404: the request is
    closed as before, and charged its prompt bound."""
    with ReplayServer([SseReply((chunk(content="never read"),), hold_open_s=10)]) as server:
        client = ChatClient(EndpointConfig(base_url=server.base_url))
        messages = [{"role": "user", "content": QUESTION}]
        early = AnswerMeter(ledger).client(client, "bob").send_early(messages, GenerationSettings(max_tokens=100))
        wait_for(lambda: len(server.requests) == 1)
        early.cancel()
        assert server.client_disconnected.wait(5), "the connection is closed"
        bob = settled(ledger, "bob", 1)
    assert server.aborts == [{"rid": server.requests[0]["rid"]}]
    assert (bob.prompt_tokens, bob.completion_tokens) == (prompt_bound(messages, []), 0)
