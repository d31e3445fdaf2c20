"""Conversation -> the `messages` list of an OpenAI chat-completions request."""

from __future__ import annotations

from m3ui.client.events import ToolCall
from m3ui.client.request import WireMessage
from m3ui.conversation.turns import AssistantTurn, Conversation, ToolTurn, UserTurn


def to_openai_messages(conversation: Conversation, keep_reasoning: bool = False) -> list[WireMessage]:
    """By default reasoning of earlier exchanges is dropped (it is long and the model does not need it), but
    the reasoning of assistant steps after the last user message is kept: those are the tool-calling steps
    of the answer being produced, and M3 continues its thinking across them.
    `keep_reasoning=True` keeps every turn's reasoning as `reasoning_content`."""
    messages: list[WireMessage] = []
    if conversation.system_prompt:
        messages.append({"role": "system", "content": conversation.system_prompt})
    current_from = conversation.last_user_index()
    for position, turn in enumerate(conversation.turns):
        if isinstance(turn, UserTurn):
            messages.append({"role": "user", "content": turn.content})
        elif isinstance(turn, ToolTurn):
            messages.append(turn.result.to_openai())
        else:
            messages.append(assistant_message(turn, keep_reasoning or position > current_from))
    return messages


def assistant_message(turn: AssistantTurn, with_reasoning: bool) -> WireMessage:
    message: WireMessage = {"role": "assistant", "content": turn.content or None}
    if turn.tool_calls:
        message["tool_calls"] = [tool_call_message(call) for call in turn.tool_calls]
    elif message["content"] is None:
        message["content"] = ""
    if with_reasoning and turn.reasoning:
        message["reasoning_content"] = turn.reasoning
    return message


def tool_call_message(call: ToolCall) -> dict[str, object]:
    # sglang-kt parses replayed argument strings and answers 400 to invalid JSON, which would break the whole
    # chat; a call whose arguments were not JSON goes back as {} (its tool result explains the error).
    arguments = call.arguments_json if call.arguments is not None else "{}"
    return {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": arguments}}

