"""search_docs: BM25 ranking over the small bundled Markdown set in assets/tool_docs/."""

from __future__ import annotations

import functools
import math
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

DOCS_DIR = Path(__file__).resolve().parents[2] / "assets" / "tool_docs"
MAX_TOP_K = 8
_K1, _B = 1.5, 0.75  # the usual BM25 constants
_SNIPPET_CHARS = 700


_TITLE_WEIGHT = 3  # a word in the title says more about the document than one in the body


def _terms(text: str) -> list[str]:
    """Words and numbers apart ("TP8" -> tp, 8), plurals folded ("experts" -> expert)."""
    words = re.findall(r"[a-z]+|[0-9]+", text.lower())
    return [w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w for w in words]


@dataclass(frozen=True)
class Doc:
    name: str
    title: str
    paragraphs: tuple[str, ...]
    term_counts: Counter[str]
    length: int


@dataclass(frozen=True)
class DocHit:
    doc: Doc
    score: float
    snippet: str


class DocIndex:
    def __init__(self, docs: list[Doc]) -> None:
        self.docs = docs
        self._average_length = sum(doc.length for doc in docs) / max(len(docs), 1)
        document_frequency = Counter(term for doc in docs for term in doc.term_counts)
        count = len(docs)
        self._idf = {t: math.log(1 + (count - n + 0.5) / (n + 0.5)) for t, n in document_frequency.items()}

    @classmethod
    def from_directory(cls, directory: Path) -> DocIndex:
        docs = []
        for path in sorted(directory.glob("*.md")):
            text = path.read_text(encoding="utf-8")
            title = next((line[2:].strip() for line in text.splitlines() if line.startswith("# ")), path.stem)
            paragraphs = tuple(p.strip() for p in text.split("\n\n") if p.strip() and not p.startswith("# "))
            terms = _terms(text) + _terms(title) * (_TITLE_WEIGHT - 1)
            docs.append(Doc(path.name, title, paragraphs, Counter(terms), len(terms)))
        return cls(docs)

    def search(self, query: str, top_k: int = 3) -> list[DocHit]:
        query_terms = set(_terms(query))
        scored = [(self._score(doc, query_terms), doc) for doc in self.docs]
        ranked = sorted((pair for pair in scored if pair[0] > 0), key=lambda pair: -pair[0])
        return [DocHit(doc, score, _best_paragraph(doc, query_terms)) for score, doc in ranked[:top_k]]

    def _score(self, doc: Doc, query_terms: set[str]) -> float:
        norm = _K1 * (1 - _B + _B * doc.length / self._average_length)
        score = 0.0
        for term in query_terms:
            frequency = doc.term_counts.get(term, 0)
            if frequency:
                score += self._idf[term] * frequency * (_K1 + 1) / (frequency + norm)
        return score


def _best_paragraph(doc: Doc, query_terms: set[str]) -> str:
    best = max(doc.paragraphs, key=lambda p: len(query_terms & set(_terms(p))), default="")
    return best if len(best) <= _SNIPPET_CHARS else best[:_SNIPPET_CHARS] + " …"


@functools.cache
def _bundled_index() -> DocIndex:
    return DocIndex.from_directory(DOCS_DIR)


def search_docs(query: str, top_k: int = 3) -> str:
    """Search the bundled notes about KT-Kernel, SGLang and MiniMax-M3 (launch flags, sizing, thinking modes,
    tool calls, streaming, errors) and return the best matching passages.

    Args:
        query: What to look for, in a few keywords.
        top_k: How many documents to return, 1 to 8.
    """
    if not 1 <= top_k <= MAX_TOP_K:
        raise ValueError(f"top_k must be between 1 and {MAX_TOP_K}; got {top_k}")
    if not _terms(query):
        raise ValueError("query has no searchable words")
    hits = _bundled_index().search(query, top_k)
    if not hits:
        return f"No document matches {query!r}."
    return "\n\n".join(f"[{hit.doc.name}] {hit.doc.title} (score {hit.score:.2f})\n{hit.snippet}" for hit in hits)
