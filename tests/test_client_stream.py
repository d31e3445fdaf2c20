"""The streaming client against sglang-kt's recorded streams, replayed by a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from m3ui.client import (
    ChatClient,
    ContentDelta,
    EndpointConfig,
    Finished,
    GenerationSettings,
    ReasoningDelta,
    StreamError,
    ToolCallDelta,
    ToolCallsComplete,
    ToolCallStarted,
    Usage,
)
from tests.sse_replay import (
    DONE,
    JsonReply,
    ReplayServer,
    SseReply,
    chunk,
    load_samples,
    tool_calls_reply,
    usage_chunk,
)

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = load_samples()
HELLO = [{"role": "user", "content": "hello"}]


def run(replies, settings=None, **endpoint_options):
    with ReplayServer(replies) as server:
        client = ChatClient(EndpointConfig(base_url=server.base_url, **endpoint_options))
        events = list(client.stream(HELLO, settings or GenerationSettings()))
        client.close()
    return events, server


def of_type(events, kind):
    return [event for event in events if isinstance(event, kind)]


def text(events, kind):
    return "".join(event.text for event in of_type(events, kind))


def test_tool_call_sample_gives_reasoning_content_and_one_assembled_call():
    events, _ = run([SseReply(SAMPLES["A_tools_reasoning_include_usage"])])
    assert text(events, ReasoningDelta) == "Need weather for Paris."
    assert text(events, ContentDelta) == "Checking.\n"
    assert of_type(events, ToolCallStarted) == [ToolCallStarted(0, "call_2519755f847c42a981120b62", "get_weather")]
    assert "".join(d.arguments_fragment for d in of_type(events, ToolCallDelta)) == '{"city": "Paris", "days": 3}'
    [complete] = of_type(events, ToolCallsComplete)
    [call] = complete.calls
    assert (call.name, call.arguments, call.parse_error) == ("get_weather", {"city": "Paris", "days": 3}, None)
    assert of_type(events, Usage) == [Usage(prompt_tokens=42, completion_tokens=27, total_tokens=69)]
    final = events[-1]
    assert isinstance(final, Finished) and final.reason == "tool_calls"
    assert (final.stats.prompt_tokens, final.stats.completion_tokens) == (42, 27)


def test_length_cut_finishes_with_reason_length_and_unknown_token_counts():
    events, _ = run([SseReply(SAMPLES["B_enabled_prefilled_length_cut"])])
    assert text(events, ReasoningDelta) == "2+2 is 4."
    assert text(events, ContentDelta) == "4"
    final = events[-1]
    assert isinstance(final, Finished) and final.reason == "length"
    assert final.stats.completion_tokens is None and final.stats.decode_tokens_per_s is None


def test_scheduler_abort_becomes_an_abort_error():
    events, _ = run([SseReply(SAMPLES["C_scheduler_abort_400"])])
    assert len(of_type(events, StreamError)) == 1
    assert events[-1].kind == "abort" and "aborted" in events[-1].message


def test_streamed_error_event_carries_the_engine_message_and_code():
    events, _ = run([SseReply(SAMPLES["D_valueerror_in_generate"])])
    assert events == [events[-1]]
    error = events[-1]
    assert (error.kind, error.status) == ("stream", 400)
    assert "longer than the model's context length" in error.message


def test_inline_think_tags_move_into_reasoning_when_the_server_has_no_reasoning_parser():
    events, _ = run([SseReply(SAMPLES["E_separate_reasoning_false"])], reasoning_in_content=True)
    assert text(events, ReasoningDelta) == "hmm"
    assert text(events, ContentDelta) == "Hi!"
    assert events[-1] == Finished("stop", events[-1].stats)


def test_inline_think_tags_go_to_reasoning_even_when_nobody_said_the_server_has_no_parser():
    events, _ = run([SseReply(SAMPLES["E_separate_reasoning_false"])])  # tags split across deltas
    assert (text(events, ReasoningDelta), text(events, ContentDelta)) == ("hmm", "Hi!")


def test_stray_closer_split_across_deltas_is_stripped_from_the_answer():
    pieces = [chunk(content="", role="assistant"), chunk(content=" \n</mm:"), chunk(content="think>\n\n"),
              chunk(content="Hello"), chunk(content=" </mm:think> stays"), chunk(finish_reason="stop"), DONE]
    events, _ = run([SseReply(tuple(pieces))])
    assert text(events, ContentDelta) == "Hello </mm:think> stays"


@pytest.mark.parametrize(
    ("status", "body", "message"),
    [
        (400, {"object": "error", "message": "messages: field required", "type": "BadRequestError", "code": 400},
         "messages: field required"),
        (401, {"error": "Unauthorized"}, "Unauthorized"),
        (500, {"object": "error", "message": "Internal server error: boom", "type": "InternalServerError",
               "code": 500}, "Internal server error: boom"),
    ],
)
def test_http_error_before_streaming_becomes_http_error_with_server_message(status, body, message):
    events, _ = run([JsonReply(status, body)])
    [error] = events
    assert (error.kind, error.status) == ("http", status)
    assert message in error.message


def test_connection_refused_becomes_connection_error_quickly():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    client = ChatClient(EndpointConfig(base_url=f"http://127.0.0.1:{port}/v1"))
    started = time.monotonic()
    [error] = list(client.stream(HELLO, GenerationSettings()))
    assert error.kind == "connection" and f"127.0.0.1:{port}" in error.message
    assert time.monotonic() - started < 2, "no silent retries"


def test_every_request_names_the_thinking_mode_keeps_special_tokens_and_asks_for_usage():
    settings = GenerationSettings(thinking_mode="disabled", top_k=20, max_tokens=128)
    _, server = run([SseReply(SAMPLES["B_enabled_prefilled_length_cut"])], settings)
    [body] = server.requests
    assert body["chat_template_kwargs"] == {"thinking_mode": "disabled"}
    assert body["skip_special_tokens"] is False
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert (body["temperature"], body["top_p"], body["max_tokens"], body["top_k"]) == (0.6, 0.95, 128, 20)
    assert "min_p" not in body and "repetition_penalty" not in body and "tools" not in body
    assert body["messages"] == HELLO and body["model"] == "MiniMax-M3"


def test_greedy_preset_sends_temperature_zero():
    _, server = run([SseReply(SAMPLES["C_scheduler_abort_400"])], GenerationSettings().greedy())
    assert server.requests[0]["temperature"] == 0.0


def test_parallel_calls_are_assembled_by_index_and_bad_json_is_flagged_not_raised():
    events, _ = run([tool_calls_reply(("get_weather", '{"city": "Oslo"}'), ("calculator", '{"expression": '))])
    [complete] = of_type(events, ToolCallsComplete)
    good, bad = complete.calls
    assert (good.index, good.arguments) == (0, {"city": "Oslo"})
    assert (bad.index, bad.name, bad.arguments) == (1, "calculator", None)
    assert bad.arguments_json == '{"expression": ' and "not valid JSON" in bad.parse_error


def test_tokens_read_together_come_as_one_delta_of_each_kind_in_order():
    reasoning, answer = [f"r{i} " for i in range(30)], [f"a{i} " for i in range(30)]
    events_sent = (chunk(content="", role="assistant"), *(chunk(reasoning=r) for r in reasoning),
                   *(chunk(content=a) for a in answer), chunk(finish_reason="stop"), usage_chunk(9, 60), DONE)
    events, _ = run([SseReply(events_sent, at_once=True)])
    texts = [e for e in events if isinstance(e, ReasoningDelta | ContentDelta)]
    assert texts == [ReasoningDelta("".join(reasoning)), ContentDelta("".join(answer))]
    assert isinstance(events[-1], Finished) and events[-1].stats.completion_tokens == 60


def test_a_calls_argument_fragments_read_together_come_as_one_delta_per_call():
    events, _ = run([SseReply(tool_calls_reply(("get_weather", '{"city": "Oslo", "unit": "celsius"}'),
                                               ("calculator", '{"expression": "6 * 7"}')).events, at_once=True)])
    deltas = of_type(events, ToolCallDelta)
    assert [d.index for d in deltas] == [0, 1]
    assert [d.arguments_fragment for d in deltas] == ['{"city": "Oslo", "unit": "celsius"}',
                                                      '{"expression": "6 * 7"}']


def test_a_connection_dropped_mid_stream_becomes_a_stream_error():
    events, _ = run([SseReply((chunk(content="", role="assistant"), chunk(content="Hel")), cut_off=True)])
    assert events[0] == ContentDelta("Hel")
    assert events[-1] == StreamError("dropped", None, "The engine stopped in the middle of the answer (its "
                                     "connection closed)")


def test_a_stream_that_ends_without_a_finish_reason_is_an_error():
    events, _ = run([SseReply((chunk(content="", role="assistant"), chunk(content="Hel"), DONE))])
    assert events[-1].kind == "stream" and "without saying why (no finish reason)" in events[-1].message


def test_stop_from_another_thread_ends_a_blocked_read_and_the_server_sees_the_disconnect():
    head = (chunk(content="", role="assistant"), chunk(content="Hel"))
    with ReplayServer([SseReply(head, hold_open_s=10)]) as server:
        stream = ChatClient(EndpointConfig(base_url=server.base_url)).stream(HELLO, GenerationSettings())
        events = iter(stream)
        assert next(events) == ContentDelta("Hel")
        threading.Timer(0.1, stream.stop).start()
        started = time.monotonic()
        rest = list(events)
        assert time.monotonic() - started < 2
        assert server.client_disconnected.wait(2)
    assert len(rest) == 1 and isinstance(rest[0], Finished) and rest[0].reason == "cancelled"


def test_dropping_the_iterator_mid_stream_disconnects_from_the_server():
    head = (chunk(content="", role="assistant"), chunk(content="Hel"))
    with ReplayServer([SseReply(head, hold_open_s=10)]) as server:
        events = iter(ChatClient(EndpointConfig(base_url=server.base_url)).stream(HELLO, GenerationSettings()))
        assert next(events) == ContentDelta("Hel")
        events.close()  # what Gradio's GeneratorExit does to the handler's generator
        assert server.client_disconnected.wait(2)


def test_stream_stopped_before_it_starts_sends_nothing():
    with ReplayServer([]) as server:
        stream = ChatClient(EndpointConfig(base_url=server.base_url)).stream(HELLO, GenerationSettings())
        stream.stop()
        [final] = list(stream)
    assert final.reason == "cancelled" and server.requests == []


def test_stats_show_time_to_first_token_thinking_time_and_decode_speed():
    events = [chunk(content="", role="assistant"), chunk(reasoning="think"), chunk(reasoning="ing"),
              chunk(content="ans"), chunk(content="wer"), chunk(finish_reason="stop"),
              'data: {"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[],'
              '"usage":{"prompt_tokens":5,"completion_tokens":12,"total_tokens":17}}\n\n', DONE]
    events, _ = run([SseReply(tuple(events), delay_s=0.03)])
    stats = events[-1].stats
    assert stats.time_to_first_token_s >= 0.03
    assert stats.thinking_s >= 0.05  # two gaps between the first reasoning and the first content token
    decode_time = 11 / stats.decode_tokens_per_s  # the tokens after the first
    assert 0.08 <= decode_time <= stats.total_s
    assert (stats.prompt_tokens, stats.completion_tokens) == (5, 12)


def test_a_client_pool_imports_the_sdks_chat_resources_before_the_first_answer():
    code = ("import sys; from m3ui.chat_session.clients import ClientPool; pool = ClientPool(); "
            "assert pool.warmed.wait(30); print('openai.resources.chat.completions.completions' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "True", done.stderr
