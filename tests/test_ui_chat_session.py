"""Running one answer for a browser session against a real HTTP server: throttled updates, stop that reaches
the server, approval, errors kept as notes with the partial text, the per-answer GPU hit rate hook."""

from __future__ import annotations

import threading
import time

import pytest

from m3ui.chat_session import (
    AnswerRequest,
    AnswerRun,
    ApprovalRequested,
    ChatRunner,
    LiveAnswer,
    SessionBusy,
    transcript,
)
from m3ui.client import ChatClient, EndpointConfig, GenerationSettings
from m3ui.conversation import AssistantTurn, Conversation, LoopFinished, LoopOptions, ToolTurn, UserTurn
from m3ui.conversation.library import new_chat
from m3ui.tools import builtin_registry
from tests.sse_replay import (
    DONE,
    JsonReply,
    ReplayServer,
    SseReply,
    answer_reply,
    chunk,
    tool_calls_reply,
    usage_chunk,
)

QUESTION = new_chat().with_conversation(Conversation().ask("What is 6*7?"))
SETTINGS = GenerationSettings(thinking_mode="enabled")


def runner_for(server: ReplayServer | None, hit_rate=None, engine_failure=None) -> ChatRunner:
    endpoint = EndpointConfig(base_url=server.base_url) if server else None
    return ChatRunner(lambda: endpoint, lambda: "Simulated engine starting (40%)", hit_rate, engine_failure)


def streamed(text: str, pieces: int, delay_s: float, reasoning: str = "") -> SseReply:
    size = max(1, len(text) // pieces)
    events = [chunk(content="", role="assistant")] + ([chunk(reasoning=reasoning)] if reasoning else [])
    events += [chunk(content=text[i:i + size]) for i in range(0, len(text), size)]
    return SseReply((*events, chunk(finish_reason="stop"), usage_chunk(9, len(events)), DONE), delay_s=delay_s)


def test_updates_come_at_most_every_50_ms_and_the_last_one_saves_the_whole_answer():
    text = "".join(f"{i}, " for i in range(400))
    with ReplayServer([streamed(text, 400, 0.002, reasoning="count them")]) as server:
        updates, stamps = [], []
        for update in runner_for(server).answer("s1", AnswerRequest(QUESTION, SETTINGS)):
            updates.append(update)
            stamps.append(time.monotonic())
    final = updates[-1]
    assert final.done and not any(u.done for u in updates[:-1])
    answer = final.chat.conversation.turns[-1]
    assert answer.content == text and answer.reasoning == "count them" and answer.stats.completion_tokens > 0
    showing = [at for update, at in zip(updates, stamps, strict=True) if update.live and not update.live[-1].empty]
    live = [b - a for a, b in zip(showing, showing[1:], strict=False)]  # the first text comes at once
    assert len(updates) >= 4, "the answer must show while it streams"
    assert len(updates) <= (stamps[-1] - stamps[0]) / 0.05 + 4, "no more than one update per 50 ms"
    assert all(gap > 0.03 for gap in live), live
    shown = [u.live[-1].content for u in updates if u.live]
    assert shown == sorted(shown, key=len) and text.startswith(shown[-1])


def test_stop_disconnects_from_the_server_and_keeps_the_partial_answer_with_a_note():
    reply = SseReply((chunk(content="", role="assistant"), chunk(content="1, 2, 3"),), hold_open_s=20)
    with ReplayServer([reply]) as server:
        runner = runner_for(server)
        updates = runner.answer("s1", AnswerRequest(QUESTION, SETTINGS))
        for update in updates:
            if update.live and update.live[-1].content:
                break
        started = time.monotonic()
        assert runner.runs.stop("s1")
        final = list(updates)[-1]
        assert time.monotonic() - started < 3
        assert server.client_disconnected.wait(5), "the engine must see the disconnect (and abort the request)"
    assert final.done
    last = final.chat.conversation.turns[-1]
    assert last == AssistantTurn("1, 2, 3", "", (), last.stats, "cancelled", last.at) and last.at is not None
    assert [(n.kind, n.after_turn) for n in final.chat.notes] == [("stopped", 1)]
    assert not runner.runs.running("s1")


def test_closing_the_update_stream_early_stops_the_run_and_frees_the_session():
    reply = SseReply((chunk(content="", role="assistant"), chunk(content="partial")), hold_open_s=20)
    with ReplayServer([reply]) as server:
        runner = runner_for(server)
        updates = runner.answer("s1", AnswerRequest(QUESTION, SETTINGS))
        next(updates)
        deadline = time.monotonic() + 10
        while not server.requests:  # closed before the request went out, the engine has nothing to abort
            assert time.monotonic() < deadline
            time.sleep(0.01)
        updates.close()  # what Gradio does when the page goes away
        assert server.client_disconnected.wait(5)
    assert not runner.runs.running("s1")


def test_a_second_answer_in_the_same_session_is_refused_while_one_streams():
    reply = SseReply((chunk(content="", role="assistant"),), hold_open_s=20)
    with ReplayServer([reply, answer_reply("ok")]) as server:
        runner = runner_for(server)
        first = runner.answer("s1", AnswerRequest(QUESTION, SETTINGS))
        next(first)
        deadline = time.monotonic() + 10
        while not server.requests:  # the held-open reply must go to the first answer
            assert time.monotonic() < deadline
            time.sleep(0.01)
        with pytest.raises(SessionBusy):
            next(runner.answer("s1", AnswerRequest(QUESTION, SETTINGS)))
        other = list(runner.answer("s2", AnswerRequest(QUESTION, SETTINGS)))  # another page is not blocked
        assert other[-1].chat.conversation.turns[-1].content == "ok"
        first.close()


def test_engine_not_ready_keeps_the_question_and_says_to_retry():
    (update,) = runner_for(None).answer("s1", AnswerRequest(QUESTION, SETTINGS))
    assert update.done and update.chat.conversation.turns == QUESTION.conversation.turns
    (note,) = update.chat.notes
    assert note.kind == "error" and note.after_turn == 0
    assert "not ready (Simulated engine starting (40%))" in note.text and "Regenerate" in note.text


@pytest.mark.parametrize("reply, expected", [
    (JsonReply(400, {"object": "error", "message": "max_tokens is too large", "type": "BadRequestError",
                     "code": 400}), "The engine refused the request: HTTP 400: max_tokens is too large"),
    (JsonReply(503, {"object": "error", "message": "overloaded", "code": 503}), "The engine failed: HTTP 503"),
    (SseReply((chunk(content="", role="assistant"), 'data: {"error": {"message": "context overflow", '
               '"code": 400}}\n\n', DONE)), "The engine stopped with an error: context overflow"),
    (SseReply((chunk(content="", role="assistant"), chunk(finish_reason="abort"), DONE)),
     "The engine aborted the request"),
])
def test_errors_become_a_note_and_the_question_stays(reply, expected):
    with ReplayServer([reply]) as server:
        final = list(runner_for(server).answer("s1", AnswerRequest(QUESTION, SETTINGS)))[-1]
    assert final.chat.conversation.turns == QUESTION.conversation.turns
    (note,) = final.chat.notes
    assert note.kind == "error" and note.text.startswith(expected) and "press Regenerate" in note.text


def test_text_received_before_a_broken_stream_is_kept():
    reply = SseReply((chunk(content="", role="assistant"), chunk(reasoning="hmm"), chunk(content="The answer is")),
                     cut_off=True)
    with ReplayServer([reply]) as server:
        final = list(runner_for(server).answer("s1", AnswerRequest(QUESTION, SETTINGS)))[-1]
    turns = final.chat.conversation.turns
    assert turns[-1] == AssistantTurn("The answer is", "hmm", at=turns[-1].at) and turns[-1].at is not None
    assert final.chat.notes[0].kind == "error" and final.chat.notes[0].after_turn == 1


BROKEN = SseReply((chunk(content="", role="assistant"), chunk(content="The answer is")), cut_off=True)


def test_a_broken_stream_is_said_once_in_plain_words():
    with ReplayServer([BROKEN]) as server:
        final = list(runner_for(server).answer("s1", AnswerRequest(QUESTION, SETTINGS)))[-1]
    (note,) = final.chat.notes
    assert note.text == ("The engine stopped in the middle of the answer (its connection closed). Your message is "
                         "kept: press Regenerate to try again.")


def test_an_engine_that_died_mid_answer_is_explained_with_its_own_diagnosis():
    diagnosis = iter([None, None, "The engine was killed by SIGKILL (out of memory?); an admin can restart it."])
    with ReplayServer([BROKEN]) as server:  # the supervisor notices the death a moment after the stream breaks
        final = list(runner_for(server, engine_failure=lambda: next(diagnosis)).answer(
            "s1", AnswerRequest(QUESTION, SETTINGS)))[-1]
    (note,) = final.chat.notes
    assert note.text == ("The answer broke off because the engine stopped. The engine was killed by SIGKILL (out of "
                         "memory?); an admin can restart it. Your message is kept: press Regenerate once the engine "
                         "is ready again.")
    assert final.chat.conversation.turns[-1].content == "The answer is"


def test_an_engine_failure_is_not_looked_up_for_an_error_the_engine_explained_itself():
    asked = []
    reply = JsonReply(400, {"object": "error", "message": "max_tokens is too large", "code": 400})
    with ReplayServer([reply]) as server:
        list(runner_for(server, engine_failure=lambda: asked.append(1)).answer("s1", AnswerRequest(QUESTION,
                                                                                                   SETTINGS)))
    assert asked == []


def test_an_answer_cut_at_max_tokens_says_so():
    events = (chunk(content="", role="assistant"), chunk(reasoning="long thought"), chunk(finish_reason="length"),
              DONE)
    with ReplayServer([SseReply(events)]) as server:
        final = list(runner_for(server).answer("s1", AnswerRequest(QUESTION, SETTINGS)))[-1]
    (note,) = final.chat.notes
    assert note.kind == "cut" and "while thinking" in note.text and "Max tokens" in note.text


def test_the_answer_shows_before_its_hit_rate_is_looked_up_then_the_figure_joins_the_stats():
    seen = []

    def hit_rate(start: float, end: float) -> float:
        seen.append((start, end))
        return 0.634

    with ReplayServer([answer_reply("42")]) as server:
        *_, answered, final = runner_for(server, hit_rate).answer("s1", AnswerRequest(QUESTION, SETTINGS))
    assert answered.phase == "answered" and final.phase == "done"
    assert answered.chat.conversation.turns[-1].content == "42" and answered.chat.notes == ()  # shown before
    (start, end), = seen
    assert 0 < end - start < 5 and abs(time.time() - end) < 5
    step = transcript(final.chat)[-1]
    assert step.remarks == ("GPU expert hit rate 63%",) and step.stats_line().endswith("GPU expert hit rate 63%")


def test_a_failing_hit_rate_hook_costs_nothing():
    def broken(start: float, end: float) -> float:
        raise RuntimeError("no recorder")

    with ReplayServer([answer_reply("42")]) as server:
        final = list(runner_for(server, broken).answer("s1", AnswerRequest(QUESTION, SETTINGS)))[-1]
    assert final.chat.conversation.turns[-1].content == "42" and final.chat.notes == ()


def tool_question() -> AnswerRequest:
    chat = new_chat().with_conversation(Conversation().ask("Weather in Paris?"))
    return AnswerRequest(chat, SETTINGS, LoopOptions(), builtin_registry(), require_approval=True)


def run_until_approval(runner: ChatRunner, updates):
    for update in updates:
        if update.awaiting_approval is not None:
            return update
    raise AssertionError("no approval request")


@pytest.mark.parametrize("approved", [True, False])
def test_approval_pauses_the_loop_until_the_user_decides(approved):
    replies = [tool_calls_reply(("get_weather", '{"city": "Paris"}')), answer_reply("Here it is.")]
    with ReplayServer(replies) as server:
        runner = runner_for(server)
        updates = runner.answer("s1", tool_question())
        waiting = run_until_approval(runner, updates)
        assert waiting.awaiting_approval.name == "get_weather"
        assert waiting.live[-1].calls[0].status == "awaiting_approval"
        time.sleep(0.2)
        assert len(server.requests) == 1, "nothing runs before the decision"
        assert runner.runs.decide("s1", approved)
        final = list(updates)[-1]
    tool_turn = next(t for t in final.chat.conversation.turns if isinstance(t, ToolTurn))
    if approved:
        assert tool_turn.result.content.startswith("DEMO DATA") and not tool_turn.result.is_error
    else:
        assert tool_turn.result.is_error and "denied by user" in tool_turn.result.content
    assert final.chat.conversation.turns[-1].content == "Here it is."


def test_stop_while_waiting_for_approval_records_stopped_not_denied_and_ends_the_answer():
    with ReplayServer([tool_calls_reply(("get_weather", '{"city": "Paris"}'))]) as server:
        runner = runner_for(server)
        updates = runner.answer("s1", tool_question())
        run_until_approval(runner, updates)
        threading.Timer(0.1, runner.runs.stop, ("s1",)).start()
        final = list(updates)[-1]
    assert final.done and final.chat.notes[-1].kind == "stopped"
    assert len(server.requests) == 1
    tool_turn = next(t for t in final.chat.conversation.turns if isinstance(t, ToolTurn))
    assert tool_turn.result.content == "Error: stopped by the user before it ran"


def test_live_answer_shows_thinking_until_the_answer_starts_then_how_long_it_took():
    now = [100.0]
    live = LiveAnswer(clock=lambda: now[0])
    with ReplayServer([answer_reply("42", reasoning="six sevens")]) as server:
        run = AnswerRun(ChatClient(EndpointConfig(base_url=server.base_url)), builtin_registry(), SETTINGS,
                        LoopOptions(), QUESTION.conversation, interval_s=0)
        events = [event for batch in run.start().batches() for event in batch]
    views = []
    for event in events:
        live.feed(event)
        now[0] += 0.5
        views.append(live.steps()[-1] if live.steps() else None)
    thinking = [v for v in views if v is not None and v.thinking]
    assert thinking and thinking[0].reasoning == "six sevens" and thinking[0].thinking_s is None
    first_answer = next(v for v in views if v is not None and v.content)
    assert not first_answer.thinking and first_answer.thinking_s == pytest.approx(0.5)
    assert isinstance(events[-1], LoopFinished)
    saved = live.settle(QUESTION)
    assert [type(t) for t in saved.conversation.turns] == [UserTurn, AssistantTurn]


def test_an_approval_request_is_handed_over_at_once():
    with ReplayServer([tool_calls_reply(("calculator", '{"expression": "1+1"}'))]) as server:
        run = AnswerRun(ChatClient(EndpointConfig(base_url=server.base_url)), builtin_registry(), SETTINGS,
                        LoopOptions(max_steps=1), QUESTION.conversation, require_approval=True, interval_s=10)
        batches = run.start().batches()
        batch = next(batches)
        while not isinstance(batch[-1], ApprovalRequested):
            batch = next(batches)
        run.decide(False)
        assert isinstance(list(batches)[-1][-1], LoopFinished)


def test_updates_slow_down_when_many_answers_stream_at_once():
    from m3ui.chat_session.answer_run import MAX_INTERVAL_S, update_interval

    assert update_interval(1) == update_interval(2) == 0.05
    assert update_interval(16) == pytest.approx(0.32)  # 50 updates a second for the whole server
    assert update_interval(10_000) == MAX_INTERVAL_S


def test_the_first_token_is_handed_over_at_once_not_after_an_update_interval():
    head = (chunk(content="", role="assistant"), chunk(content="Hello"))  # and then the engine thinks on
    with ReplayServer([SseReply(head, delay_s=0.05, hold_open_s=30)]) as server:
        run = AnswerRun(ChatClient(EndpointConfig(base_url=server.base_url)), builtin_registry(), SETTINGS,
                        LoopOptions(), QUESTION.conversation, interval_s=10)
        started = time.monotonic()
        batches = run.start().batches()
        batch = next(batches)
        while not any(getattr(event, "text", "") for event in batch):
            batch = next(batches)
        waited = time.monotonic() - started
        run.stop()
        list(batches)
    assert waited < 2, f"the first token waited {waited:.1f} s for the update interval"
