"""Token counts for attachments and the context meter, and where each comes from (a chip says which).

In order: the model folder's tokenizer.json (read offline through `tokenizers`: the engine's own vocabulary, and no
load on the engine's tokenizer, which live answers share), else the engine's `/v1/messages/count_tokens`
(m3ui.documents.engine_count), else an estimate from the text's length, always labelled as one so that nobody
mistakes it for the engine's count. Exact counts are kept per text (a chat's turns are counted again at every
meter update); estimates are not, so a count the engine could not give now is asked for again next time."""

from __future__ import annotations

import hashlib
import logging
import math
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from m3ui.documents.engine_count import EngineCounter

log = logging.getLogger(__name__)

CHARS_PER_TOKEN = 3.6  # MiniMax's vocabulary on English prose and code; only for the labelled estimate
# Past this, the engine is not asked: at 8 chars a token (denser than any real text) it is more than M3's whole
# 1M-token context, so an exact count changes no decision (the meter is over either way), and the engine's
# tokenizer is not held for seconds.
ENGINE_MAX_CHARS = 8_000_000
KEPT_COUNTS = 4096  # exact counts kept, by a digest of the text (bounded whatever the texts' sizes)

CountSource = Literal["tokenizer", "engine", "estimate"]
SOURCE_LABELS: dict[str, str] = {"tokenizer": "tokenizer.json", "engine": "engine", "estimate": "estimate"}


@dataclass(frozen=True)
class TokenCount:
    tokens: int
    source: CountSource

    @property
    def exact(self) -> bool:
        return self.source != "estimate"

    def label(self) -> str:
        if not self.exact:
            return f"≈{self.tokens:,} tokens (estimate)"
        return f"{self.tokens:,} tokens ({SOURCE_LABELS[self.source]})"


def estimate(text: str) -> TokenCount:
    return TokenCount(math.ceil(len(text) / CHARS_PER_TOKEN), "estimate")


class TokenCounter:
    """Counts with the model's own tokenizer, or the engine, or estimates; thread-safe (tokenizers releases the
    GIL; the kept counts are locked)."""

    def __init__(self, tokenizer_json: Path | None = None, engine: EngineCounter | None = None) -> None:
        self._tokenizer = None
        self._engine = engine
        self._lock = threading.Lock()
        self._kept: OrderedDict[bytes, TokenCount] = OrderedDict()
        if tokenizer_json is not None and tokenizer_json.is_file():
            try:
                from tokenizers import Tokenizer

                self._tokenizer = Tokenizer.from_file(str(tokenizer_json))
            except Exception as exc:  # a damaged or newer-format file: the engine or estimates, said so in the log
                log.warning("cannot load %s (%s): token counts come from the engine or are estimates",
                            tokenizer_json, exc)

    @classmethod
    def for_model(cls, model_path: str | Path | None, engine: EngineCounter | None = None) -> TokenCounter:
        return cls(Path(model_path) / "tokenizer.json" if model_path else None, engine)

    @property
    def exact(self) -> bool:
        """Counts come from the model's tokenizer.json (the engine's may be there or not at any moment)."""
        return self._tokenizer is not None

    def _exact(self, text: str) -> TokenCount | None:
        if self._tokenizer is not None:
            return TokenCount(len(self._tokenizer.encode(text, add_special_tokens=False).ids), "tokenizer")
        if self._engine is not None and len(text) <= ENGINE_MAX_CHARS:
            tokens = self._engine.count(text)
            return TokenCount(tokens, "engine") if tokens is not None else None
        return None

    def count(self, text: str) -> TokenCount:
        if self._tokenizer is None and self._engine is None:
            return estimate(text)
        key = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
        with self._lock:
            kept = self._kept.get(key)
            if kept is not None:
                self._kept.move_to_end(key)
                return kept
        got = self._exact(text)
        if got is None:
            return estimate(text)
        with self._lock:
            self._kept[key] = got
            while len(self._kept) > KEPT_COUNTS:
                self._kept.popitem(last=False)
        return got

    def head(self, text: str, tokens: int) -> str:
        """The longest start of `text` that is at most `tokens` tokens (for trimming a file to fit); counted by
        the engine, it is found by cutting at the text's own chars-per-token until the count fits."""
        if tokens <= 0:
            return ""
        if self._tokenizer is not None:
            offsets = self._tokenizer.encode(text, add_special_tokens=False).offsets
            return text if len(offsets) <= tokens else text[: offsets[tokens - 1][1]]
        whole = self.count(text)
        if whole.tokens <= tokens:
            return text
        if not whole.exact:
            return text[: int(tokens * CHARS_PER_TOKEN)]
        end = int(len(text) * tokens / whole.tokens)
        while end > 0:
            got = self.count(text[:end])
            if got.tokens <= tokens:
                return text[:end]
            end = int(end * tokens / got.tokens * 0.99)
        return ""
