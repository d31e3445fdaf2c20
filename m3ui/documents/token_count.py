"""Token counts for attachments and the context meter.

Exact when the model folder holds its tokenizer.json (read offline through `tokenizers`); otherwise an estimate
from the text's length, always labelled as one so that nobody mistakes it for the engine's count."""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

CHARS_PER_TOKEN = 3.6  # MiniMax's vocabulary on English prose and code; only for the labelled estimate


@dataclass(frozen=True)
class TokenCount:
    tokens: int
    exact: bool

    def label(self) -> str:
        return f"{self.tokens:,} tokens" if self.exact else f"≈{self.tokens:,} tokens (estimate)"


class TokenCounter:
    """Counts with the model's own tokenizer when there is one; thread-safe (tokenizers releases the GIL)."""

    def __init__(self, tokenizer_json: Path | None = None) -> None:
        self._tokenizer = None
        if tokenizer_json is not None and tokenizer_json.is_file():
            try:
                from tokenizers import Tokenizer

                self._tokenizer = Tokenizer.from_file(str(tokenizer_json))
            except Exception as exc:  # a damaged or newer-format file: estimates, said so in the log
                log.warning("cannot load %s (%s): token counts are estimates", tokenizer_json, exc)

    @classmethod
    def for_model(cls, model_path: str | Path | None) -> TokenCounter:
        return cls(Path(model_path) / "tokenizer.json" if model_path else None)

    @property
    def exact(self) -> bool:
        return self._tokenizer is not None

    def count(self, text: str) -> TokenCount:
        if self._tokenizer is None:
            return TokenCount(math.ceil(len(text) / CHARS_PER_TOKEN), exact=False)
        return TokenCount(len(self._tokenizer.encode(text, add_special_tokens=False).ids), exact=True)

    def head(self, text: str, tokens: int) -> str:
        """The longest start of `text` that is at most `tokens` tokens (for trimming a file to fit)."""
        if tokens <= 0:
            return ""
        if self._tokenizer is None:
            return text[: int(tokens * CHARS_PER_TOKEN)]
        offsets = self._tokenizer.encode(text, add_special_tokens=False).offsets
        return text if len(offsets) <= tokens else text[: offsets[tokens - 1][1]]
