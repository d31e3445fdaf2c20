"""Items handed from one thread to another in bulk: the taker gets everything that came since it last looked.

A streamed answer's events go from the thread that reads the engine to the thread that shows them, a few hundred a
second per answer. queue.Queue took a lock and notified a condition for every put and again for every get; here a
put is a deque append (atomic in CPython), the taker is woken only while it waits, and a take is one drain.
"""

from __future__ import annotations

import collections
import threading
import time
from typing import Generic, TypeVar

T = TypeVar("T")


class Mailbox(Generic[T]):
    """One or more putting threads, one taking thread."""

    def __init__(self) -> None:
        self._items: collections.deque[T] = collections.deque()
        self._arrived = threading.Event()

    def put(self, item: T) -> None:
        self._items.append(item)
        if not self._arrived.is_set():  # the taker clears it before it looks: a set one is seen
            self._arrived.set()

    def take(self, timeout: float) -> list[T]:
        """Everything put so far, in order, waiting up to `timeout` seconds for the first; [] when nothing came."""
        deadline = time.monotonic() + timeout
        while True:
            self._arrived.clear()  # before looking: a put after the look sets it again
            if self._items:
                break
            left = deadline - time.monotonic()
            if left <= 0 or not self._arrived.wait(left):
                break
        items = self._items
        return [items.popleft() for _ in range(len(items))]
