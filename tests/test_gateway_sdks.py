"""Real clients nobody here wrote, the `openai` and `anthropic` SDKs, through the gateway to the simulated engine:
chat, completions, responses, streaming, tools, token counting; each request is counted for the key's person."""

from __future__ import annotations

import shutil
import subprocess
import sys

import anthropic
import openai
import pytest

from m3ui.gateway.client_settings import client_settings
from tests.app_process import ROOT
from tests.gateway_app import gateway_app

GATEWAY_DOC = ROOT / "docs" / "GATEWAY.md"

WEATHER_OPENAI = {"type": "function", "function": {
    "name": "get_weather", "description": "The weather now in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}
WEATHER_ANTHROPIC = {"name": "get_weather", "description": "The weather now in a city",
                     "input_schema": WEATHER_OPENAI["function"]["parameters"]}


@pytest.fixture(scope="module")
def gw(tmp_path_factory):
    with gateway_app(tmp_path_factory.mktemp("gateway-sdks")) as gw:
        yield gw


@pytest.fixture
def oa(gw):
    with openai.OpenAI(base_url=gw.base_url, api_key=gw.keys["bob"], max_retries=0) as client:
        yield client


@pytest.fixture
def an(gw):
    with anthropic.Anthropic(base_url=gw.app.url, api_key=gw.keys["carol"], max_retries=0) as client:
        yield client


def test_openai_chat_whole_and_streamed_is_counted(gw, oa):
    before = gw.usage("bob")
    whole = oa.chat.completions.create(model="MiniMax-M3", messages=[{"role": "user", "content": "What is 17 * 23?"}],
                                       max_tokens=300)
    assert "391" in whole.choices[0].message.content and whole.usage.completion_tokens > 0
    chunks = list(oa.chat.completions.create(model="MiniMax-M3", stream=True, max_tokens=300,
                                             messages=[{"role": "user", "content": "What is 17 * 23?"}]))
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert "391" in text
    assert all(c.usage is None for c in chunks), "the usage chunk the gateway asked for is not passed on"
    requests, completion = (before.requests, before.completion_tokens) if before else (0, 0)
    after = gw.usage_after("bob", requests + 2)
    assert after.requests == requests + 2
    assert after.completion_tokens - completion >= 2 * whole.usage.completion_tokens - 5


def test_openai_stream_with_usage_asked_keeps_it(oa):
    chunks = list(oa.chat.completions.create(model="MiniMax-M3", stream=True, max_tokens=100,
                                             stream_options={"include_usage": True},
                                             messages=[{"role": "user", "content": "Say hello"}]))
    assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens > 0 and chunks[-1].choices == []


def test_openai_tools_streamed(oa):
    stream = oa.chat.completions.create(model="MiniMax-M3", stream=True, tools=[WEATHER_OPENAI], max_tokens=400,
                                        messages=[{"role": "user", "content": "What is the weather in Paris?"}])
    names, arguments, finish = [], "", None
    for chunk in stream:
        for call in (chunk.choices[0].delta.tool_calls or []) if chunk.choices else []:
            if call.function.name:
                names.append(call.function.name)
            arguments += call.function.arguments or ""
        finish = (chunk.choices[0].finish_reason if chunk.choices else None) or finish
    assert names == ["get_weather"] and '"Paris"' in arguments and finish == "tool_calls"


def _counted(gw, person: str, requests_at_least: int = 0) -> tuple[int, int, int]:
    """(requests, prompt, completion tokens) today, once `requests_at_least` are settled."""
    day = gw.usage_after(person, requests_at_least) if requests_at_least else gw.usage(person)
    return (day.requests, day.prompt_tokens, day.completion_tokens) if day else (0, 0, 0)


def test_openai_completions_whole_and_streamed_are_metered(gw):
    """The engine's figures, not the reservation's bounds: the body's `usage`, and the stream's usage chunk the
    gateway asked for and kept from the client."""
    with openai.OpenAI(base_url=gw.base_url, api_key=gw.keys["dave"], max_retries=0) as client:
        before = _counted(gw, "dave")
        whole = client.completions.create(model="MiniMax-M3", prompt="What is 17 * 23?", max_tokens=20)
        assert whole.choices[0].text and whole.usage.completion_tokens == 20
        chunks = list(client.completions.create(model="MiniMax-M3", prompt="What is 17 * 23?", max_tokens=12,
                                                stream=True))
        assert all(c.usage is None and c.choices for c in chunks), "the usage chunk it did not ask for is kept"
        assert len(chunks) == 12 and chunks[-1].choices[0].finish_reason == "length"
        asked = list(client.completions.create(model="MiniMax-M3", prompt="Hi", max_tokens=5, stream=True,
                                               stream_options={"include_usage": True}))
        assert asked[-1].choices == [] and asked[-1].usage.completion_tokens == 5
    requests, prompt, completion = (now - then for now, then in zip(_counted(gw, "dave", before[0] + 3), before,
                                                                         strict=True))
    assert requests == 3 and completion == 20 + 12 + 5
    assert prompt == 2 * whole.usage.prompt_tokens + asked[-1].usage.prompt_tokens


def test_openai_responses_whole_streamed_and_tools_are_metered(gw):
    with openai.OpenAI(base_url=gw.base_url, api_key=gw.keys["carol"], max_retries=0) as client:
        before = _counted(gw, "carol")
        whole = client.responses.create(model="MiniMax-M3", input="What is 17 * 23?", max_output_tokens=300)
        assert whole.status == "completed" and "391" in whole.output_text and whole.usage.output_tokens > 0
        events = list(client.responses.create(model="MiniMax-M3", input="What is 17 * 23?", stream=True,
                                              max_output_tokens=300))
        assert events[0].type == "response.created" and events[-1].type == "response.completed"
        text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
        assert "391" in text and events[-1].response.output_text == text
        tool = {"type": "function", "name": "get_weather", "description": "The weather now in a city",
                "parameters": WEATHER_OPENAI["function"]["parameters"]}
        with client.responses.stream(model="MiniMax-M3", input="What is the weather in Paris?", tools=[tool],
                                     max_output_tokens=400) as stream:
            final = stream.get_final_response()
        calls = [item for item in final.output if item.type == "function_call"]
        assert [c.name for c in calls] == ["get_weather"] and calls[0].arguments == '{"city": "Paris"}'
        answer = client.responses.create(model="MiniMax-M3", tools=[tool], input=[
            {"role": "user", "content": "What is the weather in Paris?"},
            {"type": "function_call", "call_id": calls[0].call_id, "name": "get_weather",
             "arguments": calls[0].arguments},
            {"type": "function_call_output", "call_id": calls[0].call_id, "output": "sunny, 21 C"}])
        assert answer.status == "completed" and answer.output_text
    requests, prompt, completion = (now - then for now, then in zip(_counted(gw, "carol", before[0] + 4), before,
                                                                         strict=True))
    outputs = [whole, events[-1].response, final, answer]
    assert requests == 4 and completion == sum(r.usage.output_tokens for r in outputs)
    assert prompt == sum(r.usage.input_tokens for r in outputs)


def test_anthropic_messages_whole_streamed_and_counted(gw, an):
    message = an.messages.create(model="MiniMax-M3", max_tokens=300,
                                 messages=[{"role": "user", "content": "What is 17 * 23?"}])
    assert message.type == "message" and "391" in message.content[0].text
    assert message.usage.input_tokens > 0 and message.usage.output_tokens > 0
    with an.messages.stream(model="MiniMax-M3", max_tokens=300,
                            messages=[{"role": "user", "content": "What is 17 * 23?"}]) as stream:
        text = "".join(stream.text_stream)
        final = stream.get_final_message()
    assert "391" in text and final.stop_reason == "end_turn" and final.usage.output_tokens > 0
    carol = gw.usage_after("carol", 2)
    assert carol.requests >= 2 and carol.completion_tokens >= message.usage.output_tokens


def test_anthropic_tool_use_streamed(an):
    with an.messages.stream(model="MiniMax-M3", max_tokens=400, tools=[WEATHER_ANTHROPIC],
                            messages=[{"role": "user", "content": "What is the weather in Paris?"}]) as stream:
        final = stream.get_final_message()
    calls = [block for block in final.content if block.type == "tool_use"]
    assert final.stop_reason == "tool_use" and [c.name for c in calls] == ["get_weather"]
    assert calls[0].input == {"city": "Paris"}
    answer = an.messages.create(model="MiniMax-M3", max_tokens=300, tools=[WEATHER_ANTHROPIC], messages=[
        {"role": "user", "content": "What is the weather in Paris?"},
        {"role": "assistant", "content": final.content},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": calls[0].id,
                                      "content": "sunny, 21 C"}]}])
    assert answer.stop_reason == "end_turn" and answer.content and answer.content[0].type == "text"


def test_anthropic_count_tokens(an):
    short = an.messages.count_tokens(model="MiniMax-M3", messages=[{"role": "user", "content": "hi"}])
    long = an.messages.count_tokens(model="MiniMax-M3", messages=[{"role": "user", "content": "hi " * 50}],
                                    system="You are terse.", tools=[WEATHER_ANTHROPIC])
    assert 0 < short.input_tokens < long.input_tokens


def test_a_bad_key_is_refused_in_each_sdks_own_error(gw):
    with openai.OpenAI(base_url=gw.base_url, api_key="m3ui_000000000000_" + "x" * 43, max_retries=0) as client, \
            pytest.raises(openai.AuthenticationError, match="invalid API key"):
        client.models.list()
    with anthropic.Anthropic(base_url=gw.app.url, api_key="nope", max_retries=0) as client, \
            pytest.raises(anthropic.AuthenticationError, match="invalid API key"):
        client.messages.create(model="m", max_tokens=5, messages=[{"role": "user", "content": "hi"}])


def test_the_connect_settings_run_and_the_docs_show_them(gw):
    for setting in client_settings("http://127.0.0.1:7860", "MiniMax-M3"):
        assert f"```{setting.language}\n{setting.text}\n```" in GATEWAY_DOC.read_text(), setting.client
    runnable = {s.client: s for s in client_settings(gw.app.url, "MiniMax-M3", gw.keys["dave"])}
    for client in ("Python: openai", "Python: anthropic"):
        done = subprocess.run([sys.executable, "-c", runnable[client].text], capture_output=True, text=True,
                              timeout=60)
        assert done.returncode == 0 and "Hello" in done.stdout, (client, done.stderr[-2000:])
    if shutil.which("curl"):
        done = subprocess.run(["bash", "-c", runnable["curl"].text], capture_output=True, text=True, timeout=60)
        assert done.returncode == 0 and "data: [DONE]" in done.stdout, done.stderr
