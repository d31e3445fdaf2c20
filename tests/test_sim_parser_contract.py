"""The sim's deltas are what sglang-kt 0.7.2's own parsers make of the sim's raw M3 text.

For each scripted answer, the raw text behind it (with `<mm:think>` tags and `]<]minimax[>[` tool-call XML,
or the constrained JSON array) is fed, token by token, through the wheel's ReasoningParser("minimax-m3")
and FunctionCallParser(..., "minimax-m3") / JsonArrayParser exactly as serving_chat.py streams, and once
whole as its non-streaming path does; the sim's real HTTP answers must reassemble to the same reasoning,
content and tool calls.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from launch.sim.answers import plan_reply
from launch.sim.generation import raw_output
from launch.sim.request import ChatRequest, to_conversation
from launch.sim.tokens import tokenize
from tests.sglang_wheel import SglangParsers, sglang_parsers  # noqa: F401  (fixture)
from tests.sim_process import SimProcess, free_port, running_sim, sim_settings
from tests.sim_sse import ALL_TOOLS, CALCULATOR, PLAN_TRIP, SEARCH, WEATHER, chat, stream_chat

pytestmark = pytest.mark.wheel

USER = "user"


def _body(text: str | None, mode: str | None = "enabled", tools: list[dict[str, Any]] | None = None,
          history: list[dict[str, Any]] | None = None, **extra: Any) -> dict[str, Any]:
    turn = [] if text is None else [{"role": USER, "content": text}]
    body: dict[str, Any] = {"model": "MiniMax-M3", "skip_special_tokens": False,
                            "messages": [*(history or []), *turn], **extra}
    if mode is not None:
        body["chat_template_kwargs"] = {"thinking_mode": mode}
    if tools is not None:
        body["tools"] = tools
    return body


SCENARIOS: dict[str, dict[str, Any]] = {
    "arithmetic_enabled": _body("Solve step by step: 17 * 23"),
    "arithmetic_adaptive": _body("What is (3 + 4) * 5?", mode="adaptive"),
    "arithmetic_disabled": _body("What is 2+2?", mode="disabled"),
    "greeting_adaptive": _body("hello", mode="adaptive"),
    "multi_turn_quirk": _body("And 12 * 12?", mode=None, history=[
        {"role": "user", "content": "What is 2+2?"}, {"role": "assistant", "content": "4"}]),
    "no_separate_reasoning": _body("What is 9 * 9?", separate_reasoning=False),
    "weather": _body("What's the weather in Shanghai?", tools=[WEATHER]),
    "weather_adaptive_typed": _body("Weather in Paris for 3 days in fahrenheit?", mode="adaptive", tools=[WEATHER]),
    "parallel_same_tool": _body("What's the weather in Paris and Tokyo?", tools=ALL_TOOLS),
    "parallel_two_tools": _body("What is the weather in Berlin and what is 17 * 23?", tools=ALL_TOOLS),
    "search": _body("search for sglang kt-kernel release notes", mode="disabled", tools=[SEARCH]),
    "nested_array_object": _body("Use plan_trip for Paris and Tokyo, 5 days", tools=[PLAN_TRIP, WEATHER]),
    "string_escapes": _body('Calculate 2 * (3 + 4) for the "quoted" note', tools=[CALCULATOR]),
    "required_json": _body("hello there", tools=ALL_TOOLS, tool_choice="required"),
    "named_json": _body("Plan something for Rome", mode="adaptive", tools=ALL_TOOLS,
                        tool_choice={"type": "function", "function": {"name": "plan_trip"}}),
    "tool_results_answer": _body(None, history=[
        {"role": "user", "content": "What's the weather in Paris?"},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "call_1", "type": "function", "function": {
            "name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "{\"temperature_c\": 18, \"condition\": \"sunny\"}"},
    ], tools=[WEATHER]),
}


@dataclass
class Parsed:
    reasoning: str = ""
    content: str = ""
    calls: list[tuple[str, str]] = field(default_factory=list)  # (name, arguments) in index order


def _sglang_tools(parsers: SglangParsers, body: dict[str, Any]) -> list[Any]:
    return [parsers.Tool(**t) for t in body.get("tools") or []]


def _choice(body: dict[str, Any]) -> Any:
    return body.get("tool_choice", "auto" if body.get("tools") else "none")


def _forced(body: dict[str, Any]) -> bool:
    return (body.get("chat_template_kwargs") or {}).get("thinking_mode") == "enabled"


def sglang_stream(parsers: SglangParsers, body: dict[str, Any], raw: str) -> Parsed:
    """serving_chat._generate_chat_stream's parser calls, one sim token per increment."""
    tools, choice = _sglang_tools(parsers, body), _choice(body)
    reasoning_parser = (parsers.ReasoningParser("minimax-m3", True, _forced(body))
                        if body.get("separate_reasoning", True) else None)
    json_mode = choice == "required" or isinstance(choice, dict)
    tool_parser = None
    if tools and choice != "none":
        tool_parser = (parsers.JsonArrayParser() if json_mode
                       else parsers.FunctionCallParser(tools, "minimax-m3", choice))
    out, calls = Parsed(), {}
    for delta in tokenize(raw):
        if reasoning_parser is not None:
            reasoning, delta = reasoning_parser.parse_stream_chunk(delta)
            out.reasoning += reasoning or ""
        if tool_parser is None:
            out.content += delta
            continue
        if json_mode:
            result = tool_parser.parse_streaming_increment(delta, tools)
            normal, items = result.normal_text, result.calls
        else:
            normal, items = tool_parser.parse_stream_chunk(delta)
        out.content += normal
        for item in items:
            entry = calls.setdefault(item.tool_index, ["", ""])
            entry[0] = entry[0] or item.name or ""
            entry[1] += item.parameters
    out.calls = [tuple(calls[i]) for i in sorted(calls)]
    return out


def sglang_whole(parsers: SglangParsers, body: dict[str, Any], raw: str) -> Parsed:
    """serving_chat._build_chat_response's parser calls on the complete text."""
    tools, choice = _sglang_tools(parsers, body), _choice(body)
    reasoning, text = "", raw
    if body.get("separate_reasoning", True):
        reasoning, text = parsers.ReasoningParser("minimax-m3", False, _forced(body)).parse_non_stream(raw)
    out = Parsed(reasoning or "")
    if tools and choice != "none":
        if choice == "required" or isinstance(choice, dict):
            out.calls = [(c["name"], json.dumps(c["parameters"], ensure_ascii=False)) for c in json.loads(text)]
            text = ""
        else:
            parser = parsers.FunctionCallParser(tools, "minimax-m3", choice)
            if parser.has_tool_call(text):
                text, items = parser.parse_non_stream(text)
                out.calls = [(item.name, item.parameters) for item in items]
    out.content = text or ""
    return out


def sim_raw(body: dict[str, Any]) -> str:
    request = ChatRequest.model_validate(body)
    return raw_output(request, plan_reply(to_conversation(request)))


@pytest.fixture(scope="module")
def sim() -> Iterator[SimProcess]:
    with running_sim(sim_settings(free_port())) as process:
        yield process


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_streamed_deltas_reassemble_to_what_sglangs_parsers_make_of_the_raw_text(
        name: str, sim: SimProcess, sglang_parsers: SglangParsers) -> None:  # noqa: F811
    body = SCENARIOS[name]
    expected = sglang_stream(sglang_parsers, body, sim_raw(body))
    got = stream_chat(sim.url, body)
    assert got.reasoning == expected.reasoning
    assert got.content == expected.content
    assert [(c["name"], c["arguments"]) for _, c in sorted(got.calls.items())] == expected.calls


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_whole_responses_match_sglangs_one_shot_parse(
        name: str, sim: SimProcess, sglang_parsers: SglangParsers) -> None:  # noqa: F811
    body = SCENARIOS[name]
    expected = sglang_whole(sglang_parsers, body, sim_raw(body))
    message = chat(sim.url, body).json()["choices"][0]["message"]
    assert (message["reasoning_content"] or "") == expected.reasoning
    assert (message["content"] or "") == expected.content
    assert [(c["function"]["name"], c["function"]["arguments"]) for c in message["tool_calls"] or []] == expected.calls


def test_the_scenarios_cover_reasoning_tool_calls_typed_nested_and_parallel_arguments(
        sglang_parsers: SglangParsers) -> None:  # noqa: F811
    calls = {name: sglang_whole(sglang_parsers, body, sim_raw(body)).calls for name, body in SCENARIOS.items()}
    assert len(calls["parallel_same_tool"]) == 2 and len(calls["parallel_two_tools"]) == 2
    assert {name for name, _ in calls["parallel_two_tools"]} == {"get_weather", "calculator"}
    trip = json.loads(calls["nested_array_object"][0][1])
    assert trip["cities"] == ["Paris", "Tokyo"] and trip["days"] == 5 and isinstance(trip["options"]["metric"], bool)
    assert trip["stops"][0] == {"city": "Paris", "nights": 1}
    assert json.loads(calls["weather_adaptive_typed"][0][1]) == {"city": "Paris", "unit": "fahrenheit", "days": 3}
    assert sglang_whole(sglang_parsers, SCENARIOS["arithmetic_enabled"],
                        sim_raw(SCENARIOS["arithmetic_enabled"])).reasoning.count("391") >= 1


NS = "]<]minimax[>["
MIRROR_TEXTS = {
    "think_with_trailing_space": "<mm:think>Let me see.\n \n</mm:think>\n\nThe answer is 4.",
    "forced_then_stray_tags": "reasoning only</mm:think>answer with </mm:think> inside",
    "stray_close_only": "</mm:think>Hello",
    "tool_block_with_spacing": (
        f"Sure.\n{NS}<tool_call>\n{NS} <invoke name=\"get_weather\">\n{NS}\n<city>New \"York\"\\n é{NS}\n</city>"
        f"\n{NS}<days>7{NS}</days>\n{NS}<unit>celsius{NS}</unit>\n{NS}</invoke>\n{NS}</tool_call>\ntrailing text"),
    "nested_and_unknown_tool": (
        f"{NS}<tool_call>{NS}<invoke name=\"plan_trip\">{NS}<cities>{NS}<item>Rome{NS}</item>{NS}<item>Oslo"
        f"{NS}</item>{NS}</cities>{NS}<options>{NS}<metric>yes{NS}</metric>{NS}<notes>n{NS}</notes>{NS}</options>"
        f"{NS}<budget>12.5{NS}</budget>{NS}</invoke>{NS}<invoke name=\"not_declared\">{NS}<x>1{NS}</x>{NS}</invoke>"
        f"{NS}</tool_call>"),
}


def _chunkings(text: str) -> dict[str, list[str]]:
    half = len(text) // 2
    return {"whole": [text], "halves": [text[:half], text[half:]], "chars": list(text), "tokens": tokenize(text),
            **{f"every_{n}": [text[i:i + n] for i in range(0, len(text), n)] for n in (3, 7, 16)}}


@pytest.mark.parametrize("name", list(MIRROR_TEXTS))
@pytest.mark.parametrize("forced", [False, True])
@pytest.mark.parametrize("stream_reasoning", [True, False])
def test_the_reasoning_splitter_mirrors_sglang_increment_by_increment(
        name: str, forced: bool, stream_reasoning: bool, sglang_parsers: SglangParsers) -> None:  # noqa: F811
    from launch.sim.reasoning_split import ReasoningSplitter

    for pieces in _chunkings(MIRROR_TEXTS[name]).values():
        ours = ReasoningSplitter(forced, stream_reasoning)
        theirs = sglang_parsers.ReasoningParser("minimax-m3", stream_reasoning, forced)
        for piece in pieces:
            split = ours.feed(piece)
            reasoning, normal = theirs.parse_stream_chunk(piece)
            assert (split.reasoning, split.normal) == (reasoning or "", normal or "")
        whole = ReasoningSplitter(forced).whole(MIRROR_TEXTS[name])
        expected = sglang_parsers.ReasoningParser("minimax-m3", False, forced).parse_non_stream(MIRROR_TEXTS[name])
        assert (whole.reasoning, whole.normal) == (expected[0] or "", expected[1] or "")


@pytest.mark.parametrize("name", list(MIRROR_TEXTS))
def test_the_tool_call_streamer_mirrors_sglang_increment_by_increment(
        name: str, sglang_parsers: SglangParsers) -> None:  # noqa: F811
    from launch.sim.tool_stream import ToolCallStreamer

    declared = [WEATHER, PLAN_TRIP]
    tools = [sglang_parsers.Tool(**t) for t in declared]
    schemas = {t["function"]["name"]: t["function"]["parameters"] for t in declared}
    for pieces in _chunkings(MIRROR_TEXTS[name]).values():
        ours, theirs = ToolCallStreamer(schemas), sglang_parsers.FunctionCallParser(tools, "minimax-m3", "auto")
        for piece in pieces:
            normal, deltas = ours.feed(piece)
            their_normal, items = theirs.parse_stream_chunk(piece)
            assert normal == their_normal
            assert [(d.index, d.name, d.arguments) for d in deltas] == [
                (i.tool_index, i.name, i.parameters) for i in items]
