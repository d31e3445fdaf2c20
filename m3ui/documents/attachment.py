"""One attached file as the chat holds it: its text for the model, or why it could not be attached."""

from __future__ import annotations

import html
import re
from dataclasses import dataclass

from m3ui.documents.limits import human_size
from m3ui.documents.token_count import TokenCount


@dataclass(frozen=True)
class Attachment:
    name: str
    size: int  # bytes as received (measured, not claimed)
    kind: str  # "text", "pdf", "zip"; "refused" with `error`
    text: str = ""
    tokens: TokenCount = TokenCount(0, "estimate")
    note: str = ""  # what was skipped inside a zip, or that a file was trimmed
    error: str = ""

    @property
    def refused(self) -> bool:
        return bool(self.error)

    def chip(self) -> dict[str, object]:
        """What the page's chip shows (attach.js), never the text itself."""
        return {"name": self.name, "size": human_size(self.size), "tokens": self.tokens.tokens,
                "tokens_label": self.tokens.label() if not self.refused else "", "exact": self.tokens.exact,
                "kind": self.kind, "note": self.note, "error": self.error}


def refused(name: str, size: int, why: str) -> Attachment:
    return Attachment(name=name, size=size, kind="refused", error=why)


# How an attachment travels in the user's message: the model reads the name, the chat folds the block.
_OPEN = '<document name="{name}" size="{size}">\n'
_CLOSE = "\n</document>"
DOCUMENT_BLOCK = re.compile(r'<document name="([^"]*)" size="([^"]*)">\n(.*?)\n</document>', re.DOTALL)


def as_prompt(attachment: Attachment) -> str:
    return _OPEN.format(name=html.escape(attachment.name, quote=True), size=human_size(attachment.size)) \
        + attachment.text.replace(_CLOSE, "\n</ document>") + _CLOSE


def message_with(typed: str, attachments: list[Attachment]) -> str:
    """The user message sent and kept: the attached documents first, then what was typed."""
    blocks = [as_prompt(a) for a in attachments if not a.refused]
    return "\n\n".join([*blocks, typed] if typed else blocks)


def without_documents(message: str) -> str:
    """What was typed, or else the attached files' names (a chat's title comes from its first question)."""
    typed = DOCUMENT_BLOCK.sub("", message).strip()
    return typed or ", ".join(html.unescape(m.group(1)) for m in DOCUMENT_BLOCK.finditer(message))
