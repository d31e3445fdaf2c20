"""The gateway: /v1/... on the app's own port, forwarded to the engine (or the fleet's router) with the engine's own
key.

Per request, in this order, nothing reaching the engine until all pass: the gateway is on (else 404 saying how to
turn it on), the method, the key (401), the key's limits (429), the body (413 over the cap, 400 when malformed),
the person's quota (429: the request reserves its tokens, m3ui/accounts/usage.py), the engine is ready (503).
The response streams through as the engine sends it, bytes unchanged (usage_stream.py), and a client that goes
away closes the engine's request, which aborts it. Refusals come in the API's own error shape (api_errors.py).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import replace

import aiohttp
from starlette.types import Message, Receive, Scope, Send

from m3ui.accounts.usage import AnswerUsage, QuotaRefused, Reservation, UsageLedger, unmetered
from m3ui.client.settings import EndpointConfig
from m3ui.gateway.api_errors import send_error
from m3ui.gateway.callers import Caller, Callers, presented_key
from m3ui.gateway.limits import KeyLimits
from m3ui.gateway.request_body import ROUTES, BadBody, GatewayRequest, parse_request
from m3ui.gateway.usage_stream import UsageTap, body_usage
from m3ui.web.asgi import BodyTooLarge, read_body

log = logging.getLogger(__name__)

MAX_BODY = 32 * 1024 * 1024  # an agent's long context fits; more is refused before it is held
CONNECT_TIMEOUT_S = 5.0
# An engine that sends nothing this long is taken for stalled: a long prefill (a big context) or a whole
# (non-streamed) answer may take minutes before the first byte
READ_TIMEOUT_S = 600.0
# How often a request checks for that. Not aiohttp's sock_read timeout: it re-arms a timer on every read, and a
# forwarded stream is one read per token (measured: 55.7 -> 47.2 us of CPU per read without it, on 2 busy cores)
STALL_CHECK_S = 15.0
OFF_MESSAGE = ("the API gateway is off: it needs accounts (python -m m3ui.users add NAME) and a key "
               "(python -m m3ui.users key add NAME), or --gateway-key-file FILE")
# Response headers passed on from the engine (the rest are the connection's own, or the engine's business)
PASSED_HEADERS = frozenset({b"content-type", b"cache-control", b"x-request-id"})
PATHS = (*ROUTES, "/v1/models")
ROUTER_LACKS = frozenset({"/v1/messages", "/v1/messages/count_tokens"})  # not in sglang-router 0.3.2's routes


class Gateway:
    def __init__(self, endpoint: Callable[[], EndpointConfig | None], engine_label: Callable[[], str],
                 callers: Callers, ledger: UsageLedger | None, limits: KeyLimits | None = None,
                 fleet_worker: Callable[[], str | None] = lambda: None) -> None:
        """`fleet_worker`: in front of a fleet, a healthy worker's URL ("" when none is), else None."""
        self.endpoint, self.engine_label, self.fleet_worker = endpoint, engine_label, fleet_worker
        self.callers, self.ledger = callers, ledger
        self.limits = limits or KeyLimits()
        self._session: aiohttp.ClientSession | None = None

    @property
    def session(self) -> aiohttp.ClientSession:
        """aiohttp, not httpx: measured, its response reads cost a fraction of httpx's per forwarded chunk."""
        if self._session is None or self._session.closed:  # made on the event loop that uses it
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=0),
                timeout=aiohttp.ClientTimeout(total=None, connect=CONNECT_TIMEOUT_S, sock_read=None),
                auto_decompress=False)
        return self._session

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope["path"]
        if not self.callers.gateway_on:
            await send_error(send, path, 404, OFF_MESSAGE)
            return
        known = path in PATHS or path.startswith("/v1/models/")
        if not known:
            await send_error(send, path, 404, f"no such API route: {path[:100]} (the gateway serves "
                             f"{', '.join(PATHS)})")
            return
        get = path.startswith("/v1/models")
        if scope["method"] != ("GET" if get else "POST"):
            await send_error(send, path, 405, f"{path} takes {'GET' if get else 'POST'}")
            return
        headers = dict(scope["headers"])
        caller = self.callers.identify(presented_key(headers))
        if caller is None:
            await send_error(send, path, 401, "invalid API key: send a key of this m3ui as 'Authorization: Bearer "
                             "KEY' or 'x-api-key: KEY' (an unknown, revoked or expired key is refused)")
            return
        refused = self.limits.enter(caller.key_id)
        if refused is not None:
            await send_error(send, path, 429, refused.message, ((b"retry-after", str(refused.retry_after_s).encode()),))
            return
        try:
            await self._serve(scope, receive, send, path, caller, headers, get)
        finally:
            self.limits.leave(caller.key_id)

    async def _serve(self, scope: Scope, receive: Receive, send: Send, path: str, caller: Caller,
                     headers: dict[bytes, bytes], get: bool) -> None:
        request: GatewayRequest | None = None
        if not get:
            try:
                request = parse_request(path, await read_body(receive, MAX_BODY))
            except BodyTooLarge:
                await send_error(send, path, 413, f"the request body is over {MAX_BODY // (1024 * 1024)} MiB")
                return
            except BadBody as exc:
                await send_error(send, path, 400, str(exc))
                return
        endpoint = self.endpoint()
        if endpoint is not None and path in ROUTER_LACKS and (worker := self.fleet_worker()) is not None:
            # sglang-router 0.3.2 serves no Anthropic route: such a request goes to one worker, past the router
            endpoint = replace(endpoint, base_url=worker + "/v1") if worker else None
        if endpoint is None:
            await send_error(send, path, 503, f"the engine is not ready: {self.engine_label()}",
                             ((b"retry-after", b"10"),))
            return
        reservation = unmetered(None)
        if request is not None and request.spec.metered and self.ledger is not None:
            try:
                reservation = self.ledger.reserve(caller.user, request.prompt_bound, request.requested_cap)
            except QuotaRefused as exc:
                await send_error(send, path, 429, exc.message, ((b"retry-after", str(exc.retry_after_s).encode()),))
                return
            request.cap(reservation.max_tokens)
        await Forward(self.session, endpoint, path, request, reservation, headers).run(scope, receive, send)


class Forward:
    """One request sent on to the engine and its response streamed back."""

    def __init__(self, session: aiohttp.ClientSession, endpoint: EndpointConfig, path: str,
                 request: GatewayRequest | None, reservation: Reservation, headers: dict[bytes, bytes]) -> None:
        self.session, self.endpoint, self.path = session, endpoint, path
        self.request, self.reservation = request, reservation
        self.tap = UsageTap(request is not None and request.strip_usage)
        self.streamed = request is not None and request.stream
        self.headers = {"authorization": f"Bearer {endpoint.api_key}", "accept-encoding": "identity"}
        for name in (b"anthropic-version", b"anthropic-beta"):
            if name in headers:
                self.headers[name.decode()] = headers[name].decode("latin-1")
        self.started = self.last_read = time.monotonic()
        self.body_bytes = b""
        self.stalled = self.response_started = False

    @property
    def url(self) -> str:
        return self.endpoint.base_url.removesuffix("/v1") + self.path

    async def run(self, scope: Scope, receive: Receive, send: Send) -> None:
        relay = asyncio.current_task()
        watcher = asyncio.ensure_future(self._watch(receive, relay))
        try:
            await self._relay(send)
        except asyncio.CancelledError:
            if not watcher.done() or relay is None:
                raise  # cancelled from elsewhere (the app shutting down)
            relay.uncancel()
            if self.stalled:
                await self._end_stalled(send)
        finally:
            watcher.cancel()
            self._settle()

    async def _watch(self, receive: Receive, relay: asyncio.Task[None] | None) -> None:
        """Cancels the relay when the client goes away (closing the engine's request aborts it), or when the engine
        has sent nothing for READ_TIMEOUT_S."""
        while True:
            try:
                message = await asyncio.wait_for(receive(), STALL_CHECK_S)
            except TimeoutError:
                if time.monotonic() - self.last_read <= READ_TIMEOUT_S:
                    continue
                self.stalled = True
            else:
                if message["type"] != "http.disconnect":
                    continue
            if relay is not None:
                relay.cancel()
            return

    async def _end_stalled(self, send: Send) -> None:
        log.warning("gateway: the engine sent nothing for %d s; the request is ended", READ_TIMEOUT_S)
        if not self.response_started:
            await send_error(send, self.path, 503, f"the engine sent nothing for {READ_TIMEOUT_S:.0f} s: it may be "
                             "stuck; try again shortly", ((b"retry-after", b"10"),))
        else:  # the stream ends cut, as when the engine breaks off
            await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def _relay(self, send: Send) -> None:
        method = "GET" if self.request is None else "POST"
        content = None if self.request is None else self.request.encoded()
        headers = dict(self.headers)
        if content is not None:
            headers["content-type"] = "application/json"
        try:
            response = await self.session.request(method, self.url, data=content, headers=headers)
        except (aiohttp.ClientError, TimeoutError) as exc:
            await send_error(send, self.path, 503, f"the engine cannot be reached ({type(exc).__name__}): it may be "
                             "restarting; try again shortly", ((b"retry-after", b"10"),))
            return
        try:
            self.response_started = True
            await send(self._start(response))
            keep_body = not self.streamed or response.status >= 400
            async for data in response.content.iter_any():
                self.last_read = time.monotonic()
                out = self.tap.feed(data)
                if keep_body and len(self.body_bytes) < MAX_BODY:
                    self.body_bytes += data
                if out:
                    await send({"type": "http.response.body", "body": out, "more_body": True})
            await send({"type": "http.response.body", "body": self.tap.flush(), "more_body": False})
        except (aiohttp.ClientError, TimeoutError) as exc:  # the engine went away mid-answer: the stream ends cut
            log.warning("gateway: the engine's response broke off: %s", type(exc).__name__)
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            response.close()  # a response not read to its end closes its connection: the engine aborts it

    def _start(self, response: aiohttp.ClientResponse) -> Message:
        headers = [(k, v) for k, v in response.raw_headers if k.lower() in PASSED_HEADERS]
        if self.streamed:
            headers.append((b"x-accel-buffering", b"no"))
        return {"type": "http.response.start", "status": response.status, "headers": headers}

    def _settle(self) -> None:
        usage = self.tap.usage or (body_usage(self.body_bytes) if self.body_bytes else None)
        if usage is None:  # cut short or failed: its prompt bound, and a token per event that came
            usage = (self.reservation.prompt_tokens, self.tap.events)
        try:
            self.reservation.settle(AnswerUsage(usage[0], usage[1], time.monotonic() - self.started))
        except Exception:  # the usage table must never break the response
            log.exception("gateway: recording usage failed")
