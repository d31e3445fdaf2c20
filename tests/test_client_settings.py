"""Generation settings are checked on our side, before anything is sent; timing maths is exact."""

from __future__ import annotations

import pytest

from m3ui.client import ChatClient, EndpointConfig, GenerationSettings, SettingsError, validate_thinking_mode
from m3ui.client.timing import StreamTimer
from tests.sse_replay import ReplayServer


@pytest.mark.parametrize("mode", ["enabled", "disabled", "adaptive"])
def test_the_three_thinking_modes_are_accepted(mode):
    assert GenerationSettings(thinking_mode=mode).thinking_mode == mode


@pytest.mark.parametrize("mode", ["enable", "on", "", "Enabled", None])
def test_any_other_thinking_mode_is_refused_with_the_valid_choices(mode):
    with pytest.raises(SettingsError, match="enabled, disabled, adaptive"):
        validate_thinking_mode(mode)


def test_a_typo_in_the_thinking_mode_never_reaches_the_server():
    with ReplayServer([]) as server:
        client = ChatClient(EndpointConfig(base_url=server.base_url))
        with pytest.raises(SettingsError):
            client.stream([{"role": "user", "content": "hi"}], GenerationSettings(thinking_mode="enable"))
    assert server.requests == []


@pytest.mark.parametrize(
    "bad",
    [{"temperature": -0.1}, {"top_p": 0.0}, {"max_tokens": 0}, {"top_k": 0}, {"min_p": 1.5},
     {"repetition_penalty": 0.0}, {"stall_seconds": 0.5}, {"stall_seconds": 7200.0},
     {"stall_seconds": float("nan")}, {"stall_seconds": float("inf")}],
)
def test_out_of_range_sampling_settings_are_refused(bad):
    with pytest.raises(SettingsError, match=next(iter(bad))):
        GenerationSettings(**bad)


def test_the_stall_limit_defaults_to_a_minute_and_can_be_changed():
    assert GenerationSettings().stall_seconds == 60.0
    assert GenerationSettings(stall_seconds=300).stall_seconds == 300


def test_defaults_are_the_reference_chat_settings_and_greedy_only_changes_temperature():
    chat = GenerationSettings()
    assert (chat.temperature, chat.top_p, chat.thinking_mode) == (0.6, 0.95, "adaptive")
    greedy = chat.greedy()
    assert greedy.temperature == 0.0 and greedy.top_p == chat.top_p and greedy.max_tokens == chat.max_tokens


class ManualClock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def test_timer_measures_first_token_thinking_and_decode_speed():
    clock = ManualClock()
    timer = StreamTimer(clock)
    clock.now = 100.5
    timer.reasoning()  # first token, first reasoning
    clock.now = 102.5
    timer.answer()  # thinking ends
    clock.now = 104.5
    timer.answer()
    clock.now = 105.0
    stats = timer.stats(prompt_tokens=7, completion_tokens=40)
    assert stats.time_to_first_token_s == 0.5
    assert stats.thinking_s == 2.0
    assert stats.decode_tokens_per_s == 9.75  # the 39 tokens after the first over the 4 s after the first
    assert stats.total_s == 5.0


@pytest.mark.parametrize("tokens", [2, 8])
def test_too_few_tokens_give_no_decode_rate_rather_than_an_absurd_one(tokens):
    clock = ManualClock()
    timer = StreamTimer(clock)
    clock.now = 100.5
    timer.answer()
    clock.now = 100.500014  # the second token 14 µs later: 2 / 14 µs was shown as 143,678 tok/s
    timer.answer()
    assert timer.stats(prompt_tokens=7, completion_tokens=tokens).decode_tokens_per_s is None


def test_timer_without_tokens_reports_unknown_not_zero():
    clock = ManualClock()
    stats = StreamTimer(clock).stats(None, None)
    assert (stats.time_to_first_token_s, stats.thinking_s, stats.decode_tokens_per_s) == (None, None, None)
