"""A stand-in tokenizer: splits text into token-sized pieces so that counts, pacing and streaming look real.

M3's vocabulary makes about four characters a token in English; here a token is a word piece of at most
six characters (with its leading space), a digit group, one other character, or a run of whitespace.
M3's tag tokens (`<mm:think>`, `</mm:think>`, the tool-call namespace token) are single tokens, as in the
real vocabulary, so a streamed increment never splits them.
"""

from __future__ import annotations

import re

THINK_START = "<mm:think>"
THINK_END = "</mm:think>"
NAMESPACE = "]<]minimax[>["
SPECIAL_TOKENS = (THINK_START, THINK_END, NAMESPACE)

_SPECIAL = re.compile("(" + "|".join(re.escape(t) for t in SPECIAL_TOKENS) + ")")
_PIECE = re.compile(r" ?[^\W\d_]{1,8}| ?\d{1,3}|\s+|.", re.DOTALL)
# Tokens a chat template adds around each message and before the reply (stand-ins for M3's markers).
MESSAGE_START = ("<|msg|>",)
MESSAGE_END = ("<|end|>", "\n")
GENERATION_PROMPT = ("<|msg|>", "assistant", "\n")


def tokenize(text: str) -> list[str]:
    """Pieces that concatenate back to `text` exactly."""
    out: list[str] = []
    for part in _SPECIAL.split(text):
        if part in SPECIAL_TOKENS:
            out.append(part)
        elif part:
            out.extend(_PIECE.findall(part))
    return out


def count_tokens(text: str) -> int:
    return len(tokenize(text))


def prompt_tokens(message_texts: list[str]) -> tuple[str, ...]:
    """The tokens of a chat prompt whose messages (and tool schemas) render to `message_texts`."""
    out: list[str] = []
    for text in message_texts:
        out += [*MESSAGE_START, *tokenize(text), *MESSAGE_END]
    return (*out, *GENERATION_PROMPT)
