"""MiniMax-M3's think tags inside `content`, fixed up on the client (chunk boundaries may split a tag).

- StrayCloserFilter (always on): sglang-kt does not strip a `</mm:think>` that arrives without an opener
  (seen in multi-turn chats); drop it when it starts the content, possibly after whitespace.
- InlineThinkSplitter (always used: it finds out by itself when the server has no reasoning parser):
  `<mm:think>..</mm:think>` at the start of the content is moved into reasoning; it also drops a stray closer
  like the filter above.
"""

from __future__ import annotations

from m3ui.client.events import ContentDelta, ReasoningDelta

THINK_OPEN = "<mm:think>"
THINK_CLOSE = "</mm:think>"

TextDelta = ReasoningDelta | ContentDelta


def _held_suffix_len(text: str, tag: str) -> int:
    """Length of the longest end of `text` that could be the start of `tag` (hold it back, undecided)."""
    for size in range(min(len(text), len(tag) - 1), 0, -1):
        if tag.startswith(text[-size:]):
            return size
    return 0


def _without_leading_blank_lines(text: str) -> str:
    indent_start = text.rfind("\n", 0, len(text) - len(text.lstrip())) + 1
    return text[indent_start:]


class StrayCloserFilter:
    """Feed content deltas in; get content deltas out, minus a leading stray `</mm:think>`."""

    def __init__(self) -> None:
        self._state = "start"  # start -> (after_close ->) content
        self._held = ""

    def feed(self, text: str) -> list[TextDelta]:
        if self._state == "content":
            return [ContentDelta(text)] if text else []
        if self._state == "after_close":
            return self._after_close(text)
        return self._at_start(text)

    def flush(self) -> list[TextDelta]:
        """End of stream: give back whatever was held (an incomplete tag is just text)."""
        held, self._held = self._held, ""
        return [ContentDelta(held)] if held and self._state == "start" else []

    def _at_start(self, text: str) -> list[TextDelta]:
        self._held += text
        head = self._held.lstrip()
        if head.startswith(THINK_CLOSE):
            self._held, self._state = "", "after_close"
            return self._after_close(head[len(THINK_CLOSE) :])
        if self._could_still_be_tag(head):
            return []
        held, self._held, self._state = self._held, "", "content"
        return [ContentDelta(held)]

    def _could_still_be_tag(self, head: str) -> bool:
        return THINK_CLOSE.startswith(head)

    def _after_close(self, text: str) -> list[TextDelta]:
        # The model puts a blank line after the closer; it is not part of the answer, but the indentation of
        # the answer's first line is ("    x = 1" is code). Whitespace is held until the first visible text.
        self._held += text
        if not self._held.strip():
            return []
        answer = _without_leading_blank_lines(self._held)
        self._held, self._state = "", "content"
        return [ContentDelta(answer)]


class InlineThinkSplitter(StrayCloserFilter):
    """Moves `<mm:think>reasoning</mm:think>` at the start of content into ReasoningDelta events.

    `starts_in_reasoning`: thinking mode "enabled" prefills `<mm:think>` in the prompt, so the output
    starts inside the reasoning with no opener of its own.
    """

    def __init__(self, starts_in_reasoning: bool = False) -> None:
        super().__init__()
        if starts_in_reasoning:
            self._state = "reasoning"

    def feed(self, text: str) -> list[TextDelta]:
        if self._state == "reasoning":
            return self._in_reasoning(text)
        return super().feed(text)

    def flush(self) -> list[TextDelta]:
        if self._state == "reasoning":
            held, self._held = self._held, ""
            return [ReasoningDelta(held)] if held else []
        return super().flush()

    def _at_start(self, text: str) -> list[TextDelta]:
        head = (self._held + text).lstrip()
        if head.startswith(THINK_OPEN):
            self._held, self._state = "", "reasoning"
            return self._in_reasoning(head[len(THINK_OPEN) :])
        return super()._at_start(text)

    def _could_still_be_tag(self, head: str) -> bool:
        return THINK_OPEN.startswith(head) or super()._could_still_be_tag(head)

    def _in_reasoning(self, text: str) -> list[TextDelta]:
        self._held += text
        end = self._held.find(THINK_CLOSE)
        if end >= 0:
            reasoning, rest = self._held[:end], self._held[end + len(THINK_CLOSE) :]
            self._held, self._state = "", "after_close"
            out: list[TextDelta] = [ReasoningDelta(reasoning)] if reasoning else []
            return out + self._after_close(rest)
        keep = _held_suffix_len(self._held, THINK_CLOSE)
        ready, self._held = self._held[: len(self._held) - keep], self._held[len(self._held) - keep :]
        return [ReasoningDelta(ready)] if ready else []
