"""The exact JSON shapes sglang-kt's OpenAI layer puts on the wire (entrypoints/openai/protocol.py).

Chunks serialize like pydantic's model_dump_json (compact, UTF-8 kept, every declared key present, null
when unused); the mid-stream error event like `json.dumps` (serving_base.create_streaming_error_response).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from launch.sim.tool_stream import CallDelta

EVENT_DONE = "data: [DONE]\n\n"


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int
    completion_tokens: int

    def to_json(self) -> dict[str, Any]:
        return {"prompt_tokens": self.prompt_tokens, "total_tokens": self.prompt_tokens + self.completion_tokens,
                "completion_tokens": self.completion_tokens, "prompt_tokens_details": None, "reasoning_tokens": 0}


@dataclass(frozen=True)
class ChunkHeader:
    id: str
    created: int
    model: str


def tool_call_json(call_id: str | None, index: int, name: str | None, arguments: str) -> dict[str, Any]:
    return {"id": call_id, "index": index, "type": "function", "function": {"name": name, "arguments": arguments}}


def delta(*, role: str | None = None, content: str | None = None, reasoning: str | None = None,
          tool_calls: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"role": role, "content": content, "reasoning_content": reasoning, "tool_calls": tool_calls}


def event(header: ChunkHeader, delta_json: dict[str, Any] | None, *, finish_reason: str | None = None,
          matched_stop: int | str | None = None, usage: Usage | None = None, index: int = 0,
          logprobs: dict[str, Any] | None = None) -> str:
    """One `data:` event; `delta_json` None makes the usage chunk (no choices)."""
    choices = [] if delta_json is None else [{
        "index": index, "delta": delta_json, "logprobs": logprobs, "finish_reason": finish_reason,
        "matched_stop": matched_stop}]
    body = {"id": header.id, "object": "chat.completion.chunk", "created": header.created, "model": header.model,
            "choices": choices, "usage": usage.to_json() if usage else None}
    return f"data: {json.dumps(body, ensure_ascii=False, separators=(',', ':'))}\n\n"


def error_json(message: str, err_type: str = "BadRequestError", code: int = 400) -> dict[str, Any]:
    return {"object": "error", "message": message, "type": err_type, "param": None, "code": code}


def error_event(message: str, err_type: str = "BadRequestError", code: int = 400) -> str:
    return f"data: {json.dumps({'error': error_json(message, err_type, code)})}\n\n"


def tool_calls_from_deltas(deltas: list[CallDelta], new_id: Callable[[], str]) -> list[dict[str, Any]] | None:
    """Assemble a whole message's tool calls (non-streaming), minting one id per call."""
    calls: dict[int, dict[str, Any]] = {}
    for d in deltas:
        if d.name is not None:
            calls[d.index] = tool_call_json(new_id(), d.index, d.name, "")
        calls[d.index]["function"]["arguments"] += d.arguments
    return list(calls.values()) or None


def choice(index: int, *, content: str | None, reasoning: str | None, tool_calls: list[dict[str, Any]] | None,
           finish_reason: str, matched_stop: int | str | None, logprobs: dict[str, Any] | None) -> dict[str, Any]:
    """One choice of the non-streaming response body."""
    message = {"role": "assistant", "content": content, "reasoning_content": reasoning, "tool_calls": tool_calls}
    return {"index": index, "message": message, "logprobs": logprobs, "finish_reason": finish_reason,
            "matched_stop": matched_stop}


def completion(header: ChunkHeader, choices: list[dict[str, Any]], usage: Usage) -> dict[str, Any]:
    """The non-streaming response body."""
    return {"id": header.id, "object": "chat.completion", "created": header.created, "model": header.model,
            "choices": choices, "usage": usage.to_json(), "metadata": {"weight_version": "default"}}
