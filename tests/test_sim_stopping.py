"""Stopping conditions over real HTTP: `stop`, `stop_regex`, `no_stop_trim` and `ignore_eos`.

sglang-kt 0.7.2: schedule_batch.Req.check_finished tests max_new_tokens first, then the end-of-turn token
(skipped with ignore_eos), then _check_str_based_finish: each `stop` string, then each `stop_regex`,
finishing with FINISH_MATCHED_STR / FINISHED_MATCHED_REGEX, whose to_json is {"type": "stop", "matched": the
string or the regex}; serving_chat puts `matched` in matched_stop (finish chunk and non-streaming choice).
detokenizer_manager.trim_matched_stop cuts the text at output.find(matched) unless no_stop_trim.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from launch.sim.scheduler import EOS_TOKEN_ID
from tests.sim_process import SimProcess, free_port, running_sim, sim_settings
from tests.sim_sse import chat, stream_chat

COUNT = [{"role": "user", "content": "count to 30"}]
FULL = ", ".join(str(i) for i in range(1, 31)) + "."


@pytest.fixture(scope="module")
def sim() -> Iterator[SimProcess]:
    with running_sim(sim_settings(free_port())) as process:
        yield process


def _both(sim: SimProcess, body: dict[str, Any]) -> list[tuple[str, str, Any, int]]:
    """(content, finish_reason, matched_stop, completion_tokens), non-streaming then streamed."""
    response = chat(sim.url, body)
    assert response.status_code == 200, response.text
    choice, usage = response.json()["choices"][0], response.json()["usage"]
    streamed = stream_chat(sim.url, {**body, "stream_options": {"include_usage": True}})
    return [(choice["message"]["content"], choice["finish_reason"], choice["matched_stop"],
             usage["completion_tokens"]),
            (streamed.content, streamed.finish_reason, streamed.matched_stop, streamed.usage["completion_tokens"])]


def test_the_plain_answer_ends_on_the_end_of_turn_token(sim: SimProcess) -> None:
    for content, reason, matched, _ in _both(sim, {"messages": COUNT}):
        assert (content, reason, matched) == (FULL, "stop", EOS_TOKEN_ID)


@pytest.mark.parametrize("stop", [", 7", [", 7"], ["never", ", 7", "9"]])
def test_a_stop_string_cuts_the_answer_before_it_and_is_the_matched_stop(sim: SimProcess, stop: Any) -> None:
    full_tokens = _both(sim, {"messages": COUNT})[0][3]
    for content, reason, matched, tokens in _both(sim, {"messages": COUNT, "stop": stop}):
        assert (content, reason, matched) == ("1, 2, 3, 4, 5, 6", "stop", ", 7")
        assert tokens < full_tokens


def test_the_first_stop_in_the_list_that_appears_wins(sim: SimProcess) -> None:
    # Checked after every token: "4" appears (at token "4") before ", 7" can.
    for content, _, matched, _ in _both(sim, {"messages": COUNT, "stop": [", 7", "4"]}):
        assert (content, matched) == ("1, 2, 3, ", "4")


def test_no_stop_trim_keeps_the_stop_string(sim: SimProcess) -> None:
    for content, reason, matched, _ in _both(sim, {"messages": COUNT, "stop": ", 7", "no_stop_trim": True}):
        assert (content, reason, matched) == ("1, 2, 3, 4, 5, 6, 7", "stop", ", 7")


def test_a_stop_regex_ends_the_answer_where_it_first_matches_and_the_match_stays(sim: SimProcess) -> None:
    # trim_matched_stop looks the regex up as literal text: not found, so nothing is trimmed.
    for content, reason, matched, _ in _both(sim, {"messages": COUNT, "stop_regex": r"1\d,"}):
        assert (content, reason, matched) == ("1, 2, 3, 4, 5, 6, 7, 8, 9, 10,", "stop", r"1\d,")


def test_a_stop_that_never_appears_changes_nothing(sim: SimProcess) -> None:
    for content, reason, matched, _ in _both(sim, {"messages": COUNT, "stop": ["zebra"], "stop_regex": "x{3}"}):
        assert (content, reason, matched) == (FULL, "stop", EOS_TOKEN_ID)


def test_a_stop_reached_on_the_last_allowed_token_is_a_length_finish(sim: SimProcess) -> None:
    # check_finished tests len(output_ids) >= max_new_tokens before the stop strings.
    tokens = _both(sim, {"messages": COUNT, "stop": ", 7"})[0][3]
    for _, reason, matched, used in _both(sim, {"messages": COUNT, "stop": ", 7", "max_tokens": tokens}):
        assert (reason, matched, used) == ("length", None, tokens)


def test_ignore_eos_runs_to_max_tokens_and_ends_with_length(sim: SimProcess) -> None:
    for content, reason, matched, tokens in _both(sim, {"messages": COUNT, "ignore_eos": True, "max_tokens": 150}):
        assert (reason, matched, tokens) == ("length", None, 150)
        assert content.startswith(FULL) and len(content) > len(FULL)


def test_ignore_eos_still_stops_on_a_stop_string(sim: SimProcess) -> None:
    body = {"messages": COUNT, "ignore_eos": True, "max_tokens": 150, "stop": "30."}
    for content, reason, matched, _ in _both(sim, body):
        assert (content, reason, matched) == (FULL[:-3], "stop", "30.")
