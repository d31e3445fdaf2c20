"""The scripted model's pure parts: its tokenizer, its arithmetic, its reading of tool intents, its raw M3 text."""

from __future__ import annotations

import operator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from launch.sim.answers import Conversation, Turn, plan_reply
from launch.sim.arithmetic import NotComputable, find_expression, fmt, solve, worked_steps
from launch.sim.m3_text import PlannedCall, Reply, render_raw
from launch.sim.prompt_values import places
from launch.sim.tokens import NAMESPACE, THINK_END, THINK_START, tokenize
from launch.sim.tool_intent import ToolSpec, plan_calls
from tests.sim_sse import ALL_TOOLS

TOOLS = tuple(ToolSpec(t["function"]["name"], t["function"]["description"], t["function"]["parameters"])
              for t in ALL_TOOLS)


@given(st.text())
def test_tokens_concatenate_back_to_the_text(text: str) -> None:
    assert "".join(tokenize(text)) == text


def test_m3s_tag_tokens_are_never_split() -> None:
    text = f"x{THINK_START}a b{THINK_END}{NAMESPACE}<tool_call>"
    pieces = tokenize(text)
    assert THINK_START in pieces and THINK_END in pieces and NAMESPACE in pieces


OPS = {"+": operator.add, "-": operator.sub, "*": operator.mul}


@given(st.integers(-999, 999), st.sampled_from(sorted(OPS)), st.integers(-999, 999))
def test_arithmetic_in_a_sentence_is_found_and_computed_exactly(a: int, op: str, b: int) -> None:
    expression = find_expression(f"Please compute {a} {op} {b} for me.")
    assert expression is not None
    assert solve(expression).value == OPS[op](a, b)


def test_a_product_is_worked_out_by_place_value() -> None:
    solution = solve(find_expression("Solve step by step: 17 * 23"))
    assert worked_steps(solution) == ["17 × 23 = 17 × 20 + 17 × 3 = 340 + 51 = 391"]
    assert fmt(solve("12.5 / 4").value) == "3.125" and fmt(solve("2 ** 10").value) == "1024"


def test_what_cannot_be_computed_says_why() -> None:
    with pytest.raises(NotComputable, match="divides by zero"):
        solve("7 / 0")
    assert find_expression("on 2026-11-29 at noon") is None


def test_place_names_are_read_with_their_particles() -> None:
    assert places("weather in Rio de Janeiro, Paris and New York?") == ["Rio de Janeiro", "Paris", "New York"]


def test_intents_map_to_declared_tools_only() -> None:
    assert plan_calls("What's the weather in Oslo?", TOOLS[1:]) == ()  # no weather tool declared
    assert plan_calls("search for m3 benchmarks and what is 3 * 3?", TOOLS) == (
        PlannedCall("calculator", {"expression": "3 * 3"}), PlannedCall("web_search", {"query": "m3 benchmarks"}))


@pytest.mark.parametrize(("style", "expected"), [
    ("prefilled", "think</mm:think>ok"), ("self", "<mm:think>think</mm:think>ok"), ("none", "ok"),
    ("stray_close", "</mm:think>ok"),
])
def test_the_raw_text_places_the_thinking_by_mode(style: str, expected: str) -> None:
    assert render_raw(Reply("think", "ok"), style) == expected  # type: ignore[arg-type]


def test_tool_calls_render_as_m3s_namespaced_xml_with_typed_values() -> None:
    raw = render_raw(Reply(None, "", (PlannedCall("f", {"n": 2.0, "ok": True, "xs": ["a"], "o": {"k": "v"}}),)),
                     "none")
    ns = NAMESPACE
    assert raw == (f"{ns}<tool_call>\n{ns}<invoke name=\"f\">\n{ns}<n>2{ns}</n>\n{ns}<ok>true{ns}</ok>\n"
                   f"{ns}<xs>\n{ns}<item>a{ns}</item>\n{ns}</xs>\n{ns}<o>\n{ns}<k>v{ns}</k>\n{ns}</o>\n"
                   f"{ns}</invoke>\n{ns}</tool_call>")


def test_a_tool_result_is_answered_from_the_result_of_the_matching_call() -> None:
    call = PlannedCall("calculator", {"expression": "6 * 7"})
    conversation = Conversation((
        Turn("user", "what is 6 * 7, use the calculator"), Turn("assistant", "", (call,), ("call_a",)),
        Turn("tool", "42", tool_call_id="call_a")), TOOLS, "auto")
    reply = plan_reply(conversation)
    assert reply.calls == () and reply.content == 'calculator(expression="6 * 7") returned 42.'
