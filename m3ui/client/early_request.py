"""A chat request sent before its answer is asked for: the answer takes it only when it asks for exactly the same.

Why: a click on Send reaches the answer's handler through Gradio's page script and queue 60-80 ms later
(measured with the browser's and the server's timestamps); the page also tells the server at once, and the request
it will make is sent then, so the engine's prefill runs meanwhile. The answer's own request is compared with it,
whole (model, messages, sampling, tools): the same one takes the response already on its way, any other difference
cancels it and sends its own.
A request nobody takes is cancelled after `EXPIRES_S`, so the engine always stops. With a `wind_down` (an engine
that aborts by request id: m3ui.client.engine_abort) the cancel aborts it there and reads the rest of its stream, in
a thread of its own, for the tokens it used; else, or when that reports nothing, the connection is just closed.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from m3ui.client.http_library import http
from m3ui.client.stream import HttpResponse

EXPIRES_S = 10.0  # an early request not taken by then is cancelled (Gradio's own path takes well under a second)
OPEN_WAIT_S = 5.0  # a cancelled request whose response has not come yet is waited for this long to abort it
# Cancelled requests being wound down at once, each in a thread for up to ~10 s (a hung engine): past that, a
# flood of asks gets its requests closed at once (charged their bound) rather than a thread each
MAX_WINDING_DOWN = 32
_winding_down = threading.BoundedSemaphore(MAX_WINDING_DOWN)
# What a cancelled request used, as the engine reported it: (prompt, completion) tokens, or None (not known)
EngineUsage = tuple[int, int] | None


class EarlyRequest:
    """Opened at once in a thread of its own. `take()` hands the response over (once); `cancel()` closes it, also
    one still being opened."""

    def __init__(self, origin: object, kwargs: dict[str, Any], open_stream: Callable[[], HttpResponse],
                 sent_at: float, expires_s: float = EXPIRES_S,
                 wind_down: Callable[[HttpResponse], EngineUsage] | None = None) -> None:
        """`wind_down`: ends the opened response of a cancelled request on the engine and returns what it used."""
        self.origin = origin  # what sent it (a ChatClient): only a request to the same endpoint can take it
        self.kwargs = kwargs
        self.sent_at = sent_at
        self.attachment: object = None  # what the sender keeps with it (the meter: the tokens it reserved)
        self._on_cancel: list[Callable[[EngineUsage], None]] = []
        self._wind_down = wind_down
        self._discarded = False  # cancelled and nobody will read its response: close it as soon as it comes
        self._lock = threading.Lock()
        self._opened = threading.Event()
        self._response: HttpResponse | None = None
        self._error: BaseException | None = None
        self._state = "open"  # open -> taken (by an answer) -> used (its stream opened); open or taken -> cancelled
        self._expiry = threading.Timer(expires_s, self.cancel)
        self._expiry.daemon = True
        threading.Thread(target=self._open, args=(open_stream,), name="early-request", daemon=True).start()
        self._expiry.start()

    def _open(self, open_stream: Callable[[], HttpResponse]) -> None:
        try:
            response = open_stream()
        except BaseException as exc:  # handed to the answer that takes it, as its own request would have raised it
            self._error = exc
        else:
            with self._lock:
                discarded = self._discarded
                self._response = None if discarded else response
            if discarded:
                response.close()
        self._opened.set()

    def on_cancel(self, callback: Callable[[EngineUsage], None]) -> None:
        """Call `callback` once if this request is cancelled (never when its answer opened it), with what the
        engine reported it used (None when it reported nothing)."""
        self._on_cancel.append(callback)

    def matches(self, origin: object, kwargs: dict[str, Any]) -> bool:
        return origin is self.origin and kwargs == self.kwargs

    def take(self) -> Callable[[], HttpResponse] | None:
        """For the answer that asks for this very request: what opens its stream (waits for the response, or
        raises what opening it raised); None when it was cancelled or taken already. Taken but never opened (the
        answer was stopped first), it is cancelled when it expires like one never taken."""
        with self._lock:
            if self._state != "open":
                return None
            self._state = "taken"
        return self._opened_response

    def _opened_response(self) -> HttpResponse:
        with self._lock:
            used, self._state = self._state == "taken", "used"
        self._expiry.cancel()
        self._opened.wait()
        if not used:
            raise http.ReadError("the request sent early was cancelled before its answer read it")
        if self._error is not None:
            raise self._error
        return self._response

    def cancel(self) -> None:
        """Not wanted (or not read in time): the engine stops it (see the module's docstring)."""
        with self._lock:
            if self._state not in ("open", "taken"):
                return
            self._state = "cancelled"
            wind_down = self._wind_down if self._wind_down is not None and _winding_down.acquire(False) else None
            response = None
            if wind_down is None:  # closed here; else by the thread that winds it down
                self._discarded, response, self._response = True, self._response, None
        self._expiry.cancel()
        if wind_down is None:
            if response is not None:
                response.close()
            self._cancelled(None)
        else:
            threading.Thread(target=self._end_on_engine, args=(wind_down,), name="early-request-abort",
                             daemon=True).start()

    def _end_on_engine(self, wind_down: Callable[[HttpResponse], EngineUsage]) -> None:
        usage: EngineUsage = None
        response = None
        try:
            self._opened.wait(OPEN_WAIT_S)
            with self._lock:
                response, self._response, self._discarded = self._response, None, True
            if response is not None:
                usage = wind_down(response)
        finally:
            _winding_down.release()
            if response is not None:
                response.close()
            self._cancelled(usage)

    def _cancelled(self, usage: EngineUsage) -> None:
        for callback in self._on_cancel:
            callback(usage)

    @property
    def state(self) -> str:
        return self._state
