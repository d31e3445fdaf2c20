"""Per-message timing: time to first token, thinking time, decode speed."""

from __future__ import annotations

from collections.abc import Callable

from m3ui.client.events import StreamStats

Clock = Callable[[], float]
MIN_DECODE_TOKENS = 8  # tokens after the first; fewer arrive in a handful of chunks, too few to time


class StreamTimer:
    """Marks the moments of one stream; `stats()` turns them into StreamStats."""

    def __init__(self, clock: Clock, start: float | None = None) -> None:
        self._clock = clock
        self._start = clock() if start is None else start  # `start`: the request was sent before (an early one)
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

    @property
    def started(self) -> bool:
        """A token has come."""
        return self._first_token is not None

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
        return StreamStats(
            time_to_first_token_s=None if self._first_token is None else self._first_token - self._start,
            thinking_s=thinking,
            decode_tokens_per_s=self._decode_rate(completion_tokens),
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            total_s=end - self._start,
        )

    def _decode_rate(self, completion_tokens: int | None) -> float | None:
        """Tokens after the first over the time after the first (the first token's time is the prefill's);
        None when too few tokens came to say (a 2-token answer would claim 100,000s of tok/s)."""
        if completion_tokens is None or self._first_token is None or self._last_token is None:
            return None
        decode_time = self._last_token - self._first_token
        if completion_tokens - 1 < MIN_DECODE_TOKENS or decode_time <= 0:
            return None
        return (completion_tokens - 1) / decode_time
