"""/v1/messages and /v1/messages/count_tokens as sglang-kt 0.7.2 serves them (entrypoints/anthropic/serving.py):
the Anthropic request becomes a chat-completions request, the simulated chat answers it, and its OpenAI stream is
translated back event by event.

What 0.7.2 does and the sim does too: only `delta.content` and tool calls become content blocks, so reasoning is
dropped (and Anthropic's `thinking` parameter is not even a field: ignored); the stream always asks for usage,
and `message_start` carries input_tokens 0 while `message_delta` carries the real input and output tokens; the
finish chunk is only read for the stop reason; a tool call opens a `tool_use` block streamed as
`input_json_delta`; a request the chat layer refuses is a 400 `invalid_request_error`, any other failure a 500.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterable, AsyncIterator
from typing import Any, Literal

from fastapi import Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from pydantic import ValidationError

from launch.sim.anthropic_protocol import (
    AnthropicContentBlock,
    AnthropicCountTokensRequest,
    AnthropicDelta,
    AnthropicError,
    AnthropicErrorResponse,
    AnthropicMessagesRequest,
    AnthropicMessagesResponse,
    AnthropicStreamEvent,
    AnthropicUsage,
)
from launch.sim.chat_route import chat_completions
from launch.sim.engine import Engine
from launch.sim.request import ChatRequest, prompt_texts
from launch.sim.tokens import prompt_tokens

StopReason = Literal["end_turn", "max_tokens", "stop_sequence", "tool_use"]
STOP_REASON_MAP: dict[str, StopReason] = {"stop": "end_turn", "length": "max_tokens", "tool_calls": "tool_use"}


def wrap_sse_event(data: str, event_type: str) -> str:
    return f"event: {event_type}\ndata: {data}\n\n"


def error_response(status_code: int, error_type: str, message: str) -> JSONResponse:
    body = AnthropicErrorResponse(error=AnthropicError(type=error_type, message=message))
    return JSONResponse(body.model_dump(), status_code=status_code)


def _dump(event: AnthropicStreamEvent) -> str:
    return wrap_sse_event(event.model_dump_json(exclude_none=True), event.type)


def _message_dict(msg: Any, openai_messages: list[dict[str, Any]]) -> dict[str, Any] | None:
    """One Anthropic message's chat message (its tool results become tool messages, appended on the way)."""
    if isinstance(msg.content, str):
        return {"role": msg.role, "content": msg.content}
    openai_msg: dict[str, Any] = {"role": msg.role}
    content_parts: list[dict[str, Any]] = []
    tool_calls: list[dict[str, Any]] = []
    for block in msg.content:
        if block.type == "text" and block.text:
            content_parts.append({"type": "text", "text": block.text})
        elif block.type == "image" and block.source:
            media_type, data = block.source.get("media_type", "image/png"), block.source.get("data", "")
            content_parts.append({"type": "image_url", "image_url": {"url": f"data:{media_type};base64,{data}"}})
        elif block.type == "tool_use":
            tool_calls.append({"id": block.id or f"call_{uuid.uuid4().hex}", "type": "function",
                               "function": {"name": block.name or "", "arguments": json.dumps(block.input or {})}})
        elif block.type == "tool_result":
            if isinstance(block.content, list):
                tool_content = "\n".join(item.get("text", "") for item in block.content
                                         if isinstance(item, dict) and item.get("type") == "text")
            else:
                tool_content = str(block.content) if block.content else ""
            if msg.role == "user":
                openai_messages.append({"role": "tool", "tool_call_id": block.tool_use_id or block.id or "",
                                        "content": tool_content})
            else:
                content_parts.append({"type": "text", "text": f"Tool result: {tool_content}"})
    if tool_calls:
        openai_msg["tool_calls"] = tool_calls
    if content_parts:
        only_text = len(content_parts) == 1 and content_parts[0]["type"] == "text"
        openai_msg["content"] = content_parts[0]["text"] if only_text else content_parts
    elif not tool_calls:
        return None
    return openai_msg


def to_chat_request(request: AnthropicMessagesRequest) -> ChatRequest:
    """serving.py's _convert_to_chat_completion_request."""
    openai_messages: list[dict[str, Any]] = []
    if request.system:
        system = request.system if isinstance(request.system, str) else "\n".join(
            block.text for block in request.system if block.type == "text" and block.text)
        openai_messages.append({"role": "system", "content": system})
    for msg in request.messages:
        converted = _message_dict(msg, openai_messages)
        if converted is not None:
            openai_messages.append(converted)
    data: dict[str, Any] = {"messages": openai_messages, "model": request.model, "max_tokens": request.max_tokens,
                            "stream": request.stream or False}
    for field, name in (("temperature", "temperature"), ("top_p", "top_p"), ("top_k", "top_k"),
                        ("stop_sequences", "stop")):
        if getattr(request, field) is not None:
            data[name] = getattr(request, field)
    if request.stream:
        data["stream_options"] = {"include_usage": True}
    if request.tools:
        data["tools"] = [{"type": "function", "function": {"name": t.name, "description": t.description or "",
                                                           "parameters": t.input_schema}} for t in request.tools]
    choice = request.tool_choice
    if choice is not None:
        data["tool_choice"] = {"none": "none", "auto": "auto", "any": "required"}.get(choice.type) or {
            "type": "function", "function": {"name": choice.name}}
    elif request.tools:
        data["tool_choice"] = "auto"
    return ChatRequest.model_validate(data)


async def messages(engine: Engine, request: AnthropicMessagesRequest, raw: Request) -> Response:
    try:
        chat_request = to_chat_request(request)
    except (ValidationError, ValueError) as exc:
        return error_response(400, "invalid_request_error", str(exc))
    answer = await chat_completions(engine, chat_request, raw)
    if isinstance(answer, JSONResponse):  # refused before anything ran, or the whole (non-streamed) answer
        body = json.loads(bytes(answer.body))
        if answer.status_code >= 400:
            message = (body.get("message") if isinstance(body, dict) else None) or "Internal processing error"
            return error_response(400, "invalid_request_error", message) if answer.status_code == 400 else \
                error_response(500, "internal_error", "Internal processing error")
        return JSONResponse(convert_response(body).model_dump(exclude_none=True))
    if isinstance(answer, StreamingResponse):
        return StreamingResponse(anthropic_stream(answer.body_iterator, request.model),
                                 media_type="text/event-stream")
    return answer  # the client left (499)


def convert_response(body: dict[str, Any]) -> AnthropicMessagesResponse:
    """serving.py's _convert_response, from the chat completion's JSON."""
    usage = body.get("usage") or {}
    if not body.get("choices"):
        return AnthropicMessagesResponse(content=[AnthropicContentBlock(type="text", text="")], model=body["model"],
                                         stop_reason="end_turn", usage=AnthropicUsage(input_tokens=0, output_tokens=0))
    choice = body["choices"][0]
    message = choice["message"]
    content: list[AnthropicContentBlock] = []
    if message.get("content"):
        content.append(AnthropicContentBlock(type="text", text=message["content"]))
    for call in message.get("tool_calls") or []:
        try:
            tool_input = json.loads(call["function"]["arguments"])
        except (json.JSONDecodeError, TypeError):
            tool_input = {}
        content.append(AnthropicContentBlock(type="tool_use", id=call["id"], name=call["function"]["name"],
                                             input=tool_input))
    return AnthropicMessagesResponse(
        id=f"msg_{uuid.uuid4().hex}", content=content, model=body["model"],
        stop_reason=STOP_REASON_MAP.get(choice.get("finish_reason") or "stop", "end_turn"),
        usage=AnthropicUsage(input_tokens=usage.get("prompt_tokens", 0),
                             output_tokens=usage.get("completion_tokens", 0)))


async def anthropic_stream(openai_stream: AsyncIterable[Any], model: str) -> AsyncIterator[str]:
    """serving.py's _generate_anthropic_stream over the simulated chat's events."""
    first_chunk, index, block_open = True, 0, False
    finish_reason: str | None = None
    usage_info: dict[str, int] | None = None
    message_id = f"msg_{uuid.uuid4().hex}"
    async for item in openai_stream:
        for sse_line in (item.decode() if isinstance(item, bytes) else item).split("\n\n"):
            if not sse_line.startswith("data: "):
                continue
            data_str = sse_line[6:].strip()
            if data_str == "[DONE]":
                if block_open:
                    yield _dump(AnthropicStreamEvent(type="content_block_stop", index=index))
                yield _dump(AnthropicStreamEvent(
                    type="message_delta", delta=AnthropicDelta(stop_reason=STOP_REASON_MAP.get(
                        finish_reason or "stop", "end_turn")),
                    usage=AnthropicUsage(input_tokens=(usage_info or {}).get("input_tokens", 0),
                                         output_tokens=(usage_info or {}).get("output_tokens", 0))))
                yield _dump(AnthropicStreamEvent(type="message_stop"))
                continue
            try:
                chunk = json.loads(data_str)
                choices, usage = chunk.get("choices"), chunk.get("usage")
            except (ValueError, AttributeError):
                yield _dump(AnthropicStreamEvent(type="error", error=AnthropicError(
                    type="api_error", message="Stream processing error")))
                continue
            if first_chunk:
                first_chunk = False
                yield _dump(AnthropicStreamEvent(type="message_start", message=AnthropicMessagesResponse(
                    id=message_id, content=[], model=model,
                    usage=AnthropicUsage(input_tokens=usage["prompt_tokens"] if usage else 0, output_tokens=0))))
                if choices and choices[0]["delta"].get("content") == "":
                    continue
            if not choices and usage:
                usage_info = {"input_tokens": usage["prompt_tokens"],
                              "output_tokens": usage.get("completion_tokens") or 0}
                continue
            if not choices:
                continue
            choice = choices[0]
            if choice.get("finish_reason") is not None:
                finish_reason = choice["finish_reason"]
                continue
            delta = choice["delta"]
            if delta.get("tool_calls"):
                for call in delta["tool_calls"]:
                    function = call.get("function") or {}
                    if function.get("name"):
                        if block_open:
                            yield _dump(AnthropicStreamEvent(type="content_block_stop", index=index))
                            index += 1
                        yield _dump(AnthropicStreamEvent(type="content_block_start", index=index,
                                                         content_block=AnthropicContentBlock(
                                                             type="tool_use",
                                                             id=call.get("id") or f"toolu_{uuid.uuid4().hex}",
                                                             name=function["name"], input={})))
                        block_open = True
                    if function.get("arguments"):
                        yield _dump(AnthropicStreamEvent(type="content_block_delta", index=index, delta=AnthropicDelta(
                            type="input_json_delta", partial_json=function["arguments"])))
                continue
            if delta.get("content"):
                if not block_open:
                    yield _dump(AnthropicStreamEvent(type="content_block_start", index=index,
                                                     content_block=AnthropicContentBlock(type="text", text="")))
                    block_open = True
                yield _dump(AnthropicStreamEvent(type="content_block_delta", index=index,
                                                 delta=AnthropicDelta(type="text_delta", text=delta["content"])))


async def count_tokens(engine: Engine, request: AnthropicCountTokensRequest) -> Response:
    """serving.py's handle_count_tokens: the chat template's prompt tokens of the converted request."""
    try:
        chat_request = to_chat_request(AnthropicMessagesRequest(
            model=request.model, messages=request.messages, max_tokens=1, system=request.system,
            tools=request.tools, tool_choice=request.tool_choice))
    except (ValidationError, ValueError) as exc:
        return error_response(400, "invalid_request_error", str(exc))
    return JSONResponse({"input_tokens": len(prompt_tokens(prompt_texts(chat_request)))})
