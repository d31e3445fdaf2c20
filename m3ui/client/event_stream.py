"""The chat stream's server-sent events, read straight from the HTTP body and parsed with orjson.

This is the per-token hot path: the openai SDK's own stream would build pydantic models for every chunk, and its
SSE decoder copies the body line by line. Here one event usually is one `data: {...}` line, split off with
bytes.split and parsed by orjson; anything else (comments, other fields, multi-line data, CR line ends) takes the
general path of the SSE spec, as the SDK reads it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator

import orjson

DATA_PREFIX = "data: "


def event_batches(body: Iterable[bytes]) -> Iterator[list[str]]:
    """The data of each complete event in `body`, as text, in one list per piece of the body that completed any
    (a piece is one network read: what the engine sent meanwhile). UnicodeDecodeError for bytes that are not
    UTF-8, once the events before them have been handed over.

    An unfinished event at the end of the body is dropped, as the SDK does (no blank line dispatched it); but a
    body that never completed an event at all is no event stream, and json.JSONDecodeError carries what it sent."""
    pending = b""
    dispatched = False
    for piece in body:
        pending += piece
        if b"\r" in pending:
            # CR LF and lone CR end lines too; a CR at the very end may be the first half of a CR LF.
            held = b"\r" if pending.endswith(b"\r") else b""
            pending = pending[: len(pending) - len(held)].replace(b"\r\n", b"\n").replace(b"\r", b"\n") + held
        *events, pending = pending.split(b"\n\n")
        batch: list[str] = []
        for event in events:
            try:
                data = _data_of(event.decode("utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError):
                if batch:
                    yield batch
                raise
            if data is not None:
                batch.append(data)
        if batch:
            dispatched = True
            yield batch
    if not dispatched and pending.strip():
        raise json.JSONDecodeError("a body that is not an event stream", pending.decode("utf-8", "replace"), 0)


def _data_of(event: str) -> str | None:
    """The event's data; json.JSONDecodeError carrying the whole event when it has fields but no data (a body
    that is not SSE at all reads as such an event, and its empty data would not be JSON either)."""
    if event.startswith(DATA_PREFIX) and "\n" not in event:
        return event[len(DATA_PREFIX) :]
    data: list[str] = []
    dispatched = False
    for line in event.split("\n"):
        if not line or line.startswith(":"):  # a comment (keep-alive)
            continue
        field, _, value = line.partition(":")
        dispatched = True  # any field makes an event, as the SDK reads the stream
        if field == "data":
            data.append(value[1:] if value.startswith(" ") else value)
    if dispatched and not data:
        raise json.JSONDecodeError("an event without a data field", event, 0)
    return "\n".join(data) if dispatched else None


def parse_json(data: str) -> object:
    """orjson, falling back on the json module for what orjson refuses and the SDK's json.loads took (a lone
    `\\ud83d` escape, which safe_text later replaces); json.JSONDecodeError, with the text, when it is not JSON."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return json.loads(data)
