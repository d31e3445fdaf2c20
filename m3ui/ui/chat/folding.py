"""How a long question shows in the chat: each attached document, and a long pasted text, folded to its first
lines with an expand control, never as one giant bubble. Only the display is cut: the message keeps its full
text for the model and the exports."""

from __future__ import annotations

import html

from m3ui.conversation.export import fenced
from m3ui.documents.attachment import DOCUMENT_BLOCK

HEAD_LINES = 4  # always shown
MORE_LINES = 200  # shown on expand; the rest is only counted (a 10 MB file must not reach the page)
LINE_CHARS = 400  # a minified file is one long line
LONG_TEXT_LINES = 24
LONG_TEXT_CHARS = 3000


def _clip(line: str) -> str:
    return line if len(line) <= LINE_CHARS else line[:LINE_CHARS] + " …"


def _folded(body: str, heading: str) -> str:
    shown = HEAD_LINES + MORE_LINES
    lines = [_clip(line) for line in body.split("\n", shown)[:shown]]
    head, more = lines[:HEAD_LINES], lines[HEAD_LINES:]
    rest = body.count("\n") + 1 - shown
    out = [heading, fenced("\n".join(head))] if heading else [fenced("\n".join(head))]
    if more:
        hidden = f"\n\n… {rest:,} more lines, sent to the model in full" if rest > 0 else ""
        out.append(f'<details class="m3-fold"><summary>Show {len(more):,} more lines</summary>\n\n'
                   f"{fenced(chr(10).join(more))}{hidden}\n\n</details>")
    return "\n\n".join(out)


def _is_long(text: str) -> bool:
    return len(text) > LONG_TEXT_CHARS or text.count("\n") > LONG_TEXT_LINES


def _documents_end(text: str) -> int:
    """Where the typed part of a question with documents starts (0 when it has none)."""
    end = 0
    for end_match in DOCUMENT_BLOCK.finditer(text):
        end = end_match.end()
    return end


def edited_question(original: str, edited: str) -> str:
    """A question edited in the chat, whose editor holds the folded display: its documents are kept whole and
    only the typed part changes (the display is a view; the documents were never in the editor)."""
    end = _documents_end(original)
    if not end:
        return edited
    shown = fold_question(original[:end])
    typed = edited[len(shown):] if edited.startswith(shown) else edited.rsplit("\n\n", 1)[-1]
    return original[:end] + "\n\n" + typed.strip()


def fold_question(text: str) -> str:
    """The question as the chat shows it (unchanged when short and without documents)."""
    pieces, at = [], 0
    for match in DOCUMENT_BLOCK.finditer(text):
        name, size, body = match.groups()
        lines = body.count("\n") + 1
        pieces.append(_folded(body, f"📄 **{html.escape(html.unescape(name))}** · {size} · {lines:,} lines"))
        at = match.end()
    typed = text[at:].lstrip("\n") if pieces else text
    if typed:
        pieces.append(_folded(typed, "") if _is_long(typed) else typed)
    return "\n\n".join(pieces)
