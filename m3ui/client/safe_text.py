"""Text that can always be encoded: lone UTF-16 surrogates (typed, pasted, or sent by an engine as a JSON
`\\ud83d` escape) are legal in a Python str but not in UTF-8, so JSON to the browser and files on disk would
raise. Every text that enters the chat core goes through safe_text()."""

from __future__ import annotations

REPLACEMENT = "\ufffd"


def safe_text(text: str) -> str:
    """`text` with each lone surrogate replaced by U+FFFD; a surrogate pair written as two escapes is joined
    into the character it stands for. Text without surrogates comes back as it is (the same object)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text
