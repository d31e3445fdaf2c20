"""Per-message timing: time to first token, thinking time, decode speed."""

from __future__ import annotations

from collections.abc import Callable

from m3ui.client.events import StreamStats

Clock = Callable[[], float]


class StreamTimer:
    """Marks the moments of one stream; `stats()` turns them into StreamStats."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._start = clock()
        self._first_token: float | None = None
        self._first_reasoning: float | None = None
        self._first_answer: float | None = None  # first content or tool-call token
        self._last_token: float | None = None

    def reasoning(self) -> None:
        now = self.token()
        if self._first_reasoning is None:
            self._first_reasoning = now

    def answer(self) -> None:
        now = self.token()
        if self._first_answer is None:
            self._first_answer = now

    def token(self) -> float:
        """Any token arrived (also one held back undecided by the think-tag filter)."""
        now = self._clock()
        if self._first_token is None:
            self._first_token = now
        self._last_token = now
        return now

    def stats(self, prompt_tokens: int | None, completion_tokens: int | None) -> StreamStats:
        end = self._clock()
        thinking = None
        if self._first_reasoning is not None:
            thinking_end = self._first_answer if self._first_answer is not None else self._last_token
            thinking = (thinking_end or end) - self._first_reasoning
        decode_rate = None
        if completion_tokens and self._first_token is not None and self._last_token is not None:
            decode_time = self._last_token - self._first_token
            decode_rate = completion_tokens / decode_time if decode_time > 0 else None
        return StreamStats(
            time_to_first_token_s=None if self._first_token is None else self._first_token - self._start,
            thinking_s=thinking,
            decode_tokens_per_s=decode_rate,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            total_s=end - self._start,
        )
