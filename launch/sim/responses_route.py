"""/v1/responses as sglang-kt 0.7.2 serves it for a model that is not gpt-oss (entrypoints/openai/
serving_responses.py: create_responses, _make_request, responses_full_generator, _make_response_output_items,
responses_stream_generator_non_harmony; protocol.py's ResponsesRequest and ResponsesResponse).

The request becomes a chat request (instructions a system turn, input items chat messages, function tools chat
tools, other tool types ignored), which the simulated chat answers with its reasoning and tool-call parsing; its
reply becomes Responses output items: a `reasoning` item, a `message` item (only when its text is not blank),
then `function_call` items. What 0.7.2 does and the sim does too:
- max_new_tokens is min(max_output_tokens, max(context - prompt, 512)) less 2 (to_sampling_params);
- a request the chat checks refuse is a 400 `{"error": {...}}` whose message ends in " None" (f"{e} {e.__cause__}");
  a schema error is a 400 with type "Bad Request"; an engine refusal is a 400 `invalid_request_error`, and inside
  a stream an `error` event that ends it;
- the stream: `response.created` and `response.in_progress` (status in_progress, no output, `tools: []`), each
  item's `output_item.added` ... `output_item.done`, text deltas only when not blank, and `response.completed`
  carrying the output and `usage` (input_tokens, output_tokens, their details, total_tokens); every event numbered
  by `sequence_number`, serialized by `json.dumps(..., ensure_ascii=False)`.
Not simulated: the response store (`store` is echoed; `previous_response_id` is answered 404 as an id not found)
and background mode.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import AsyncIterable, AsyncIterator, Callable
from typing import Any, Literal

from fastapi import Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from launch.sim.chat_route import chat_completions
from launch.sim.engine import Engine
from launch.sim.request import ChatRequest, prompt_texts
from launch.sim.request_checks import conversion_problem, validation_problem
from launch.sim.tokens import prompt_tokens

MIN_DEFAULT_MAX_TOKENS = 512  # create_responses: max(context_len - prompt_length, 512)
CONTEXT_MARGIN = 2  # to_sampling_params: "Avoid exceed the context length by minus 2 token"


class ResponseReasoningParam(BaseModel):
    effort: str | None = None
    summary: str | None = None


class ResponseTool(BaseModel):
    model_config = ConfigDict(extra="allow")
    type: str
    name: str | None = None
    description: str | None = None
    parameters: dict[str, Any] | None = None
    strict: bool | None = None
    tools: list[dict[str, Any]] | None = None


class ResponsesRequest(BaseModel):
    """protocol.py's ResponsesRequest (input items are taken as JSON objects and normalized as 0.7.2 does)."""

    background: bool | None = False
    include: list[str] | None = None
    input: str | list[dict[str, Any]]
    instructions: str | None = None
    max_output_tokens: int | None = None
    max_tool_calls: int | None = None
    metadata: dict[str, Any] | None = None
    model: str | None = None
    parallel_tool_calls: bool | None = True
    previous_response_id: str | None = None
    reasoning: ResponseReasoningParam | None = None
    service_tier: Literal["auto", "default", "flex", "scale", "priority"] = "auto"
    store: bool | None = True
    stream: bool | None = False
    temperature: float | None = None
    tool_choice: Literal["auto", "required", "none"] | dict[str, Any] = "auto"
    tools: list[ResponseTool] = Field(default_factory=list)
    top_logprobs: int | None = 0
    top_p: float | None = None
    truncation: Literal["auto", "disabled"] | None = "disabled"
    user: str | None = None
    request_id: str = Field(default_factory=lambda: f"resp_{uuid.uuid4().hex}")
    chat_template_kwargs: dict[str, Any] | None = None
    stop: str | list[str] | None = None


def error_response(message: str, err_type: str = "invalid_request_error", status: int = 400,
                   param: str | None = None) -> JSONResponse:
    """OpenAIServingResponses.create_error_response: the nested envelope."""
    return JSONResponse({"error": {"message": message, "type": err_type, "param": param, "code": status}},
                        status_code=status)


def _event(kind: str, sequence_number: int, **payload: Any) -> str:
    """_response_event."""
    data = {"type": kind, "sequence_number": sequence_number, **payload}
    return f"event: {kind}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"


def _part_text(part: Any) -> Any:
    """_normalize_response_content_part_for_chat."""
    if not isinstance(part, dict):
        return part
    if part.get("type") in ("input_text", "output_text"):
        return {"type": "text", "text": part.get("text", "")}
    if part.get("type") == "input_image":
        image_url = part.get("image_url")
        if isinstance(image_url, str):
            image_url = {"url": image_url, "detail": part.get("detail", "auto")}
        return {"type": "image_url", "image_url": image_url}
    return part


def _chat_message(message: dict[str, Any]) -> dict[str, Any] | None:
    """_normalize_response_message_for_chat."""
    kind = message.get("type")
    if kind == "function_call":
        arguments = message.get("arguments", "{}")
        if isinstance(arguments, dict):
            arguments = json.dumps(arguments, ensure_ascii=False)
        elif not isinstance(arguments, str):
            arguments = "{}"
        else:
            try:
                parsed = json.loads(arguments or "{}")
            except json.JSONDecodeError:
                arguments, parsed = "{}", {}
            if not isinstance(parsed, dict):
                arguments = "{}"
        return {"role": "assistant", "content": "", "tool_calls": [{
            "id": message.get("call_id") or message.get("id"), "type": "function",
            "function": {"name": message.get("name"), "arguments": arguments}}]}
    if kind == "function_call_output":
        output = message.get("output", "")
        if isinstance(output, list):
            output = "".join(part.get("text", "") for part in output if isinstance(part, dict))
        if not isinstance(output, str):
            output = json.dumps(output, ensure_ascii=False)
        return {"role": "tool", "tool_call_id": message.get("call_id"), "content": output}
    if kind == "reasoning":
        texts = [part["text"] for part in message.get("summary") or message.get("content") or []
                 if isinstance(part, dict) and part.get("text")]
        return {"role": "assistant", "reasoning_content": "\n".join(texts), "content": ""} if texts else None
    if kind not in (None, "message"):
        raise ValueError(f"Unsupported Responses API input item type: {kind!r}")
    content = message.get("content")
    normalized = {k: v for k, v in message.items() if v is not None and k not in ("id", "status", "type")}
    if isinstance(content, list):
        parts = [_part_text(part) for part in content]
        if normalized.get("role") in ("assistant", "developer", "system"):
            normalized["content"] = "\n\n".join(p.get("text", "") for p in parts
                                                if isinstance(p, dict) and p.get("type") == "text")
        else:
            normalized["content"] = parts
    return normalized


def _merged(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """_merge_consecutive_assistant_messages."""
    merged: list[dict[str, Any]] = []
    for message in messages:
        if message.get("role") == "assistant" and merged and merged[-1].get("role") == "assistant":
            previous = merged[-1]
            if message.get("reasoning_content"):
                previous["reasoning_content"] = "\n".join(
                    p for p in (previous.get("reasoning_content", ""), message["reasoning_content"]) if p)
            if message.get("content"):
                before, now = previous.get("content", ""), message["content"]
                if isinstance(before, str) and isinstance(now, str):
                    previous["content"] = "\n\n".join(p for p in (before, now) if p)
                else:
                    previous["content"] = ((before if isinstance(before, list) else
                                            ([{"type": "text", "text": before}] if before else []))
                                           + (now if isinstance(now, list) else [{"type": "text", "text": now}]))
            if message.get("tool_calls"):
                previous.setdefault("tool_calls", []).extend(message["tool_calls"])
            continue
        merged.append(message)
    return merged


def input_messages(request: ResponsesRequest) -> list[dict[str, Any]]:
    """_construct_input_messages (without a previous response: the sim keeps no store)."""
    messages: list[dict[str, Any]] = []
    if request.instructions:
        messages.append({"role": "system", "content": request.instructions})
    if isinstance(request.input, str):
        messages.append({"role": "user", "content": request.input})
    else:
        messages.extend(m for item in request.input if (m := _chat_message(item)) is not None)
    return _merged(messages)


def chat_tool_choice(tool_choice: Any) -> Any:
    """_chat_tool_choice."""
    if not isinstance(tool_choice, dict):
        return tool_choice
    if tool_choice.get("type") != "function" or not tool_choice.get("name"):
        raise ValueError("Only named top-level function tool_choice is supported for non-Harmony Responses "
                         "requests.")
    return {"type": "function", "function": {"name": tool_choice["name"]}}


def chat_tools(request: ResponsesRequest) -> list[dict[str, Any]]:
    """_response_tools_to_chat_tools: function tools only."""
    tools = []
    for tool in request.tools:
        if tool.type != "function":
            continue
        if not tool.name:
            raise ValueError("Responses function tools require a non-empty name.")
        tools.append({"type": "function", "function": {"name": tool.name, "description": tool.description,
                                                       "parameters": tool.parameters, "strict": bool(tool.strict)}})
    return tools


def to_chat_request(request: ResponsesRequest, context_len: int) -> ChatRequest:
    """_make_request, with to_sampling_params' max_new_tokens. ValueError (or ValidationError) when refused."""
    tools = chat_tools(request)
    chat = ChatRequest.model_validate({
        "model": request.model or "default", "messages": input_messages(request), "stream": bool(request.stream),
        "tools": tools or None, "tool_choice": chat_tool_choice(request.tool_choice) if tools else "none",
        "stop": request.stop, "reasoning_effort": request.reasoning.effort if request.reasoning else None,
        "chat_template_kwargs": request.chat_template_kwargs,
        "stream_options": {"include_usage": True} if request.stream else None})
    problem = validation_problem(chat, None) or conversion_problem(chat)
    if problem:
        raise ValueError(problem)
    default = max(context_len - len(prompt_tokens(prompt_texts(chat))), MIN_DEFAULT_MAX_TOKENS)
    limit = min(request.max_output_tokens, default) if request.max_output_tokens is not None else default
    # both fields: the chat's `max_completion_tokens or max_tokens` would take a cap of 0 for none
    cap = limit - CONTEXT_MARGIN
    return chat.model_copy(update={"max_completion_tokens": cap, "max_tokens": cap})


def response_body(request: ResponsesRequest, created: int, output: list[dict[str, Any]], status: str,
                  usage: tuple[int, int] | None) -> dict[str, Any]:
    """ResponsesResponse.from_request, as JSON."""
    text_only = bool(output) and all(item["type"] == "message" for item in output)
    return {
        "id": request.request_id, "object": "response", "created_at": created, "model": request.model or "default",
        "output": output, "status": status, "usage": usage_json(*usage) if usage else None,
        "parallel_tool_calls": True if request.parallel_tool_calls is None else request.parallel_tool_calls,
        "tool_choice": request.tool_choice, "tools": [t.model_dump() for t in request.tools], "error": None,
        "incomplete_details": None, "instructions": request.instructions,
        "max_output_tokens": request.max_output_tokens, "previous_response_id": request.previous_response_id,
        "reasoning": {"effort": request.reasoning.effort if request.reasoning else None,
                      "summary": request.reasoning.summary if request.reasoning else None},
        "store": request.store, "temperature": request.temperature,
        "text": {"format": {"type": "text"}} if text_only else None, "top_p": request.top_p,
        "truncation": request.truncation, "user": request.user, "metadata": request.metadata or {}}


def usage_json(prompt: int, completion: int) -> dict[str, Any]:
    """ResponseUsageInfo.from_usage_info (the sim reports no cached and no reasoning tokens: UsageInfo's 0s)."""
    return {"input_tokens": prompt, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": completion,
            "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": prompt + completion}


def _ids() -> tuple[str, str]:
    """A function call's item id and call id (fc_ and call_ with random_uuid's hex, cut as 0.7.2 cuts them)."""
    return f"fc_{uuid.uuid4().hex[:8]}", f"call_{uuid.uuid4().hex[:24]}"


def _reasoning_item(item_id: str, text: str, wants_summary: bool, status: str | None) -> dict[str, Any]:
    return {"id": item_id, "type": "reasoning",
            "summary": [{"type": "summary_text", "text": text}] if wants_summary else [],
            "content": [{"type": "reasoning_text", "text": text}], "status": status}


def _text_part(text: str) -> dict[str, Any]:
    return {"type": "output_text", "text": text, "annotations": [], "logprobs": None}


def _message_item(item_id: str, text: str | None, status: str) -> dict[str, Any]:
    return {"id": item_id, "type": "message", "role": "assistant",
            "content": [] if text is None else [_text_part(text)], "status": status}


def _call_item(ids: tuple[str, str], name: str, arguments: str, status: str) -> dict[str, Any]:
    return {"id": ids[0], "call_id": ids[1], "type": "function_call", "name": name, "arguments": arguments,
            "status": status}


def output_items(request: ResponsesRequest, message: dict[str, Any]) -> list[dict[str, Any]]:
    """_make_response_output_items, from the chat answer's (already parsed) message."""
    items = []
    wants_summary = request.reasoning is not None and request.reasoning.summary is not None
    if message.get("reasoning_content"):
        items.append(_reasoning_item(f"rs_{uuid.uuid4().hex}", message["reasoning_content"], wants_summary, None))
    content = message.get("content") or ""
    if content.strip():
        items.append(_message_item(f"msg_{uuid.uuid4().hex}", content, "completed"))
    items += [_call_item(_ids(), call["function"]["name"], call["function"]["arguments"] or "", "completed")
              for call in message.get("tool_calls") or []]
    return items


async def responses(engine: Engine, request: ResponsesRequest, raw: Request) -> Response:
    """create_responses."""
    if request.previous_response_id is not None:
        if not request.previous_response_id.startswith("resp_"):
            return error_response(f"Invalid 'response_id': '{request.previous_response_id}'. Expected an ID that "
                                  "begins with 'resp'.", param="response_id")
        return error_response(f"Response with id '{request.previous_response_id}' not found.", status=404,
                              param="response_id")
    try:
        chat = to_chat_request(request, engine.plan.context_len)
    except (ValueError, ValidationError) as exc:
        return error_response(f"{exc} {exc.__cause__}")
    created = int(time.time())
    answer = await chat_completions(engine, chat, raw)
    if isinstance(answer, StreamingResponse):
        return StreamingResponse(_stream(request, answer.body_iterator, created), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-cache", "Connection": "keep-alive"})
    if not isinstance(answer, JSONResponse):
        return answer  # the client left (499)
    body = json.loads(bytes(answer.body))
    if answer.status_code >= 400:
        return error_response(body.get("message") or "Internal processing error")
    usage = body.get("usage") or {}
    output = output_items(request, body["choices"][0]["message"])
    return JSONResponse(response_body(request, created, output, "completed",
                                      (usage.get("prompt_tokens", 0), usage.get("completion_tokens", 0))))


class _StreamState:
    """responses_stream_generator_non_harmony's open items and the events that open and close them."""

    def __init__(self, request: ResponsesRequest, emit: Callable[..., str]) -> None:
        self.emit, self.output_index = emit, -1
        self.wants_summary = request.reasoning is not None and request.reasoning.summary is not None
        self.items: list[dict[str, Any]] = []  # emitted_items
        self.reasoning: dict[str, Any] | None = None
        self.message: dict[str, Any] | None = None
        self.tools: dict[int, dict[str, Any]] = {}

    def _next_index(self) -> int:
        self.output_index += 1
        return self.output_index

    def reasoning_delta(self, text: str) -> list[str]:
        events = []
        if self.reasoning is None:
            self.reasoning = {"id": f"rs_{uuid.uuid4().hex}", "index": self._next_index(), "text": ""}
            events.append(self.emit("response.output_item.added", output_index=self.reasoning["index"], item={
                "id": self.reasoning["id"], "type": "reasoning", "summary": [], "content": [],
                "status": "in_progress"}))
            if self.wants_summary:
                events.append(self.emit("response.reasoning_summary_part.added", item_id=self.reasoning["id"],
                                        output_index=self.reasoning["index"], summary_index=0,
                                        part={"type": "summary_text", "text": ""}))
        self.reasoning["text"] += text
        where = {"item_id": self.reasoning["id"], "output_index": self.reasoning["index"], "delta": text}
        if self.wants_summary:
            events.append(self.emit("response.reasoning_summary_text.delta", **where, summary_index=0))
        else:
            events.append(self.emit("response.reasoning_text.delta", **where, content_index=0))
        return events

    def close_reasoning(self) -> list[str]:
        state, self.reasoning = self.reasoning, None
        if state is None:
            return []
        text, where = state["text"], {"item_id": state["id"], "output_index": state["index"]}
        if self.wants_summary:
            part = {"type": "summary_text", "text": text}
            events = [self.emit("response.reasoning_summary_text.done", **where, summary_index=0, text=text),
                      self.emit("response.reasoning_summary_part.done", **where, summary_index=0, part=part)]
        else:
            events = [self.emit("response.reasoning_text.done", **where, content_index=0, text=text)]
        item = _reasoning_item(state["id"], text, self.wants_summary, "completed")
        events.append(self.emit("response.output_item.done", output_index=state["index"], item=item))
        self.items.append(item)
        return events

    def text_delta(self, text: str) -> list[str]:
        events = []
        if self.message is None:
            self.message = {"id": f"msg_{uuid.uuid4().hex}", "index": self._next_index(), "text": ""}
            events += [self.emit("response.output_item.added", output_index=self.message["index"],
                                 item=_message_item(self.message["id"], None, "in_progress")),
                       self.emit("response.content_part.added", item_id=self.message["id"],
                                 output_index=self.message["index"], content_index=0, part=_text_part(""))]
        self.message["text"] += text
        events.append(self.emit("response.output_text.delta", item_id=self.message["id"],
                                output_index=self.message["index"], content_index=0, delta=text, logprobs=[]))
        return events

    def close_message(self) -> list[str]:
        state, self.message = self.message, None
        if state is None:
            return []
        where = {"item_id": state["id"], "output_index": state["index"], "content_index": 0}
        item = _message_item(state["id"], state["text"], "completed")
        self.items.append(item)
        return [self.emit("response.output_text.done", **where, text=state["text"], logprobs=[]),
                self.emit("response.content_part.done", **where, part=_text_part(state["text"])),
                self.emit("response.output_item.done", output_index=state["index"], item=item)]

    def tool_delta(self, index: int, name: str, arguments: str) -> list[str]:
        events = []
        if index in self.tools:
            if name:
                self.tools[index]["name"] = name
        else:
            ids = _ids()
            self.tools[index] = {"ids": ids, "name": name, "arguments": "", "index": self._next_index()}
            events.append(self.emit("response.output_item.added", output_index=self.tools[index]["index"],
                                    item=_call_item(ids, name, "", "in_progress")))
        state = self.tools[index]
        if arguments:
            state["arguments"] += arguments
            events.append(self.emit("response.function_call_arguments.delta", item_id=state["ids"][0],
                                    output_index=state["index"], delta=arguments))
        return events

    def close_tools(self) -> list[str]:
        events = []
        for index in sorted(self.tools):
            state = self.tools[index]
            item = _call_item(state["ids"], state["name"], state["arguments"], "completed")
            events += [self.emit("response.function_call_arguments.done", item_id=state["ids"][0],
                                 output_index=state["index"], arguments=state["arguments"]),
                       self.emit("response.output_item.done", output_index=state["index"], item=item)]
            self.items.append(item)
        return events


async def _stream(request: ResponsesRequest, chat_events: AsyncIterable[Any], created: int) -> AsyncIterator[str]:
    """responses_stream_generator_non_harmony over the simulated chat's parsed stream."""
    sequence = iter(range(1 << 62))

    def emit(kind: str, **payload: Any) -> str:
        return _event(kind, next(sequence), **payload)

    initial = {**response_body(request, created, [], "in_progress", None), "tools": []}
    yield emit("response.created", response=initial)
    yield emit("response.in_progress", response=initial)
    state, usage = _StreamState(request, emit), (0, 0)
    try:
        async for item in chat_events:
            for line in (item.decode() if isinstance(item, bytes) else item).split("\n\n"):
                if not line.startswith("data: ") or line == "data: [DONE]":
                    continue
                chunk = json.loads(line[6:])
                if "error" in chunk:  # the tokenizer manager's ValueError
                    yield emit("error", error={"message": chunk["error"]["message"], "type": "invalid_request_error",
                                               "param": None, "code": 400})
                    return
                if chunk.get("usage") and not chunk["choices"]:
                    usage = (chunk["usage"]["prompt_tokens"], chunk["usage"]["completion_tokens"] or 0)
                for event in _chunk_events(state, chunk):
                    yield event
    finally:
        if hasattr(chat_events, "aclose"):
            await chat_events.aclose()  # a hang-up aborts the engine's request
    for event in [*state.close_reasoning(), *state.close_message(), *state.close_tools()]:
        yield event
    yield emit("response.completed", response={**response_body(request, created, state.items, "completed", usage),
                                               "tools": []})


def _chunk_events(state: _StreamState, chunk: dict[str, Any]) -> list[str]:
    events: list[str] = []
    for choice in chunk.get("choices") or []:
        delta = choice.get("delta") or {}
        if delta.get("reasoning_content"):
            events += state.reasoning_delta(delta["reasoning_content"])
        content, calls = delta.get("content") or "", delta.get("tool_calls") or []
        if content or calls:
            events += state.close_reasoning()
        if content.strip():
            events += state.text_delta(content)
        if calls:
            events += state.close_message()
        for call in calls:
            function = call.get("function") or {}
            events += state.tool_delta(call.get("index", 0), function.get("name") or "",
                                       function.get("arguments") or "")
    return events
