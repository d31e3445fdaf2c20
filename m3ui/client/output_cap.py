"""A client-side cap for an engine that ignores max_tokens (seen: 85,000 characters in 20 s for 4,096 tokens).

Every streamed chunk that carries text holds at least one token, and no tokenizer makes more than a few
characters per token on average; so once an answer has more such chunks than max_tokens plus a margin, or
more characters than that many tokens can make, the engine has clearly gone past its limit."""

from __future__ import annotations

CAP_MARGIN_TOKENS = 64  # slack for engines that count special tokens differently
MAX_CHARS_PER_TOKEN = 16  # generous: English text averages about 4


class OutputCap:
    def __init__(self, max_tokens: int) -> None:
        self.max_chunks = max_tokens + CAP_MARGIN_TOKENS
        self.max_chars = self.max_chunks * MAX_CHARS_PER_TOKEN
        self._chunks = 0
        self._chars = 0

    def add(self, chars: int) -> None:
        """One chunk carrying `chars` characters of text (reasoning, answer or tool arguments) arrived."""
        if chars:
            self._chunks += 1
            self._chars += chars

    @property
    def exceeded(self) -> bool:
        return self._chunks > self.max_chunks or self._chars > self.max_chars
