"""The simulated engine's HTTP surface (FastAPI), as sglang-kt 0.7.2's http_server.py serves it.

Auth (utils/auth.py): with --api-key every route needs `Authorization: Bearer KEY` except /health* and
/metrics*, else `401 {"error": "Unauthorized"}`. Schema errors are 400 with sglang's ErrorResponse body (type
"Bad Request"), not FastAPI's 422. The expert recorder routes answer plain text; without a recorder mode they take the
whole server down, as the real scheduler's exception does.
"""

from __future__ import annotations

import asyncio
import json
import secrets
from http import HTTPStatus
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from pydantic import BaseModel, ValidationError

from launch.sim import anthropic_route, failures, info, responses_route
from launch.sim.anthropic_protocol import AnthropicCountTokensRequest, AnthropicMessagesRequest
from launch.sim.args import SimArgs
from launch.sim.chat_route import chat_completions, error_response
from launch.sim.completions_route import CompletionRequest, completions
from launch.sim.engine import Engine
from launch.sim.recorder import NOT_CONFIGURED_MESSAGE
from launch.sim.request import ChatRequest
from launch.sim.responses_route import ResponsesRequest

OPEN_PREFIXES = ("/health", "/metrics")
# sglang-router polls /get_load (power_of_two) and may POST /flush_cache; texts from http_server.py.
GET_LOAD_DEPRECATED = ("Endpoint '/get_load' is deprecated and will be removed in a future version. "
                       "Please use '/v1/loads' instead.")
FLUSH_CACHE_TEXT = ("Cache flushed.\nPlease check backend logs for more details. "
                    "(When there are running or waiting requests, the operation will not be performed.)\n")
RECORDER_ACTIONS = {
    "start_expert_distribution_record": ("start", "Start recording the expert distribution.\n"),
    "stop_expert_distribution_record": ("stop", "Stop recording the expert distribution.\n"),
    "dump_expert_distribution_record": ("dump", "Dump expert distribution record.\n"),
}


class ApiKeyMiddleware:
    """ASGI middleware (not BaseHTTPMiddleware) so that client disconnects still reach the stream."""

    def __init__(self, app: Any, api_key: str) -> None:
        self.app = app
        self.api_key = api_key

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and not self._allowed(scope):
            await JSONResponse({"error": "Unauthorized"}, status_code=401)(scope, receive, send)
            return
        await self.app(scope, receive, send)

    def _allowed(self, scope: dict[str, Any]) -> bool:
        if scope["method"] == "OPTIONS" or scope["path"].startswith(OPEN_PREFIXES):
            return True
        header = dict(scope["headers"]).get(b"authorization", b"").decode("latin-1")
        kind, _, token = header.partition(" ")
        return kind.lower() == "bearer" and secrets.compare_digest(token, self.api_key)


def _validation_message(exc: ValidationError) -> str:
    text, errors = str(exc), str(exc.errors())
    return f"{text} {errors}" if errors and errors != text else text


def _recorder_route(engine: Engine, method: str, text: str) -> Any:
    async def route() -> Response:
        if engine.recorder is None:
            trace = failures.traceback_text((failures.SCHEDULER_FRAME,), f"Exception: {NOT_CONFIGURED_MESSAGE}")
            failures.running_scheduler_crash(engine.log, trace)
        await asyncio.to_thread(getattr(engine.recorder, method))  # a dump writes up to tens of MB
        return PlainTextResponse(text)

    return route


def create_app(engine: Engine, args: SimArgs) -> FastAPI:
    app = FastAPI(openapi_url=None)
    if engine.plan.settings.api_key:
        app.add_middleware(ApiKeyMiddleware, api_key=engine.plan.settings.api_key)

    @app.get("/health")
    @app.get("/health_generate")
    async def health() -> Response:
        return Response(status_code=200 if engine.ready else 503)

    @app.get("/model_info")
    @app.get("/get_model_info")
    async def model_info() -> dict[str, Any]:
        return info.model_info(engine)

    @app.get("/server_info")
    @app.get("/get_server_info")
    async def server_info() -> dict[str, Any]:
        return info.server_info(engine, args)

    @app.get("/v1/models")
    async def models() -> dict[str, Any]:
        return info.models(engine)

    @app.get("/v1/models/{model:path}")
    async def model(model: str) -> Any:
        if model != engine.model_name:
            return JSONResponse({"error": {"message": f"The model '{model}' does not exist",
                                           "type": "invalid_request_error", "param": "model",
                                           "code": "model_not_found"}}, status_code=404)
        return info.model_card(engine, model)

    @app.get("/v1/loads")
    async def loads() -> dict[str, Any]:
        return info.loads(engine)

    @app.get("/get_load")
    async def get_load() -> list[dict[str, Any]]:
        engine.log.warning(GET_LOAD_DEPRECATED)
        return info.get_load(engine)

    @app.api_route("/flush_cache", methods=["GET", "POST"])
    async def flush_cache() -> Response:
        snap = engine.metrics.snapshot()
        idle = snap.running + snap.waiting == 0  # the scheduler refuses to flush while requests run or wait
        return Response(FLUSH_CACHE_TEXT, status_code=200 if idle else HTTPStatus.BAD_REQUEST)

    @app.post("/abort_request")
    async def abort_request(request: Request) -> Response:
        # AbortReq's body: {"rid": ..., "abort_all": false}; the answer is an empty 200 whether or not it knew the rid
        try:
            body = json.loads(await request.body())
        except ValueError:
            body = None
        if not isinstance(body, dict) or not isinstance(body.get("rid", ""), str):
            return error_response("the body must be an AbortReq object: {\"rid\": \"...\"}")
        engine.scheduler.abort(body.get("rid", ""))
        return Response(status_code=200)

    if engine.metrics.registry is not None:
        @app.get("/metrics")
        async def metrics() -> Response:
            return Response(engine.metrics.exposition(), media_type="text/plain; version=0.0.4; charset=utf-8")

    for action, (method, text) in RECORDER_ACTIONS.items():
        app.add_api_route(f"/{action}", _recorder_route(engine, method, text), methods=["GET", "POST"])

    @app.post("/v1/chat/completions")
    async def chat(raw: Request) -> Response:
        request = await _validated(raw, ChatRequest)
        return request if isinstance(request, Response) else await chat_completions(engine, request, raw)

    @app.post("/v1/completions")
    async def text_completions(raw: Request) -> Response:
        request = await _validated(raw, CompletionRequest)
        return request if isinstance(request, Response) else await completions(engine, request, raw)

    @app.post("/v1/responses")
    async def responses(raw: Request) -> Response:
        try:
            body = await _json_body(raw)
        except _NotJson as exc:  # the RequestValidationError handler's nested envelope for /v1/responses
            return responses_route.error_response(str(exc), HTTPStatus.BAD_REQUEST.phrase)
        if not isinstance(body, dict):
            return responses_route.error_response(f"Input should be a valid dictionary: {str(body)[:200]}",
                                                  HTTPStatus.BAD_REQUEST.phrase)
        try:
            request = ResponsesRequest.model_validate(body)
        except ValidationError:  # `ResponsesRequest(**request)` in the route itself: no handler, a plain 500
            return PlainTextResponse("Internal Server Error", status_code=500)
        return await responses_route.responses(engine, request, raw)

    @app.post("/v1/messages")
    async def anthropic_messages(raw: Request) -> Response:
        request = await _validated(raw, AnthropicMessagesRequest)
        return request if isinstance(request, Response) else await anthropic_route.messages(engine, request, raw)

    @app.post("/v1/messages/count_tokens")
    async def anthropic_count_tokens(raw: Request) -> Response:
        request = await _validated(raw, AnthropicCountTokensRequest)
        return request if isinstance(request, Response) else await anthropic_route.count_tokens(engine, request)

    return app


class _NotJson(Exception):
    """Why validate_json_request or the JSON decoding refuse the body."""


async def _json_body(raw: Request) -> Any:
    if raw.headers.get("content-type", "").lower().split(";")[0] != "application/json":
        raise _NotJson("Unsupported Media Type: Only 'application/json' is allowed")
    try:
        return json.loads(await raw.body())
    except ValueError as exc:
        raise _NotJson(f"JSON decode error: {exc}") from None


async def _validated(raw: Request, model: type[BaseModel]) -> Any:
    """The body as `model`, or sglang's 400 (validate_json_request, then the RequestValidationError handler)."""
    try:
        return model.model_validate(await _json_body(raw))
    except _NotJson as exc:
        return error_response(str(exc), HTTPStatus.BAD_REQUEST.phrase)
    except ValidationError as exc:
        return error_response(_validation_message(exc), HTTPStatus.BAD_REQUEST.phrase)
