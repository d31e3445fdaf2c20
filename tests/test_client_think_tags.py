"""The think-tag adapters give the same answer however the engine splits the text into deltas."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from m3ui.client.events import ContentDelta, ReasoningDelta
from m3ui.client.think_tags import InlineThinkSplitter, StrayCloserFilter


def feed_all(adapter, pieces):
    events = [event for piece in pieces for event in adapter.feed(piece)] + adapter.flush()
    reasoning = "".join(e.text for e in events if isinstance(e, ReasoningDelta))
    content = "".join(e.text for e in events if isinstance(e, ContentDelta))
    return reasoning, content


def split_at(text, cuts):
    bounds = sorted({0, len(text), *(c % (len(text) + 1) for c in cuts)})
    return [text[a:b] for a, b in zip(bounds, bounds[1:], strict=False)]


CASES_STRAY = {
    "</mm:think>\n\nThe answer is 4.": "The answer is 4.",
    "  \n</mm:think>Hi": "Hi",
    "Plain answer": "Plain answer",
    "x </mm:think> in the middle stays": "x </mm:think> in the middle stays",
    "</mm:thin": "</mm:thin",  # an unfinished tag at the very end is text
    "</mm:think>\n\n    x = 1\n    y = 2": "    x = 1\n    y = 2",  # blank lines go, indentation stays
    "</mm:think>    x = 1": "    x = 1",
    "<b>bold</b>": "<b>bold</b>",
    "": "",
}

CASES_INLINE = {
    "<mm:think>hmm</mm:think>Hi!": ("hmm", "Hi!"),
    "\n<mm:think>a < b</mm:thi</mm:think>\n\nDone": ("a < b</mm:thi", "Done"),
    "</mm:think>Only answer": ("", "Only answer"),
    "<mm:think>code</mm:think>\n\n    x = 1": ("code", "    x = 1"),
    "No tags at all": ("", "No tags at all"),
    "<mm:think>cut off by max_tokens": ("cut off by max_tokens", ""),
}


@given(st.lists(st.integers(min_value=0, max_value=60), max_size=8))
def test_stray_closer_is_dropped_only_at_the_start_for_any_split(cuts):
    for raw, expected in CASES_STRAY.items():
        assert feed_all(StrayCloserFilter(), split_at(raw, cuts)) == ("", expected)


@given(st.lists(st.integers(min_value=0, max_value=60), max_size=8))
def test_inline_think_block_becomes_reasoning_for_any_split(cuts):
    for raw, expected in CASES_INLINE.items():
        assert feed_all(InlineThinkSplitter(), split_at(raw, cuts)) == expected


@given(st.lists(st.integers(min_value=0, max_value=40), max_size=6))
def test_enabled_mode_output_starts_inside_reasoning_without_an_opener(cuts):
    raw = "the user wants 4</mm:think>\n4"
    assert feed_all(InlineThinkSplitter(starts_in_reasoning=True), split_at(raw, cuts)) == ("the user wants 4", "4")


def test_text_that_cannot_be_a_tag_is_released_at_once():
    assert StrayCloserFilter().feed("Hello") == [ContentDelta("Hello")]
    splitter = InlineThinkSplitter()
    assert splitter.feed("<mm:think>abc</mm") == [ReasoningDelta("abc")]
