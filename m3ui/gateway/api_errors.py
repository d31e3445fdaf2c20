"""Refusals in the shape the client's SDK expects: Anthropic's error object on /v1/messages, OpenAI's elsewhere,
so an agent shows the message instead of failing to parse it."""

from __future__ import annotations

import json

from starlette.types import Send

# HTTP status -> (OpenAI error type, Anthropic error type)
_TYPES = {
    400: ("invalid_request_error", "invalid_request_error"),
    401: ("authentication_error", "authentication_error"),
    403: ("permission_error", "permission_error"),
    404: ("not_found_error", "not_found_error"),
    405: ("invalid_request_error", "invalid_request_error"),
    413: ("invalid_request_error", "request_too_large"),
    429: ("rate_limit_error", "rate_limit_error"),
    503: ("service_unavailable", "overloaded_error"),
}


def is_anthropic(path: str) -> bool:
    return path == "/v1/messages" or path.startswith("/v1/messages/")


def error_body(path: str, status: int, message: str) -> bytes:
    openai_type, anthropic_type = _TYPES.get(status, ("api_error", "api_error"))
    if is_anthropic(path):
        value: dict[str, object] = {"type": "error", "error": {"type": anthropic_type, "message": message}}
    else:
        value = {"error": {"message": message, "type": openai_type, "param": None, "code": status}}
    return json.dumps(value).encode()


async def send_error(send: Send, path: str, status: int, message: str,
                     headers: tuple[tuple[bytes, bytes], ...] = ()) -> None:
    body = error_body(path, status, message)
    await send({"type": "http.response.start", "status": status, "headers": [
        (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), *headers]})
    await send({"type": "http.response.body", "body": body})
