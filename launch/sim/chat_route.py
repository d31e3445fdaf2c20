"""/v1/chat/completions: checks, the scripted reply rendered as M3's raw text, and its stream or response.

Order of failures, as in sglang-kt (request_checks.py): schema and request checks are HTTP 400 before
anything streams; a LoRA adapter without --enable-lora, an input as long as the context, a feature without
its server flag, or sampling settings out of range, are the tokenizer manager's ValueError (a 400, or for a
stream a `data: {"error": ...}` event then `[DONE]`); an input longer than the KV pool is the scheduler's
abort (a 400, or for a stream a role chunk then a finish chunk with `abort`).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator

from fastapi import Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

from launch.sim import chunks
from launch.sim.chunks import ChunkHeader, Usage
from launch.sim.engine import Engine
from launch.sim.generation import plan_output
from launch.sim.logprobs import token_logprobs
from launch.sim.request import ChatRequest, prompt_texts, to_conversation
from launch.sim.request_checks import conversion_problem, engine_problem, validation_problem
from launch.sim.responder import M3_PARSER, ParseSetup, StreamOptions, ToolMode, choice_body, sse_events
from launch.sim.routing import topic_key
from launch.sim.scheduler import Finish, Job, Step
from launch.sim.tokens import prompt_tokens

DISCONNECT_CHECK_EVERY = 16  # non-streaming: tokens between checks that the client is still there
SCHEDULER_RESERVED_TOKENS = 5  # plan.max_req_input_len is the scheduler's max_req_len less these


class ClientGone(Exception):
    """The non-streaming client hung up."""


def parse_setup(engine: Engine, request: ChatRequest) -> ParseSetup:
    settings = engine.plan.settings
    tools_on = bool(request.tools) and request.choice_mode != "none" and settings.tool_call_parser == M3_PARSER
    mode: ToolMode = ("json" if request.choice_mode in ("required", "named") else "native") if tools_on else "off"
    return ParseSetup(
        reasoning=settings.reasoning_parser == M3_PARSER and request.separate_reasoning,
        forced_reasoning=request.thinking_mode == "enabled",
        tool_mode=mode,
        tools={t.function.name: t.function.parameters_schema for t in request.tools or []},
        stream_reasoning=request.stream_reasoning,
    )


def error_response(message: str, err_type: str = "BadRequestError", code: int = 400) -> JSONResponse:
    return JSONResponse(chunks.error_json(message, err_type, code), status_code=code)


def refusal_response(refused: str, stream: bool) -> Response:
    """An engine check's refusal: 0.7.2 streams it as one error event and [DONE] when the request streams."""
    if stream:
        return StreamingResponse(iter([chunks.error_event(refused), chunks.EVENT_DONE]), media_type="text/event-stream")
    return error_response(refused)


def _stream_options(request: ChatRequest) -> StreamOptions:
    given = request.stream_options
    return StreamOptions(bool(given and given.include_usage), bool(given and given.continuous_usage_stats),
                         (request.top_logprobs or 0) if request.logprobs else None)


async def collect_steps(steps: AsyncIterator[Step], raw: Request) -> tuple[str, Finish, int]:
    text, finish, completion_tokens = [], Finish("abort"), 0
    async for step in steps:
        text.append(step.text)
        finish, completion_tokens = step.finish or finish, step.completion_tokens
        if completion_tokens % DISCONNECT_CHECK_EVERY == 0 and await raw.is_disconnected():
            await steps.aclose()  # type: ignore[attr-defined]  # an async generator, typed as the iterator it is used as
            raise ClientGone
    return "".join(text), finish, completion_tokens


async def chat_completions(engine: Engine, request: ChatRequest, raw: Request) -> Response:
    problem = validation_problem(request, engine.plan.context_length_flag)
    if problem:
        return error_response(problem)
    problem = conversion_problem(request)
    if problem:
        return error_response(problem, "BadRequest")
    try:
        conversation = to_conversation(request)
    except ValueError as exc:  # assistant tool-call arguments that are not JSON
        return error_response(str(exc), "BadRequest")
    prompt = prompt_tokens(prompt_texts(request))
    refused = engine_problem(request, len(prompt), engine.plan)
    if refused is not None:
        return refusal_response(refused, bool(request.stream))
    room = engine.plan.max_req_input_len + SCHEDULER_RESERVED_TOKENS - len(prompt) - 1
    output = plan_output(request, conversation, room)
    first_user = next((m.text for m in request.messages if m.role == "user"), "")
    # n > 1: each choice is a request of its own, with a fresh id (io_struct.GenerateReqInput.regenerate_rid).
    ids = [request.rid or uuid.uuid4().hex] if request.n == 1 else [uuid.uuid4().hex for _ in range(request.n)]
    created = int(time.time())
    headers = [ChunkHeader(rid, created, request.model) for rid in ids]
    steps = [engine.scheduler.generate(Job(rid, topic_key(first_user), prompt, output.pieces,
                                           request.max_new_tokens, output.end)) for rid in ids]
    setup, options = parse_setup(engine, request), _stream_options(request)
    if request.stream:
        return StreamingResponse(sse_events(headers, steps, setup, len(prompt), options, output.tokens),
                                 media_type="text/event-stream")
    tasks = [asyncio.ensure_future(collect_steps(s, raw)) for s in steps]
    try:
        results = await asyncio.gather(*tasks)
    except ClientGone:
        for task in tasks:  # the other choices stop at their next token, and count as aborted
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        return Response(status_code=499)
    aborted = next((finish for _, finish, _ in results if finish.kind == "abort" and finish.message), None)
    if aborted is not None:
        return error_response(aborted.message or "")
    choices = [choice_body(i, text, finish, setup,
                           token_logprobs(output.tokens[:count], 0, options.top_logprobs)
                           if options.top_logprobs is not None else None)
               for i, (text, finish, count) in enumerate(results)]
    usage = Usage(len(prompt), sum(count for _, _, count in results))
    return JSONResponse(chunks.completion(headers[0], choices, usage))
