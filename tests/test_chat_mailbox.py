"""Mailbox: a streamed answer's events handed between threads in bulk, none lost, none reordered."""

from __future__ import annotations

import threading
import time

from m3ui.chat_session.mailbox import Mailbox


def test_a_take_hands_over_everything_put_so_far_in_order():
    box: Mailbox[int] = Mailbox()
    for i in range(5):
        box.put(i)
    assert box.take(1.0) == [0, 1, 2, 3, 4]
    assert box.take(0.0) == []


def test_a_take_waits_for_the_first_item_and_no_longer():
    box: Mailbox[str] = Mailbox()
    threading.Timer(0.1, box.put, args=("late",)).start()
    started = time.monotonic()
    assert box.take(5.0) == ["late"]
    assert time.monotonic() - started < 2.0


def test_a_take_with_nothing_coming_returns_empty_after_its_timeout():
    box: Mailbox[str] = Mailbox()
    started = time.monotonic()
    assert box.take(0.2) == []
    assert time.monotonic() - started >= 0.2


def test_items_put_from_several_threads_while_one_takes_are_all_taken_once_in_each_threads_order():
    box: Mailbox[tuple[int, int]] = Mailbox()
    producers, per_producer = 4, 20_000

    def produce(p: int) -> None:
        for i in range(per_producer):
            box.put((p, i))

    threads = [threading.Thread(target=produce, args=(p,)) for p in range(producers)]
    for thread in threads:
        thread.start()
    taken: list[tuple[int, int]] = []
    while len(taken) < producers * per_producer:
        got = box.take(5.0)
        assert got, "a take timed out while items were still coming"
        taken += got
    for thread in threads:
        thread.join()
    assert box.take(0.0) == []
    for p in range(producers):
        assert [i for q, i in taken if q == p] == list(range(per_producer))
