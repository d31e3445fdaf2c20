"""A page's live channel: the frames of an answer, handed from the answer's thread to the event loop that
writes the channel.

The page draws a random ticket when it loads and sends it along with every answer it asks for; when it asks,
it also opens its channel with that ticket, and the answer claims the page's feed for as long as it streams.
The channel ends when the answer gives the feed back (or when no answer claims it within CLAIM_TIMEOUT_S): a
page holds no connection between answers (a browser allows only six per server, for all its tabs). Frames are
coalesced: the channel sends the newest one when it is free, never a backlog (each frame describes the whole
live answer).

A ticket belongs to the session that first opens, claims or asks with it (m3ui.live.holder), and each client
address and each session may hold only a few feeds at once: one client cannot take every feed of the app.
"""

from __future__ import annotations

import asyncio
import re
import threading
from collections import Counter, OrderedDict
from collections.abc import AsyncIterator, Callable
from typing import Generic, TypeVar

from m3ui.live.holder import LiveHolder

TICKET = re.compile(r"[A-Za-z0-9_-]{16,64}")
MAX_FEEDS = 1024  # pages with a live channel at once (more get their answers through Gradio's queue)
# Feeds one client address may hold at once (a page holds one while it answers: 64 pages answering at once, or an
# office behind one address), and one login session (a person's tabs).
MAX_PER_CLIENT = 64
MAX_PER_SESSION = 8
MAX_BOUND = 65_536  # tickets whose session is remembered after their feed is gone (the least recently used go)
HEARTBEAT_S = 15.0  # an idle channel says it is alive this often (proxies close silent connections)
CLAIM_TIMEOUT_S = 10.0  # a channel whose answer never comes (refused before it started) ends after this

Frame = TypeVar("Frame")


class _End:
    """frames() yields END once the answer that held the feed gave it back: the channel closes."""


END = _End()


class LiveFeed(Generic[Frame]):
    """One page's frames: published from any thread by the answer holding the feed, read by the page's channel
    in an event loop."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._frame: Frame | None = None  # the newest frame not yet taken
        self._claimed = False  # an answer streams into this feed
        self._over = False  # the answer that claimed it gave it back
        self._wake: Callable[[], object] | None = None  # set while the page's channel reads

    @property
    def reading(self) -> bool:
        """The page's channel is open (a frame published now reaches it)."""
        return self._wake is not None

    @property
    def idle(self) -> bool:
        """Neither read by a channel nor used by an answer: nothing needs it."""
        return self._wake is None and not self._claimed

    def publish(self, frame: Frame) -> bool:
        """Hand `frame` to the page; False when the page's channel is not open (show it another way)."""
        with self._lock:
            if self._wake is None:
                return False
            self._frame, wake = frame, self._wake
        wake()
        return True

    def claim(self) -> bool:
        """Take the feed for one answer; False when another answer holds it."""
        with self._lock:
            if self._claimed:
                return False
            self._claimed, wake = True, self._wake
        if wake is not None:
            wake()
        return True

    def unclaim(self) -> None:
        with self._lock:
            self._claimed, self._over, wake = False, True, self._wake
        if wake is not None:
            wake()

    def subscribe(self) -> asyncio.Event | None:
        """In the channel's event loop: an event set at each new frame; None when another channel reads."""
        loop = asyncio.get_running_loop()
        ready = asyncio.Event()
        with self._lock:
            if self._wake is not None:
                return None
            self._wake = lambda: loop.call_soon_threadsafe(ready.set)
            self._over = False
        return ready

    def unsubscribe(self) -> None:
        with self._lock:
            self._wake, self._frame = None, None

    async def frames(self, ready: asyncio.Event, heartbeat_s: float = HEARTBEAT_S,
                     claim_timeout_s: float = CLAIM_TIMEOUT_S) -> AsyncIterator[Frame | _End | None]:
        """Each new frame as it comes, None after `heartbeat_s` without one, and END when the answer is over
        (or none claimed the feed within `claim_timeout_s`)."""
        loop = asyncio.get_running_loop()
        unclaimed_until = loop.time() + claim_timeout_s
        while True:
            with self._lock:
                frame, self._frame = self._frame, None
                claimed, over = self._claimed, self._over
            if frame is not None:
                yield frame
            if over or (not claimed and loop.time() >= unclaimed_until):
                yield END
                return
            wait = heartbeat_s if claimed else min(heartbeat_s, unclaimed_until - loop.time())
            try:
                await asyncio.wait_for(ready.wait(), wait)
                ready.clear()
            except TimeoutError:
                if claimed:
                    yield None


class LiveRefused(Exception):
    """A channel refused, with the HTTP status and the line that says why."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class LiveFeeds(Generic[Frame]):
    """The pages' feeds by ticket. A feed lives while a channel reads it or an answer holds it; a ticket stays
    bound to its first session longer (up to MAX_BOUND tickets)."""

    def __init__(self, limit: int = MAX_FEEDS, per_client: int = MAX_PER_CLIENT,
                 per_session: int = MAX_PER_SESSION) -> None:
        self._feeds: dict[str, LiveFeed[Frame]] = {}
        self._lock = threading.Lock()
        self._limit, self._per_client, self._per_session = limit, per_client, per_session
        self._bound: OrderedDict[str, str] = OrderedDict()  # ticket -> the binding of its first holder
        self._holders: dict[str, LiveHolder] = {}  # ticket of a live feed -> who made it
        self._held: Counter[str] = Counter()  # client address / session -> feeds it holds

    def bind(self, ticket: object, holder: LiveHolder) -> None:
        """The ticket is `holder`'s from now on, unless another session has it (LiveRefused)."""
        with self._lock:
            self._bind(ticket, holder)

    def _bind(self, ticket: object, holder: LiveHolder) -> str:
        """(lock held) The checked ticket."""
        if not isinstance(ticket, str) or not TICKET.fullmatch(ticket):
            raise LiveRefused(409, "malformed live ticket")
        owner = self._bound.setdefault(ticket, holder.binding)
        if owner != holder.binding:
            raise LiveRefused(403, "this live ticket belongs to another page's session")
        self._bound.move_to_end(ticket)
        while len(self._bound) > MAX_BOUND:
            self._bound.popitem(last=False)
        return ticket

    def _feed(self, ticket: object, holder: LiveHolder) -> LiveFeed[Frame]:
        """(lock held) The feed of `ticket`, made on first use; LiveRefused for a malformed or foreign ticket, or
        too many feeds (of the app, the client or the session)."""
        ticket = self._bind(ticket, holder)
        feed = self._feeds.get(ticket)
        if feed is not None:
            return feed
        if len(self._feeds) >= self._limit:
            raise LiveRefused(409, "too many live channels on this server")
        keys = _counted(holder)
        if self._held[keys[0]] >= self._per_client or len(keys) > 1 and self._held[keys[1]] >= self._per_session:
            raise LiveRefused(429, "too many live channels from your address or session")
        self._held.update(keys)
        self._holders[ticket] = holder
        feed = self._feeds[ticket] = LiveFeed()
        return feed

    def _forget_idle(self, ticket: str) -> None:
        """(lock held)"""
        feed = self._feeds.get(ticket)
        if feed is not None and feed.idle:
            del self._feeds[ticket]
            holder = self._holders.pop(ticket)
            self._held.subtract(_counted(holder))
            self._held = +self._held  # drop the keys that hold nothing

    def subscribe(self, ticket: object, holder: LiveHolder) -> tuple[LiveFeed[Frame], asyncio.Event]:
        """For the page's channel, in its event loop: the feed and its frame event (close it with
        `unsubscribe`); LiveRefused when the ticket cannot have a channel, or another channel reads the feed."""
        with self._lock:
            feed = self._feed(ticket, holder)
            ready = feed.subscribe()
            if ready is None:
                raise LiveRefused(409, "this page's live channel is open already")
            return feed, ready

    def unsubscribe(self, ticket: str, feed: LiveFeed[Frame]) -> None:
        with self._lock:
            feed.unsubscribe()
            self._forget_idle(ticket)

    def claim(self, ticket: object, holder: LiveHolder) -> LiveFeed[Frame] | None:
        """The page's feed for one answer (give it back with `release`); None: show the answer another way."""
        with self._lock:
            try:
                feed = self._feed(ticket, holder)
            except LiveRefused:
                return None
            if feed.claim():
                return feed
            self._forget_idle(str(ticket))  # a str: _feed took it
            return None

    def release(self, ticket: str, feed: LiveFeed[Frame]) -> None:
        with self._lock:
            feed.unclaim()
            self._forget_idle(ticket)

    def __len__(self) -> int:
        return len(self._feeds)


def _counted(holder: LiveHolder) -> list[str]:
    """The keys a feed counts under: its client address, and its session when it has one."""
    return [f"client:{holder.client}"] + ([f"session:{holder.session}"] if holder.session else [])
