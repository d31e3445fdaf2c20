"""A page's live channel read the way assets/js/live.js reads it: for tests and benchmarks that stand in for a
browser page (a Gradio API client plus its channel)."""

from __future__ import annotations

import copy
import json
import re
import secrets
import socket
import threading
import time
from typing import Any

import httpx


def apply_frame(start: int, live: list[dict[str, Any]], frame: dict[str, Any]) -> tuple[int, list[dict[str, Any]]]:
    """(start, live messages) after one channel event, as live.js computes them."""
    live = [] if frame["start"] != start else [copy.deepcopy(m) for m in live]
    for op in frame["ops"]:
        index = op["i"]
        while len(live) <= index:
            live.append({})
        if "set" in op:
            live[index] = op["set"]
        else:
            live[index]["content"][0]["text"] += op["append"]
    return frame["start"], live[: frame["length"]]


def page_ticket() -> str:
    return secrets.token_urlsafe(18)


def channel_client(connections: int = 128) -> httpx.Client:
    """An HTTP client for many channels at once (no read timeout: a channel is quiet while nothing streams)."""
    return httpx.Client(timeout=httpx.Timeout(10, read=None), trust_env=False,
                        limits=httpx.Limits(max_connections=connections, max_keepalive_connections=connections))


class LiveReader:
    """Opens the channel of the page with `ticket` (as the page does when it asks for an answer; the answer is
    asked for with the same ticket) and follows it in a thread until the answer ends it, or close()."""

    def __init__(self, app_url: str, ticket: str, timeout: float = 10, wait: bool = True,
                 http: httpx.Client | None = None, watch: re.Pattern[str] | None = None) -> None:
        self.ticket = ticket
        self.start, self.live, self.events, self.ended = 0, [], 0, False
        self._watch = watch
        self.watched_at: float | None = None  # time.monotonic() of the first event whose data matched `watch`
        self._opened = threading.Event()
        self._closed = False
        self._socket: socket.socket | None = None
        self._own_client = http is None
        self._client = http or channel_client()
        self._thread = threading.Thread(target=self._read, args=(f"{app_url}/m3ui-live/{self.ticket}",), daemon=True)
        self._thread.start()
        if wait and not self._opened.wait(timeout):
            raise TimeoutError("the live channel did not open")

    def _read(self, url: str) -> None:
        try:
            with self._client.stream("GET", url) as response:
                response.raise_for_status()
                self._socket = response.extensions["network_stream"].get_extra_info("socket")
                self._opened.set()
                for line in response.iter_lines():
                    if line == "event: end":
                        self.ended = True
                    elif line.startswith("data: ") and not self.ended:
                        if self._watch and self.watched_at is None and self._watch.search(line):
                            self.watched_at = time.monotonic()
                        self.start, self.live = apply_frame(self.start, self.live, json.loads(line[6:]))
                        self.events += 1
        except (httpx.HTTPError, OSError):
            if not self._closed:
                raise

    def join(self, timeout: float = 10) -> None:
        """Wait for the channel's end (the answer's)."""
        self._thread.join(timeout)

    def close(self) -> None:
        """Hang up (the blocked read ends at once) and wait for the reading thread."""
        self._closed = True
        if self._socket is not None and self._thread.is_alive():
            self._socket.shutdown(socket.SHUT_RDWR)
        self._thread.join(5)
        if self._own_client:
            self._client.close()
