"""The tool loop against the simulated engine (the real wire format, parsers and tool-call streaming)."""

import json

import pytest

from m3ui.client import ChatClient, EndpointConfig, GenerationSettings
from m3ui.conversation import Conversation, LoopOptions, ToolLoop
from m3ui.conversation.tool_loop import LoopFinished, StepStarted, ToolExecutionFinished, ToolExecutionStarted
from m3ui.tools import ToolRegistry, builtin_registry, builtin_tools, template_tool
from tests.sim_process import free_port, running_sim, sim_settings


@pytest.fixture(scope="module")
def client():
    with running_sim(sim_settings(free_port())) as sim:
        chat = ChatClient(EndpointConfig(base_url=f"{sim.url}/v1", model="MiniMax-M3"))
        yield chat
        chat.close()


def run(client, registry, question, **options):
    loop = ToolLoop(client, registry, GenerationSettings(thinking_mode="disabled"), LoopOptions(**options))
    events = list(loop.run(Conversation().ask(question)))
    assert isinstance(events[-1], LoopFinished)
    return events, events[-1]


def _steps(events):
    """Tool calls started per model request."""
    steps: list[list[str]] = []
    for event in events:
        if isinstance(event, StepStarted):
            steps.append([])
        elif isinstance(event, ToolExecutionStarted):
            steps[-1].append(event.call.name)
    return steps


def test_a_single_call_runs_and_the_answer_uses_its_result(client):
    events, done = run(client, builtin_registry(), "What's the weather in Paris?")
    (result,) = [e.result for e in events if isinstance(e, ToolExecutionFinished)]
    assert result.name == "get_weather" and not result.is_error and "Paris" in result.content
    assert done.outcome == "answer" and _steps(events) == [["get_weather"], []]
    assert "Paris" in done.conversation.turns[-1].content


def test_two_asks_become_parallel_calls_in_one_step(client):
    events, done = run(client, builtin_registry(), "What's the weather in Lisbon, and what is 2**10?")
    assert sorted(_steps(events)[0]) == ["calculator", "get_weather"]
    results = {e.result.name: e.result for e in events if isinstance(e, ToolExecutionFinished)}
    assert "1024" in results["calculator"].content and not results["get_weather"].is_error
    assert done.outcome == "answer"


def test_arguments_that_break_the_schema_come_back_as_a_tool_error_the_model_sees(client):
    short_forecast = template_tool(
        "get_weather", "Weather for a city, at most 2 days ahead.",
        {"type": "object", "properties": {"city": {"type": "string"},
                                          "days": {"type": "integer", "minimum": 1, "maximum": 2}},
         "required": ["city"]},
        "Sunny in $city")
    registry = ToolRegistry([short_forecast, *[t for t in builtin_tools() if t.name != "get_weather"]])
    events, done = run(client, registry, "Compare the weather in Tokyo and Oslo for 3 days.")
    results = [e.result for e in events if isinstance(e, ToolExecutionFinished)]
    assert results and all(r.is_error and "at most 2" in r.content for r in results)
    sent_back = [json.loads(json.dumps(r.to_openai())) for r in results]
    assert all(m["role"] == "tool" and m["content"].startswith("Error:") for m in sent_back)
    assert done.outcome == "answer"


def test_the_step_limit_ends_the_loop_with_a_clear_outcome(client):
    events, done = run(client, builtin_registry(), "What's the weather in Paris?", max_steps=1)
    assert done.outcome == "step_limit" and done.message
    assert any(isinstance(e, ToolExecutionFinished) for e in events)
