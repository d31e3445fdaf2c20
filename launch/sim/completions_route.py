"""/v1/completions as sglang-kt 0.7.2 serves it (entrypoints/openai/serving_completions.py, protocol.py's
CompletionRequest): a raw prompt, no chat template, and the model's raw text back.

What 0.7.2 does and the sim does too: an empty prompt is refused first ("Prompt cannot be empty",
_validate_request); `max_tokens` defaults to 16 and must be positive (a schema error, 400); the stream sends one
chunk per increment, the last one with its finish_reason and matched_stop (every declared key present, null when
unused: `model_dump_json()`), then, with `stream_options.include_usage`, a usage chunk with `choices: []` and the
null keys left out (`model_dump_json(exclude_none=True)`), then `data: [DONE]`; an engine refusal inside a stream
is a `data: {"error": ...}` event before `[DONE]`. Token-id prompts count their ids as the prompt.
Not simulated: a batch of prompts (more than one) and n > 1 are refused with a 400 saying so; `logprobs` is
accepted and answered null.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

from fastapi import Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from pydantic import BaseModel, ConfigDict, field_validator

from launch.sim import chunks
from launch.sim.chat_route import (
    SCHEDULER_RESERVED_TOKENS,
    ClientGone,
    collect_steps,
    error_response,
    refusal_response,
)
from launch.sim.chunks import Usage
from launch.sim.engine import Engine
from launch.sim.generation import plan_output
from launch.sim.request import ChatRequest, StreamOptions, to_conversation
from launch.sim.request_checks import engine_problem
from launch.sim.routing import topic_key
from launch.sim.scheduler import Finish, Job
from launch.sim.tokens import tokenize

# The sampling fields a completion shares with a chat request (serving_completions._build_sampling_params)
SHARED_FIELDS = ("temperature", "top_p", "top_k", "min_p", "repetition_penalty", "frequency_penalty",
                 "presence_penalty", "stop", "stop_regex", "no_stop_trim", "ignore_eos", "min_tokens",
                 "skip_special_tokens", "regex", "ebnf", "response_format", "lora_path", "custom_logit_processor")


class CompletionRequest(BaseModel):
    """protocol.py's CompletionRequest, the fields the sim reads (unknown fields are ignored, as there)."""

    model_config = ConfigDict(extra="ignore")
    model: str = "default"
    prompt: list[int] | list[list[int]] | str | list[str]
    echo: bool = False
    frequency_penalty: float = 0.0
    logprobs: int | None = None
    max_tokens: int = 16
    n: int = 1
    presence_penalty: float = 0.0
    stop: str | list[str] | None = None
    stream: bool = False
    stream_options: StreamOptions | None = None
    suffix: str | None = None
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = -1
    min_p: float = 0.0
    min_tokens: int = 0
    regex: str | None = None
    ebnf: str | None = None
    repetition_penalty: float = 1.0
    stop_regex: str | list[str] | None = None
    no_stop_trim: bool = False
    ignore_eos: bool = False
    skip_special_tokens: bool = True
    lora_path: list[str | None] | str | None = None
    response_format: dict[str, Any] | None = None
    custom_logit_processor: str | None = None
    rid: str | None = None

    @field_validator("max_tokens")
    @classmethod
    def validate_max_tokens_positive(cls, v: int) -> int:
        if v is not None and v <= 0:
            raise ValueError("max_tokens must be positive")
        return v


def prompt_problem(request: CompletionRequest) -> str | None:
    """serving_completions._validate_request, then what the sim does not simulate."""
    prompt = request.prompt
    if not prompt or (isinstance(prompt, list) and all(not p for p in prompt)):
        return "Prompt cannot be empty"
    if isinstance(prompt, list) and prompt and isinstance(prompt[0], (str, list)) and len(prompt) > 1:
        return "the simulated engine serves one prompt per completion request (a batch is not simulated)"
    if request.n != 1:
        return "the simulated engine serves n = 1 on /v1/completions (n > 1 is not simulated)"
    return None


def _prompt(request: CompletionRequest) -> tuple[str, tuple[str, ...]]:
    """(the prompt's text, its tokens); a token-id prompt has no text here, each id one token."""
    prompt = request.prompt[0] if isinstance(request.prompt, list) and isinstance(
        request.prompt[0], (str, list)) else request.prompt
    if isinstance(prompt, str):
        return prompt, tuple(tokenize(prompt))
    return "", tuple(str(token_id) for token_id in prompt)


def as_chat_request(request: CompletionRequest, text: str) -> ChatRequest:
    """The same sampling over a one-turn conversation: what the scripted model answers and how it stops."""
    shared = {name: value for name in SHARED_FIELDS if (value := getattr(request, name)) is not None}
    return ChatRequest.model_validate({**shared, "messages": [{"role": "user", "content": text}],
                                       "model": request.model, "max_tokens": request.max_tokens})


def stream_chunk(rid: str, created: int, model: str, text: str | None, finish: Finish | None,
                 usage: Usage | None = None) -> str:
    """CompletionStreamResponse: a choice's increment (`text` set), or the usage chunk (`usage` set)."""
    if usage is not None:  # model_dump_json(exclude_none=True)
        body: dict[str, Any] = {"id": rid, "object": "text_completion", "created": created, "model": model,
                                "choices": [], "usage": {k: v for k, v in usage.to_json().items() if v is not None}}
    else:
        body = {"id": rid, "object": "text_completion", "created": created, "model": model, "choices": [{
            "index": 0, "text": text, "logprobs": None, "finish_reason": finish.kind if finish else None,
            "matched_stop": finish.matched if finish else None}], "usage": None}
    return f"data: {json.dumps(body, ensure_ascii=False, separators=(',', ':'))}\n\n"


async def completions(engine: Engine, request: CompletionRequest, raw: Request) -> Response:
    problem = prompt_problem(request)
    if problem:
        return error_response(problem)
    text, prompt = _prompt(request)
    chat = as_chat_request(request, text)
    refused = engine_problem(chat, len(prompt), engine.plan)
    if refused is not None:
        return refusal_response(refused, bool(request.stream))
    room = engine.plan.max_req_input_len + SCHEDULER_RESERVED_TOKENS - len(prompt) - 1
    output = plan_output(chat, to_conversation(chat), room)
    rid = request.rid or uuid.uuid4().hex
    steps = engine.scheduler.generate(Job(rid, topic_key(text), prompt, output.pieces, chat.max_new_tokens,
                                          output.end))
    echo = text if request.echo else ""
    if request.stream:
        return StreamingResponse(_events(rid, request, steps, echo, len(prompt)), media_type="text/event-stream")
    try:
        generated, finish, count = await collect_steps(steps, raw)
    except ClientGone:
        return Response(status_code=499)
    if finish.kind == "abort" and finish.message:
        return error_response(finish.message)
    choice = {"index": 0, "text": echo + generated, "logprobs": None, "finish_reason": finish.kind,
              "matched_stop": finish.matched}
    return JSONResponse({"id": rid, "object": "text_completion", "created": int(time.time()),
                         "model": request.model, "choices": [choice], "usage": Usage(len(prompt), count).to_json(),
                         "metadata": {"weight_version": "default"}})


async def _events(rid: str, request: CompletionRequest, steps: AsyncIterator[Any], echo: str,
                  prompt_tokens: int) -> AsyncIterator[str]:
    """serving_completions._generate_completion_stream over the scheduler's steps."""
    created, count, first = int(time.time()), 0, True
    try:
        async for step in steps:
            count = step.completion_tokens
            yield stream_chunk(rid, created, request.model, (echo if first else "") + step.text, step.finish)
            first = False
    finally:
        await steps.aclose()  # type: ignore[attr-defined]  # the scheduler's async generator: a hang-up aborts
    options = request.stream_options
    if options is not None and options.include_usage:
        yield stream_chunk(rid, created, request.model, None, None, Usage(prompt_tokens, count))
    yield chunks.EVENT_DONE
