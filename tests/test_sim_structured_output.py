"""Structured output over real HTTP: a grammar-constrained request gets text that satisfies its constraint.

sglang-kt 0.7.2: protocol.ChatCompletionRequest.to_sampling_params turns response_format json_schema into its
schema, json_object into `{"type": "object"}`, and passes `regex`; the grammar backend constrains every
token, so the whole content satisfies it (finish `stop` on the end-of-turn token, schedule_batch.check_finished).
With thinking_mode enabled the grammar starts after `</mm:think>` (reasoner_grammar_backend.py).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from launch.sim.scheduler import EOS_TOKEN_ID
from tests.sim_process import SimProcess, free_port, running_sim, sim_settings
from tests.sim_sse import chat, stream_chat

ASK = [{"role": "user", "content": "What is 17 * 23?"}]
PERSON = {"type": "object", "properties": {
    "name": {"type": "string", "maxLength": 40}, "age": {"type": "integer", "minimum": 18, "maximum": 99},
    "email": {"type": "string", "format": "email"}, "tags": {"type": "array", "items": {"enum": ["a", "b"]},
                                                             "minItems": 2},
    "code": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]{2}$"}, "home": {"$ref": "#/$defs/Place"}},
    "required": ["name", "age", "home"], "additionalProperties": False,
    "$defs": {"Place": {"type": "object", "properties": {"city": {"type": "string"},
                                                         "zip": {"type": "integer", "exclusiveMinimum": 999}},
                        "required": ["city", "zip"]}}}


@pytest.fixture(scope="module")
def sim() -> Iterator[SimProcess]:
    with running_sim(sim_settings(free_port())) as process:
        yield process


def _both(sim: SimProcess, body: dict[str, Any]) -> list[tuple[str | None, str, Any]]:
    """(reasoning, content, matched_stop) of the non-streaming answer and of the streamed one."""
    response = chat(sim.url, body)
    assert response.status_code == 200, response.text
    choice = response.json()["choices"][0]
    assert choice["finish_reason"] == "stop"
    streamed = stream_chat(sim.url, body)
    assert streamed.finish_reason == "stop"
    return [(choice["message"]["reasoning_content"], choice["message"]["content"], choice["matched_stop"]),
            (streamed.reasoning or None, streamed.content, streamed.matched_stop)]


def test_json_object_answers_with_one_json_object(sim: SimProcess) -> None:
    for reasoning, content, matched in _both(sim, {"messages": ASK, "response_format": {"type": "json_object"}}):
        assert isinstance(json.loads(content), dict) and "391" in content
        assert reasoning is None and matched == EOS_TOKEN_ID


@pytest.mark.parametrize("response_format", [
    {"type": "json_schema", "json_schema": {"name": "person", "schema": PERSON}},
    {"type": "json_schema", "schema": PERSON},  # protocol.set_json_schema moves it into json_schema
])
def test_json_schema_answers_with_a_value_the_schema_accepts(sim: SimProcess, response_format: dict) -> None:
    for _, content, _ in _both(sim, {"messages": ASK, "response_format": response_format}):
        assert Draft202012Validator(PERSON).is_valid(json.loads(content)), content


def test_with_thinking_enabled_the_model_thinks_first_and_the_grammar_holds_after(sim: SimProcess) -> None:
    body = {"messages": ASK, "response_format": {"type": "json_schema", "json_schema": {"name": "p", "schema": PERSON}},
            "chat_template_kwargs": {"thinking_mode": "enabled"}, "skip_special_tokens": False}
    for reasoning, content, _ in _both(sim, body):
        assert reasoning and "391" in reasoning
        assert Draft202012Validator(PERSON).is_valid(json.loads(content)), content


@pytest.mark.parametrize("pattern", [r"(yes|no)", r"[A-Z]{2}-\d{4}", r"The answer is \d+\.", r"\w+@example\.com"])
def test_a_regex_constraint_is_matched_by_the_whole_content(sim: SimProcess, pattern: str) -> None:
    for reasoning, content, _ in _both(sim, {"messages": ASK, "regex": pattern}):
        assert re.fullmatch(pattern, content) and reasoning is None
