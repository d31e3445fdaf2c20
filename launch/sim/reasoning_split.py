"""Splitting raw text into reasoning and answer, as sglang's `--reasoning-parser minimax-m3` does.

A mirror of sglang/srt/parser/reasoning_parser.py (BaseReasoningFormatDetector with `<mm:think>` tags),
quirks included: streamed reasoning is only right-stripped in the increment that closes the block, a
lone `</mm:think>` outside a block passes through as answer text, and the one-shot parse strips the
whole text and the answer. tests/test_sim_parser_contract.py proves the two agree.
"""

from __future__ import annotations

from dataclasses import dataclass

from launch.sim.tokens import THINK_END, THINK_START


@dataclass(frozen=True)
class Split:
    reasoning: str
    normal: str


class ReasoningSplitter:
    """`forced`: the template already opened the block (thinking_mode enabled), so output starts as reasoning.
    `stream`: the request's stream_reasoning; without it the reasoning is held back and sent whole when the
    block closes (with the `<mm:think>` the model wrote itself, as sglang's buffer keeps it)."""

    def __init__(self, forced: bool, stream: bool = True) -> None:
        self._in_reasoning = forced
        self._forced = forced
        self._stream = stream
        self._buffer = ""
        self._stripped_start = False

    def feed(self, new_text: str) -> Split:
        """The streaming increment."""
        self._buffer += new_text
        text = self._buffer
        if any(tag.startswith(text) and tag != text for tag in (THINK_START, THINK_END)):
            return Split("", "")
        if not self._stripped_start and THINK_START in text:
            text = text.replace(THINK_START, "")
            self._stripped_start = True
            self._in_reasoning = True
        if self._in_reasoning and THINK_END in text:
            end = text.find(THINK_END)
            self._buffer = ""
            self._in_reasoning = False
            return Split(text[:end].rstrip(), text[end + len(THINK_END):])
        if self._in_reasoning and not self._stream:
            return Split("", "")
        self._buffer = ""
        return Split(text, "") if self._in_reasoning else Split("", text)

    def whole(self, text: str) -> Split:
        """The one-shot parse of a complete text (non-streaming responses)."""
        if not (self._forced or THINK_START in text):
            return Split("", text)
        text = text.replace(THINK_START, "").strip()
        if THINK_END not in text:
            return Split(text, "")
        reasoning, normal = text.split(THINK_END, 1)
        return Split(reasoning, normal.strip())
