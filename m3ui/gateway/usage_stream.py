"""Reading the tokens a response used as its bytes pass through, unchanged.

Where the usage is: OpenAI's last chunk (`"choices": [], "usage": {...}`, chat and completions streams), the
Anthropic stream's `message_delta` (sglang-kt 0.7.2 puts input and output tokens there), the Responses API's
`response.completed` event (`response.usage`), and the `usage` object of a whole (non-streamed) body. Only
events with a usage object are parsed; the rest pass as bytes, a read of whole events without one at once (that
is nearly every read: sglang's chat chunks all carry `"usage":null`, and parsing each cost more app CPU than the
rest of the gateway's own work per token). When the gateway asked for the usage chunk and the client did not,
that one event is left out of what the client gets.
"""

from __future__ import annotations

import json
import re

SEPARATOR = b"\n\n"
# A usage object (not `"usage":null`); inside a JSON string the quotes would be escaped, so text cannot match
_USAGE = re.compile(rb'"usage":\s*\{')
MAX_PARTIAL = 1 << 20


def usage_numbers(value: object) -> tuple[int, int] | None:
    """(prompt, completion) tokens from an OpenAI, Anthropic or Responses usage object."""
    if not isinstance(value, dict):
        return None
    prompt = value.get("prompt_tokens", value.get("input_tokens"))
    completion = value.get("completion_tokens", value.get("output_tokens"))
    if not isinstance(prompt, int) or not isinstance(completion, int):
        return None
    return prompt, completion


def body_usage(body: bytes) -> tuple[int, int] | None:
    try:
        value = json.loads(body)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    if not isinstance(value, dict):
        return None
    return usage_numbers(value.get("usage")) or usage_numbers((value.get("response") or {}).get("usage")
                                                              if isinstance(value.get("response"), dict) else None)


class UsageTap:
    """Feed it the response's bytes; it gives back what to send on (at once and unchanged, unless it strips the
    usage chunk: then whole events only) and keeps the usage it saw."""

    def __init__(self, strip_usage_chunk: bool) -> None:
        self.strip = strip_usage_chunk
        self.usage: tuple[int, int] | None = None
        self.events = 0  # events seen: a stream cut short is charged about one token each
        self._partial = b""  # the start of an event not complete yet

    def feed(self, data: bytes) -> bytes:
        if not self._partial and data.endswith(SEPARATOR) and _USAGE.search(data) is None:
            self.events += data.count(SEPARATOR)  # the common case: whole events, none with usage (none to strip)
            return data
        joined = self._partial + data
        end = joined.rfind(SEPARATOR)
        complete, self._partial = (joined[: end + 2], joined[end + 2:]) if end >= 0 else (b"", joined)
        if len(self._partial) > MAX_PARTIAL and not self.strip:
            self._partial = b""  # an event this long is no usage event: not worth the memory
        events = complete.split(SEPARATOR)[:-1]
        self.events += len(events)
        kept = [event + SEPARATOR for event in events if not self._usage_only(event) or not self.strip]
        return b"".join(kept) if self.strip else data

    def _usage_only(self, event: bytes) -> bool:
        """Note the usage an event carries; True when it is OpenAI's usage-only chunk."""
        if _USAGE.search(event) is None:
            return False
        for line in event.split(b"\n"):
            if not line.startswith(b"data:"):
                continue
            try:
                value = json.loads(line[5:])
            except (ValueError, UnicodeDecodeError, RecursionError):
                return False
            if not isinstance(value, dict):
                return False
            found = usage_numbers(value.get("usage"))
            if found is None and isinstance(value.get("response"), dict):
                found = usage_numbers(value["response"].get("usage"))
            if found is None:
                return False
            self.usage = found
            return value.get("choices") == []
        return False

    def flush(self) -> bytes:
        """What is left at the end of the response (an event without its blank line), sent on as it is."""
        rest, self._partial = self._partial, b""
        return rest if self.strip else b""
