"""Typed events a chat stream turns into; the UI and the tool loop switch on these."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Literal

from m3ui.client.safe_text import safe_text

# "cancelled" (the user pressed stop) and "capped" (the engine went on past max_tokens and this client cut it
# off) are ours; the others come from the engine's finish chunk.
FinishReason = Literal["stop", "length", "tool_calls", "cancelled", "capped"]
# http: the engine answered with an error status; stream: it reported an error or ended oddly mid-stream;
# dropped: the connection closed mid-answer; abort: it aborted the request; connection: it cannot be reached;
# protocol: what it sent is not a chat stream; stall: it sent nothing for longer than the stall limit.
# refused: not sent at all, by m3ui itself (the person's quota: m3ui.accounts.meter); retrying cannot help
ErrorKind = Literal["http", "stream", "dropped", "abort", "connection", "protocol", "stall", "refused"]


@dataclass(frozen=True)
class ToolCall:
    """One complete tool call; `arguments` is None when `arguments_json` is not a JSON object."""

    index: int
    id: str
    name: str
    arguments_json: str
    arguments: dict[str, object] | None
    parse_error: str | None = None

    @classmethod
    def from_json_text(cls, index: int, call_id: str, name: str, arguments_json: str) -> ToolCall:
        """Parse the streamed argument text; bad JSON is kept and flagged, never raised."""
        name, arguments_json = safe_text(name), safe_text(arguments_json)
        text = arguments_json.strip() or "{}"
        try:
            parsed = json.loads(text)
        except json.JSONDecodeError as exc:
            return cls(index, call_id, name, arguments_json, None, f"arguments are not valid JSON ({exc})")
        if not isinstance(parsed, dict):
            return cls(index, call_id, name, arguments_json, None, "arguments must be a JSON object")
        return cls(index, call_id, name, arguments_json, parsed)


@dataclass(frozen=True)
class StreamStats:
    """Per-message timing; None where the stream did not tell (never a guess). Tokens are timed when the app read
    them: with paced reads (ChatStream's read_gap) up to one gap after they arrived, except the first."""

    time_to_first_token_s: float | None
    thinking_s: float | None
    decode_tokens_per_s: float | None
    prompt_tokens: int | None
    completion_tokens: int | None
    total_s: float


@dataclass(frozen=True)
class ReasoningDelta:
    text: str


@dataclass(frozen=True)
class ContentDelta:
    text: str


@dataclass(frozen=True)
class ToolCallStarted:
    index: int
    id: str
    name: str


@dataclass(frozen=True)
class ToolCallDelta:
    index: int
    arguments_fragment: str


@dataclass(frozen=True)
class ToolCallsComplete:
    calls: tuple[ToolCall, ...]


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int


@dataclass(frozen=True)
class Finished:
    """Always the last event of a successful (or user-stopped) stream."""

    reason: FinishReason
    stats: StreamStats


@dataclass(frozen=True)
class StreamError:
    """Always the last event of a failed stream; `status` is the HTTP/engine code when known; `message` is one
    plain sentence (no final period) saying what happened."""

    kind: ErrorKind
    status: int | None
    message: str


StreamEvent = (
    ReasoningDelta
    | ContentDelta
    | ToolCallStarted
    | ToolCallDelta
    | ToolCallsComplete
    | Usage
    | Finished
    | StreamError
)
