"""Save a conversation as Markdown (to read) or JSON (to load back)."""

from __future__ import annotations

import json
import re
from dataclasses import asdict, fields
from typing import Any

from m3ui.client.events import StreamStats, ToolCall
from m3ui.client.safe_text import safe_text
from m3ui.conversation.turns import AssistantTurn, Conversation, ToolTurn, Turn, UserTurn
from m3ui.tools.result import ToolResult

FORMAT = "m3ui.conversation"
VERSION = 1


class ConversationFormatError(ValueError):
    """The JSON is not a conversation this version can load; the message says what is wrong."""


def to_markdown(conversation: Conversation) -> str:
    parts = [f"**System:** {conversation.system_prompt}"] if conversation.system_prompt else []
    for turn in conversation.turns:
        if isinstance(turn, UserTurn):
            parts.append(f"### User\n\n{turn.content}")
        elif isinstance(turn, ToolTurn):
            label = "error" if turn.result.is_error else "result"
            parts.append(f"**Tool {label}** `{turn.result.name}` ({turn.result.duration_s:.2f} s)\n\n"
                         f"{fenced(turn.result.content)}")
        else:
            parts.append(_assistant_markdown(turn))
    return safe_text("\n\n".join(parts) + "\n")  # tool-call arguments may hold the model's lone surrogates


def _assistant_markdown(turn: AssistantTurn) -> str:
    lines = ["### Assistant"]
    if turn.reasoning:
        lines.append(f"<details><summary>Thinking</summary>\n\n{turn.reasoning}\n\n</details>")
    if turn.content:
        lines.append(turn.content)
    for call in turn.tool_calls:
        lines.append(f"**Tool call** `{call.name}`\n\n{fenced(call.arguments_json, 'json')}")
    if turn.stats and turn.stats.completion_tokens:
        lines.append(f"*{turn.stats.completion_tokens} tokens in {turn.stats.total_s:.1f} s*")
    return "\n\n".join(lines)


def fenced(text: str, language: str = "") -> str:
    """A Markdown code block that holds `text` verbatim: the fence is longer than any backtick run inside."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{language}\n{text}\n{fence}"


def to_json(conversation: Conversation) -> str:
    turns = [_turn_record(turn) for turn in conversation.turns]
    document = {"format": FORMAT, "version": VERSION, "system_prompt": conversation.system_prompt, "turns": turns}
    return safe_text(json.dumps(document, ensure_ascii=False, indent=1))


def _turn_record(turn: Turn) -> dict[str, object]:
    if isinstance(turn, UserTurn):
        return {"role": "user", "content": turn.content, **_at(turn.at)}
    if isinstance(turn, ToolTurn):
        return {"role": "tool", **asdict(turn.result)}
    calls = [{"index": c.index, "id": c.id, "name": c.name, "arguments": c.arguments_json} for c in turn.tool_calls]
    return {"role": "assistant", "content": turn.content, "reasoning": turn.reasoning, "tool_calls": calls,
            "stats": asdict(turn.stats) if turn.stats else None, "finish_reason": turn.finish_reason, **_at(turn.at)}


def _at(at: float | None) -> dict[str, float]:
    """A turn's time, left out when unknown (a chat saved before times were kept keeps its record as it was)."""
    return {} if at is None else {"at": at}


def _time(record: dict[str, Any]) -> float | None:
    at = record.get("at")
    return float(at) if isinstance(at, int | float) and not isinstance(at, bool) else None


def from_json(text: str) -> Conversation:
    try:
        document = json.loads(text)
        if document.get("format") != FORMAT or document.get("version") != VERSION:
            raise ConversationFormatError(f"not an {FORMAT} file of version {VERSION}")
        turns = tuple(_turn_from_record(record) for record in document["turns"])
        return Conversation(turns, str(document.get("system_prompt", "")))
    except ConversationFormatError:
        raise
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ConversationFormatError(f"cannot load conversation: {type(exc).__name__}: {exc}") from exc


def _turn_from_record(record: dict[str, Any]) -> Turn:  # parsed JSON
    role = record["role"]
    if role == "user":
        return UserTurn(str(record["content"]), _time(record))
    if role == "tool":
        names = {field.name for field in fields(ToolResult)}
        return ToolTurn(ToolResult(**{key: value for key, value in record.items() if key in names}))
    if role != "assistant":
        raise ConversationFormatError(f"unknown role {role!r}")
    calls = tuple(ToolCall.from_json_text(c["index"], c["id"], c["name"], c["arguments"])
                  for c in record.get("tool_calls") or ())
    stats = StreamStats(**record["stats"]) if record.get("stats") else None
    return AssistantTurn(str(record.get("content", "")), str(record.get("reasoning", "")), calls, stats,
                         record.get("finish_reason"), _time(record))
