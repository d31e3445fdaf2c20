"""A table wider than a phone: it scrolls sideways inside its own box (the page does not), a keyboard can scroll it
too, and at phone widths a hint says that there is more to the right (assets/tables.css)."""

from __future__ import annotations

import html

SCROLL_HINT = "Swipe sideways for every column →"


def scrolling(table: str, label: str) -> str:
    """`table`: the table's HTML; `label`: what it is, for screen readers (the box is a named, focusable region)."""
    return (f'<div class="m3-wide-table" role="region" aria-label="{html.escape(label)}" tabindex="0">{table}</div>'
            f'<div class="m3-scroll-hint" aria-hidden="true">{SCROLL_HINT}</div>')
