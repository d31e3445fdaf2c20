"""The live channel's core (m3ui.live): tickets, one channel and one answer per feed, coalesced frames, and
diffs that rebuild exactly the frame the answer published; a ticket bound to its first session, and feeds
limited per client address and per session (issue 27 #5, #6)."""

from __future__ import annotations

import asyncio
import threading

import pytest
from hypothesis import given
from hypothesis import strategies as st

from m3ui.live.feed import END, LiveFeeds, LiveRefused
from m3ui.live.frame_diff import LiveFrame, frame_diff
from m3ui.live.holder import LiveHolder
from tests.live_reader import apply_frame

TICKET = "t" * 24
PAGE = LiveHolder("10.0.0.1", None)  # an app without logins: the client address is the session


def test_a_ticket_must_look_like_one_drawn_by_a_page():
    feeds: LiveFeeds[str] = LiveFeeds()
    for bad in ("", "short", "x" * 65, "../../etc/passwd-xxxxxxxx", "a b c d e f g h i j", None, 42):
        assert feeds.claim(bad, PAGE) is None
    assert len(feeds) == 0


def test_one_answer_at_a_time_holds_a_feed_and_an_idle_feed_is_forgotten():
    feeds: LiveFeeds[str] = LiveFeeds()
    feed = feeds.claim(TICKET, PAGE)
    assert feed is not None and feeds.claim(TICKET, PAGE) is None
    assert not feed.publish("frame")  # no channel reads it: the answer shows the frame through Gradio
    feeds.release(TICKET, feed)
    assert len(feeds) == 0


def test_the_number_of_feeds_is_bounded():
    feeds: LiveFeeds[str] = LiveFeeds(limit=2)
    assert feeds.claim("a" * 16, PAGE) and feeds.claim("b" * 16, PAGE)
    assert feeds.claim("c" * 16, PAGE) is None


def read(feeds: LiveFeeds[str], publish, heartbeat_s: float = 5.0, claim_timeout_s: float = 5.0) -> list[object]:
    """What a channel reads, until its end, while `publish(feed)` runs in another thread."""

    async def channel() -> list[object]:
        feed, ready = feeds.subscribe(TICKET, PAGE)
        with pytest.raises(LiveRefused, match="open already"):  # a second channel for the same page is refused
            feeds.subscribe(TICKET, PAGE)
        worker = threading.Thread(target=publish, args=(feed,))
        worker.start()
        seen = [frame async for frame in feed.frames(ready, heartbeat_s, claim_timeout_s)]
        worker.join()
        feeds.unsubscribe(TICKET, feed)
        return seen

    return asyncio.run(asyncio.wait_for(channel(), 20))


def answer(feeds: LiveFeeds[str], frames: list[str], pause_s: float = 0.0):
    """An answer that claims the page's feed, publishes `frames` (then waits `pause_s`) and gives it back."""

    def publish(feed) -> None:
        assert feeds.claim(TICKET, PAGE) is feed
        for frame in frames:
            assert feed.publish(frame)
        threading.Event().wait(pause_s)
        feeds.release(TICKET, feed)

    return publish


def test_frames_reach_the_channel_coalesced_newest_last_then_it_ends_with_the_answer():
    feeds: LiveFeeds[str] = LiveFeeds()
    seen = read(feeds, answer(feeds, [f"frame {n}" for n in range(200)]))
    assert seen[-2:] == ["frame 199", END]
    frames = seen[:-1]
    assert frames == sorted(frames, key=lambda frame: int(frame.split()[1]))  # never an older frame after a newer
    assert len(feeds) == 0  # the channel closed and the answer ended: nothing is kept


def test_a_channel_waiting_on_a_long_answer_gets_heartbeats():
    feeds: LiveFeeds[str] = LiveFeeds()
    seen = read(feeds, answer(feeds, [], pause_s=0.35), heartbeat_s=0.1)
    assert seen[-1] is END and None in seen and set(seen[:-1]) == {None}


def test_a_channel_whose_answer_never_comes_ends():
    feeds: LiveFeeds[str] = LiveFeeds()
    assert read(feeds, lambda feed: None, claim_timeout_s=0.2) == [END]
    assert len(feeds) == 0


def test_a_closed_channel_sends_the_answer_back_to_gradio():
    feeds: LiveFeeds[str] = LiveFeeds()

    async def open_and_close() -> None:
        subscribed = feeds.subscribe(TICKET, PAGE)
        feed = feeds.claim(TICKET, PAGE)
        assert feed is subscribed[0] and feed.publish("while open")
        feeds.unsubscribe(TICKET, feed)  # the page left
        assert not feed.publish("after the page left")
        feeds.release(TICKET, feed)

    asyncio.run(open_and_close())
    assert len(feeds) == 0


def test_a_ticket_belongs_to_the_first_session_that_uses_it():
    alice, mallory = LiveHolder("10.0.0.1", "alice:1"), LiveHolder("10.0.0.1", "mallory:2")
    feeds: LiveFeeds[str] = LiveFeeds()
    feed = feeds.claim(TICKET, alice)
    assert feed is not None
    feeds.release(TICKET, feed)  # the feed is gone, the binding stays
    assert len(feeds) == 0
    assert feeds.claim(TICKET, mallory) is None
    with pytest.raises(LiveRefused, match="another page's session") as refused:
        asyncio.run(_subscribe(feeds, mallory))
    assert refused.value.status == 403
    with pytest.raises(LiveRefused):
        feeds.bind(TICKET, LiveHolder("10.0.0.2", None))
    feeds.bind(TICKET, LiveHolder("10.0.0.9", "alice:1"))  # the same session from another address
    assert feeds.claim(TICKET, alice) is not None


def test_feeds_are_limited_per_client_and_per_session():
    feeds: LiveFeeds[str] = LiveFeeds(limit=100, per_client=5, per_session=2)
    tickets = iter(f"{n:016d}" for n in range(100))
    one = LiveHolder("10.0.0.1", "alice:1")
    assert [feeds.claim(next(tickets), one) is not None for _ in range(3)] == [True, True, False]
    others = [LiveHolder("10.0.0.1", f"bob:{n}") for n in range(3)]
    assert [feeds.claim(next(tickets), h) is not None for h in others for _ in range(2)] == [True] * 3 + [False] * 3
    assert feeds.claim(next(tickets), LiveHolder("10.0.0.2", "carol:1")) is not None, "another address"
    with pytest.raises(LiveRefused, match="too many") as refused:
        asyncio.run(_subscribe(feeds, LiveHolder("10.0.0.1", "dave:1"), next(tickets)))
    assert refused.value.status == 429
    assert len(feeds) == 6


async def _subscribe(feeds: LiveFeeds[str], holder: LiveHolder, ticket: str = TICKET) -> None:
    feeds.subscribe(ticket, holder)


TEXT = st.text(max_size=30)
MESSAGE = st.fixed_dictionaries({
    "role": st.sampled_from(["user", "assistant"]),
    "metadata": st.one_of(st.just({}), st.fixed_dictionaries({"title": TEXT,
                                                              "status": st.sampled_from(["pending", "done"])})),
    "content": st.lists(st.fixed_dictionaries({"type": st.just("text"), "text": TEXT}), min_size=1, max_size=2),
    "options": st.just([]),
})


def grown(messages: list[dict]) -> st.SearchStrategy[list[dict]]:
    """The next frame of a stream: messages whose last text grew, changed ones, new ones, some dropped."""
    def grow(message: dict, added: str) -> dict:
        parts = [dict(part) for part in message["content"]]
        parts[-1]["text"] += added
        return {**message, "content": parts}
    kept = st.lists(st.sampled_from(messages), max_size=len(messages)) if messages else st.just([])
    return st.one_of(
        st.tuples(st.lists(TEXT, min_size=len(messages), max_size=len(messages))).map(
            lambda added: [grow(m, a) for m, a in zip(messages, added[0], strict=True)]),
        st.tuples(kept, st.lists(MESSAGE, max_size=3)).map(lambda parts: parts[0] + parts[1]),
    )


@given(st.lists(MESSAGE, max_size=4).flatmap(lambda first: st.tuples(st.just(first), grown(first))),
       st.integers(0, 3), st.integers(0, 3))
def test_a_diff_applied_as_the_page_applies_it_rebuilds_the_frame(frames, start, next_start):
    first, second = LiveFrame(start, frames[0]), LiveFrame(next_start, frames[1])
    shown_start, shown = apply_frame(0, [], frame_diff(None, first))  # type: ignore[arg-type]
    assert (shown_start, shown) == (start, first.messages)
    diff = frame_diff(first, second)
    if diff is None:  # nothing to send: the page shows `second` already
        assert (start, first.messages) == (next_start, second.messages)
        return
    assert apply_frame(shown_start, shown, diff) == (next_start, second.messages)
    if start == next_start and all(op.get("append") is not None for op in diff["ops"]):
        assert len(str(diff)) <= len(str(second.messages)) + 64  # text that only grew is sent as what it added


def test_text_that_grew_is_sent_as_what_was_added():
    before = {"role": "assistant", "metadata": {}, "content": [{"type": "text", "text": "1, 2"}], "options": []}
    after = {**before, "content": [{"type": "text", "text": "1, 2, 3"}]}
    assert frame_diff(LiveFrame(2, [before]), LiveFrame(2, [after])) == \
        {"start": 2, "length": 1, "ops": [{"i": 0, "append": ", 3"}]}
    assert frame_diff(LiveFrame(2, [after]), LiveFrame(2, [after])) is None  # the page shows it: nothing to send
    assert frame_diff(LiveFrame(2, [after]), LiveFrame(2, [])) == {"start": 2, "length": 0, "ops": []}
    assert frame_diff(LiveFrame(1, [after]), LiveFrame(2, [after])) == \
        {"start": 2, "length": 1, "ops": [{"i": 0, "set": after}]}
    assert frame_diff(None, LiveFrame(2, [])) == {"start": 2, "length": 0, "ops": []}
