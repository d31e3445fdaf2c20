"""Small pieces every guard needs: a plain-text refusal, and a request body read once and replayed."""

from __future__ import annotations

from collections.abc import Iterable

from starlette.datastructures import Headers
from starlette.responses import PlainTextResponse
from starlette.types import Message, Receive, Scope, Send


async def refuse(scope: Scope, receive: Receive, send: Send, status: int, message: str,
                 headers: Iterable[tuple[str, str]] = ()) -> None:
    """A plain one-line answer (a websocket is closed instead: it has no status line)."""
    if scope["type"] == "websocket":
        await send({"type": "websocket.close", "code": 1008, "reason": message[:120]})
        return
    await PlainTextResponse(message + "\n", status_code=status, headers=dict(headers))(scope, receive, send)


class BodyTooLarge(Exception):
    """The request body is larger than the guard is willing to hold in memory."""


async def read_body(receive: Receive, limit: int) -> bytes:
    """The whole body, at most `limit` bytes (a guard reads it before the app does)."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise BodyTooLarge(f"request body over {limit} bytes")
        chunks.append(chunk)
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


def replaying(body: bytes, receive: Receive) -> Receive:
    """A receive that hands the app the body already read, then the connection's own messages."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


def header(scope: Scope, name: str) -> str | None:
    return Headers(scope=scope).get(name)


def client_address(scope: Scope) -> str:
    client = scope.get("client")
    return str(client[0]) if client else "unknown"
