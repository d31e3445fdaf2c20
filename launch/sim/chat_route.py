"""/v1/chat/completions: checks, the scripted reply rendered as M3's raw text, and its stream or response.

Order of failures, as in sglang-kt: schema and request checks are HTTP 400 before anything streams; an
input as long as the context, or sampling settings out of range, are the tokenizer manager's ValueError (a
400, or for a stream a `data: {"error": ...}` event then `[DONE]`); an input longer than the KV pool is the
scheduler's abort (a 400, or for a stream a role chunk then a finish chunk with `abort`).
"""

from __future__ import annotations

import time
import uuid

from fastapi import Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

from launch.sim import chunks
from launch.sim.answers import plan_reply
from launch.sim.chunks import ChunkHeader, Usage
from launch.sim.engine import Engine
from launch.sim.m3_text import Reply, ThinkStyle, render_raw
from launch.sim.request import (
    ChatRequest,
    check_request,
    has_earlier_assistant_turn,
    prompt_texts,
    sampling_error,
    to_conversation,
)
from launch.sim.responder import M3_PARSER, ParseSetup, ToolMode, completion_body, sse_events
from launch.sim.routing import topic_key
from launch.sim.scheduler import Finish, Job
from launch.sim.tokens import THINK_END, THINK_START, prompt_tokens, tokenize

DISCONNECT_CHECK_EVERY = 16  # non-streaming: tokens between checks that the client is still there


def think_style(request: ChatRequest, reply: Reply) -> ThinkStyle:
    mode = request.thinking_mode
    if mode == "enabled":
        return "prefilled"
    if mode == "disabled" or reply.json_calls:  # a constrained JSON output leaves no room for thinking
        return "none"
    if "thinking_mode" not in (request.chat_template_kwargs or {}) and has_earlier_assistant_turn(request):
        return "stray_close"  # M3's reported multi-turn failure when the mode is not sent every turn
    return "self"


def parse_setup(engine: Engine, request: ChatRequest) -> ParseSetup:
    settings = engine.plan.settings
    tools_on = bool(request.tools) and request.choice_mode != "none" and settings.tool_call_parser == M3_PARSER
    mode: ToolMode = ("json" if request.choice_mode in ("required", "named") else "native") if tools_on else "off"
    return ParseSetup(
        reasoning=settings.reasoning_parser == M3_PARSER and request.separate_reasoning,
        forced_reasoning=request.thinking_mode == "enabled",
        tool_mode=mode,
        tools={t.function.name: t.function.parameters for t in request.tools or []},
    )


def raw_output(request: ChatRequest, reply: Reply) -> str:
    raw = render_raw(reply, think_style(request, reply))
    tools_on = bool(request.tools) and request.choice_mode != "none"
    if request.skip_special_tokens and not tools_on:
        # The detokenizer drops special tokens unless told not to (sglang keeps them when tools are on).
        raw = raw.replace(THINK_START, "").replace(THINK_END, "")
    return raw


def _context_error(prompt_len: int, request: ChatRequest, context_len: int) -> str | None:
    """tokenizer_manager._validate_one_request."""
    if prompt_len >= context_len:
        return f"The input ({prompt_len} tokens) is longer than the model's context length ({context_len} tokens)."
    limit = request.max_new_tokens
    if limit is not None and limit + prompt_len >= context_len:
        return (f"Requested token count exceeds the model's maximum context length of {context_len} tokens. "
                f"You requested a total of {limit + prompt_len} tokens: {prompt_len} tokens from the input "
                f"messages and {limit} tokens for the completion. Please reduce the number of tokens in the "
                "input messages or the completion to fit within the limit.")
    return None


def error_response(message: str, err_type: str = "BadRequestError", code: int = 400) -> JSONResponse:
    return JSONResponse(chunks.error_json(message, err_type, code), status_code=code)


async def chat_completions(engine: Engine, request: ChatRequest, raw: Request) -> Response:
    problem = check_request(request, engine.plan.context_length_flag)
    if problem:
        return error_response(problem)
    try:
        conversation = to_conversation(request)
    except ValueError as exc:  # assistant tool-call arguments that are not JSON
        return error_response(str(exc), "BadRequest")
    prompt = prompt_tokens(prompt_texts(request))
    header = ChunkHeader(request.rid or uuid.uuid4().hex, int(time.time()), request.model)
    refused = _context_error(len(prompt), request, engine.plan.context_len) or sampling_error(request)
    if refused is not None:
        if request.stream:
            return StreamingResponse(iter([chunks.error_event(refused), chunks.EVENT_DONE]),
                                     media_type="text/event-stream")
        return error_response(refused)
    reply = plan_reply(conversation)
    first_user = next((m.text for m in request.messages if m.role == "user"), "")
    job = Job(header.id, topic_key(first_user), prompt, tuple(tokenize(raw_output(request, reply))),
              request.max_new_tokens)
    setup = parse_setup(engine, request)
    steps = engine.scheduler.generate(job)
    if request.stream:
        include_usage = bool(request.stream_options and request.stream_options.include_usage)
        return StreamingResponse(sse_events(header, steps, setup, len(prompt), include_usage),
                                 media_type="text/event-stream")
    text, finish, completion_tokens = [], Finish("abort"), 0
    async for step in steps:
        text.append(step.text)
        finish, completion_tokens = step.finish or finish, step.completion_tokens
        if completion_tokens % DISCONNECT_CHECK_EVERY == 0 and await raw.is_disconnected():
            await steps.aclose()  # type: ignore[attr-defined]  # an async generator, typed as the iterator it is used as
            return Response(status_code=499)
    if finish.kind == "abort" and finish.message:
        return error_response(finish.message)
    return JSONResponse(completion_body(header, "".join(text), finish, setup, Usage(len(prompt), completion_tokens)))
