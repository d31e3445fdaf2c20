"""The raw server-sent-event reader of the client's hot path: the SSE spec's line ends, comments and fields, in
any split of the body into network reads, and JSON that orjson refuses but the json module took."""

from __future__ import annotations

import json

import pytest

from m3ui.client.event_stream import event_batches, parse_json

BODY = (b'data: {"a": 1}\n\n'
        b': keep-alive\n\n'
        b'event: message\r\ndata: {"b":\r\ndata:  2}\r\n\r\n'
        b'data: [DONE]\r\r'
        b'data: {"unfinished"')
EVENTS = ['{"a": 1}', '{"b":\n 2}', "[DONE]"]


def pieces(body: bytes, size: int) -> list[bytes]:
    return [body[i : i + size] for i in range(0, len(body), size)]


def event_data(body: list[bytes]) -> list[str]:
    return [data for batch in event_batches(body) for data in batch]


@pytest.mark.parametrize("size", [1, 2, 3, 7, len(BODY)])
def test_events_are_the_same_however_the_body_is_split_into_reads(size):
    assert event_data(pieces(BODY, size)) == EVENTS


def test_a_cr_lf_split_between_two_reads_is_one_line_end_not_a_blank_line():
    assert event_data([b'data: {"a": 1}\r', b'\nid: 7\r', b'\n\r', b'\n']) == ['{"a": 1}']


def test_an_event_with_fields_but_no_data_is_not_json_as_the_sdk_finds_and_carries_what_was_sent():
    batches = event_batches([b"data: 1\n\nevent: ping\n\n"])
    assert next(batches) == ["1"]
    with pytest.raises(json.JSONDecodeError) as raised:
        next(batches)
    assert raised.value.doc == "event: ping"


def test_a_body_that_never_completes_an_event_is_not_an_event_stream():
    with pytest.raises(json.JSONDecodeError) as raised:
        list(event_batches([b"<html>Bad", b" Gateway</html>"]))
    assert raised.value.doc == "<html>Bad Gateway</html>"
    assert list(event_batches([b"data: 1\n\ndata: unfinished"])) == [["1"]]


def test_bytes_that_are_not_utf8_raise_a_decode_error_after_the_events_before_them():
    batches = event_batches([b'data: 1\n\ndata: 2\n\ndata: {"content": "\xff\xfe"}\n\ndata: 4\n\n'])
    assert next(batches) == ["1", "2"]
    with pytest.raises(UnicodeDecodeError):
        next(batches)


def test_the_events_a_read_completes_come_together():
    body = [b"data: 1\n\ndata: 2\n", b"\ndata: 3\n\nda", b"ta: 4", b"\n\n"]
    assert list(event_batches(body)) == [["1"], ["2", "3"], ["4"]]


def test_a_lone_surrogate_escape_parses_as_the_json_module_would():
    assert parse_json('{"content": "\\ud83d"}') == {"content": "\ud83d"}


def test_text_that_is_not_json_raises_the_json_modules_error_with_the_text():
    with pytest.raises(json.JSONDecodeError) as raised:
        parse_json("{oops")
    assert raised.value.doc == "{oops"
