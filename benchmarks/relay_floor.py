"""The least a Python relay can cost per forwarded token on this host: bench_gateway.py's yardstick.

A bare byte pipe: it reads one HTTP request from the client, sends it to the engine with `connection: close`, and
writes whatever the engine sends straight to the client from the event loop's read callback, unparsed (chunked
framing and all), until the engine closes. No HTTP server, no HTTP client, no task per read: one read from the
engine and one write to the client per token, on the event loop the app runs on (uvloop). What
it costs is the socket calls and the loop's wake-ups, which any relay pays; the gateway's figure above it is
what the gateway itself adds. Run: `python benchmarks/relay_floor.py ENGINE_URL PORT` (it serves until killed).
"""

from __future__ import annotations

import asyncio
import sys
from typing import cast
from urllib.parse import urlsplit

import uvloop

MAX_HEAD = 64 * 1024


class EngineSide(asyncio.Protocol):
    def __init__(self, client: asyncio.Transport) -> None:
        self.client = client

    def data_received(self, data: bytes) -> None:
        self.client.write(data)

    def connection_lost(self, exc: Exception | None) -> None:
        self.client.close()


class ClientSide(asyncio.Protocol):
    def __init__(self, engine: tuple[str, int]) -> None:
        self.engine = engine
        self.received = b""
        self.transport: asyncio.Transport | None = None
        self.forwarded = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's transports do not subclass asyncio's

    def data_received(self, data: bytes) -> None:
        if self.forwarded or self.transport is None:
            return
        self.received += data
        head, found, body = self.received.partition(b"\r\n\r\n")
        if not found:
            if len(self.received) > MAX_HEAD:
                self.transport.close()
            return
        lines = head.split(b"\r\n")
        length = next((int(value) for name, _, value in (line.partition(b":") for line in lines[1:])
                       if name.strip().lower() == b"content-length"), 0)
        if len(body) < length:
            return
        self.forwarded = True
        request = (lines[0] + b"\r\nhost: engine\r\ncontent-type: application/json\r\ncontent-length: "
                   + str(length).encode() + b"\r\nconnection: close\r\n\r\n" + body[:length])
        asyncio.ensure_future(self._forward(request, self.transport))

    async def _forward(self, request: bytes, client: asyncio.Transport) -> None:
        engine, _ = await asyncio.get_running_loop().create_connection(lambda: EngineSide(client), *self.engine)
        engine.write(request)


async def serve(engine_url: str, port: int) -> None:
    parts = urlsplit(engine_url)
    engine = (parts.hostname or "127.0.0.1", parts.port or 80)
    server = await asyncio.get_running_loop().create_server(lambda: ClientSide(engine), "127.0.0.1", port)
    await server.serve_forever()


def main(argv: list[str]) -> None:
    uvloop.run(serve(argv[0], int(argv[1])))  # the loop uvicorn's `auto` picks for the app (requirements.txt)


if __name__ == "__main__":
    main(sys.argv[1:])
