"""Stopping conditions: `stop` strings, `stop_regex` and `ignore_eos`, as sglang-kt's scheduler applies them.

After every token, schedule_batch.Req.check_finished looks for each `stop` string in the text so far, then
searches each `stop_regex`; the first hit ends the request with finish_reason "stop" and matched_stop set to
the string or the regex. The detokenizer then cuts the text at the first occurrence of `matched`
(detokenizer_manager.trim_matched_stop, skipped with no_stop_trim): a stop string never shows, while a regex
is looked up literally, so the text it matched stays. `ignore_eos` lets the model run past its end of turn
until max_new_tokens.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

PARAGRAPH = "\n\n"  # what the simulated model writes between the rounds of an answer it cannot end


@dataclass(frozen=True)
class Cut:
    generated: tuple[str, ...]  # the tokens generated, up to the one that completed the match
    pieces: tuple[str, ...]  # their text as it reaches the client, the matched stop string trimmed off
    matched: str


def _as_list(value: str | Sequence[str] | None) -> list[str]:
    return [value] if isinstance(value, str) else list(value or [])


def stop_cut(tokens: Sequence[str], stop: str | Sequence[str] | None, stop_regex: str | Sequence[str] | None,
             no_stop_trim: bool) -> Cut | None:
    """Where the output stops early, or None when no condition matches before it ends."""
    stops, regexes = _as_list(stop), _as_list(stop_regex)
    if not stops and not regexes:
        return None
    text = ""
    for index, token in enumerate(tokens):
        text += token
        matched = next((s for s in stops if s in text), None)
        if matched is None:
            matched = next((r for r in regexes if re.search(r, text)), None)
        if matched is not None:
            generated = tuple(tokens[:index + 1])
            return Cut(generated, _trimmed(generated, matched, no_stop_trim), matched)
    return None


def _trimmed(tokens: tuple[str, ...], matched: str, no_stop_trim: bool) -> tuple[str, ...]:
    """trim_matched_stop on the whole text, spread back over the tokens (a token past the cut is empty)."""
    text = "".join(tokens)
    position = text.find(matched) if matched and not no_stop_trim else -1
    end = len(text) if position == -1 else position
    pieces, start = [], 0
    for token in tokens:
        pieces.append(text[start:max(start, min(start + len(token), end))])
        start += len(token)
    return tuple(pieces)


def run_on(tokens: Sequence[str], count: int) -> tuple[str, ...]:
    """`count` tokens of a model that ignores its end of turn: it starts the answer over, again and again."""
    if not tokens or count <= 0:
        return ()
    cycle = (*tokens, PARAGRAPH)
    return tuple(cycle[i % len(cycle)] for i in range(count))
