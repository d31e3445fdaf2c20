"""Token log-probabilities (`logprobs`, `top_logprobs`) in serving_chat's shapes.

`{"content": [{"token", "bytes", "logprob", "top_logprobs": [{"token", "bytes", "logprob"}, ...]}]}`
(protocol.ChoiceLogprobs, built by serving_chat._process_logprobs_tokens). Non-streaming, one entry per
generated token, the end-of-turn token included; streaming, a content chunk carries the tokens generated
since the previous chunk, while reasoning and tool-call chunks carry none. `top_logprobs` has k alternatives
per token (a dict in sglang, so distinct texts), the sampled token first; without it the list is empty.
The values are the simulation's: deterministic per token and position, every alternative less likely.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from typing import Any

EOS_TEXT = "[e~["  # MiniMax's end-of-turn token as the tokenizer decodes it (special tokens kept)
ALTERNATIVES = (" the", ",", ".", " and", " a", "\n", " to", " of", " is", " in", " I", " it", " that", ":",
                " for", " you", " with", " on", " as", " be")


def _logprob(token: str, position: int) -> float:
    """A plausible value in (-2.5, 0]: a confident model, the same every run."""
    return -round((zlib.crc32(f"{position}:{token}".encode()) % 2500) / 1000, 3)


def _entry(token: str, logprob: float) -> dict[str, Any]:
    return {"token": token, "bytes": list(token.encode("utf-8")), "logprob": logprob}


def token_logprobs(tokens: Sequence[str], first_position: int, top: int) -> dict[str, Any]:
    """ChoiceLogprobs for `tokens`, the first being the output's token number `first_position`."""
    content = []
    for offset, token in enumerate(tokens):
        value = _logprob(token, first_position + offset)
        alternatives = [t for t in ALTERNATIVES if t != token][:max(0, top - 1)]
        tops = [_entry(token, value)] + [_entry(t, round(value - 1.5 - i, 3)) for i, t in enumerate(alternatives)]
        content.append({**_entry(token, value), "top_logprobs": tops[:top]})
    return {"content": content}
