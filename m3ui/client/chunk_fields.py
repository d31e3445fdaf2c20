"""Read the fields of one streamed chunk (parsed JSON), checking their types: a misbehaving engine's
`{"choices": null}` or `"content": 5` would otherwise surface as a Python error far away."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from m3ui.client.errors import preview
from m3ui.client.events import StreamError, Usage


class MalformedChunk(ValueError):
    """The chunk is not in the OpenAI chat-stream shape; the message says what is wrong."""


@dataclass(frozen=True)
class CallFragment:
    index: int
    id: str | None
    name: str | None
    arguments: str | None


def chunk_object(chunk: object) -> dict[str, Any]:
    if not isinstance(chunk, dict):
        raise MalformedChunk("it is not a JSON object")
    return chunk


def chunk_usage(chunk: dict[str, Any]) -> Usage | None:
    usage = chunk.get("usage")
    if usage is None:
        return None
    counts = [_get(usage, key) for key in ("prompt_tokens", "completion_tokens", "total_tokens")]
    if not all(isinstance(count, int) for count in counts):
        raise MalformedChunk("its usage has no whole token counts")
    return Usage(*counts)


def first_choice(chunk: dict[str, Any], has_usage: bool) -> Any | None:
    """The first choice; None for a usage-only chunk (`choices` empty, or absent next to usage)."""
    choices = chunk.get("choices")
    if choices is None and has_usage:
        return None
    if not isinstance(choices, list):
        raise MalformedChunk("it has no `choices` list")
    return choices[0] if choices else None


def finish_reason(choice: Any) -> str | None:
    return _optional(choice, "finish_reason", str)


def delta_of(choice: Any) -> Any:
    delta = _get(choice, "delta")
    if delta is None:
        raise MalformedChunk("its choice has no `delta`")
    return delta


def delta_text(delta: Any, key: str) -> str | None:
    """`content`, or sglang's `reasoning_content`."""
    return _optional(delta, key, str)


def tool_call_fragments(delta: Any) -> list[CallFragment]:
    calls = _get(delta, "tool_calls")
    if calls is None:
        return []
    if not isinstance(calls, list):
        raise MalformedChunk("its `tool_calls` is not a list")
    fragments = []
    for call in calls:
        index = _get(call, "index")
        if not isinstance(index, int):
            raise MalformedChunk("a tool call has no whole-number `index`")
        function = _get(call, "function")
        fragments.append(CallFragment(index, _optional(call, "id", str), _optional(function, "name", str),
                                      _optional(function, "arguments", str)))
    return fragments


def malformed_chunk_error(chunk: object, problem: MalformedChunk) -> StreamError:
    return StreamError("protocol", None, f"The engine sent a chunk this client cannot read ({problem}): it is "
                       f"misbehaving or not an OpenAI-compatible engine (it sent: {preview(_as_json(chunk))})")


def _get(holder: object, key: str) -> Any:
    """The field, or None when absent or when `holder` is no JSON object at all."""
    return holder.get(key) if isinstance(holder, dict) else None


def _optional(holder: object, key: str, kind: type) -> Any:
    value = _get(holder, key)
    if value is not None and not isinstance(value, kind):
        raise MalformedChunk(f"its `{key}` is a {type(value).__name__}, not a {kind.__name__}")
    return value


def _as_json(chunk: object) -> str:
    return json.dumps(chunk, ensure_ascii=False)
