"""Small HTML pieces and number formats shared by the Monitor tab's panels (styles in assets/m3ui.css).

Every text that comes from outside (engine answers, probe reasons, GPU names) goes through `esc`.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence
from typing import Literal

NoteKind = Literal["info", "warn", "error", "empty"]
GIB = 1 << 30


def esc(text: object) -> str:
    return html.escape(str(text), quote=True)


def pct(share: float | None, digits: int = 0) -> str:
    """A 0..1 share as a percentage; an en dash when unknown."""
    return "–" if share is None else f"{share * 100:.{digits}f}%"


def gib(size: float | None) -> str:
    return "–" if size is None else f"{size / GIB:.1f} GiB"


def per_second(value: float | None, unit: str) -> str:
    if value is None:
        return "–"
    return f"{value:,.0f} {unit}/s" if value >= 100 else f"{value:.1f} {unit}/s"


def byte_rate(value: float | None) -> str:
    if value is None:
        return "–"
    for factor, unit in ((1e9, "GB/s"), (1e6, "MB/s"), (1e3, "kB/s")):
        if value >= factor:
            return f"{value / factor:.1f} {unit}"
    return f"{value:.0f} B/s"


def count(value: int) -> str:
    return f"{value:,}"


def bar(share: float | None, kind: str = "", overlay: float | None = None) -> str:
    """A horizontal gauge; `overlay` draws a second share inside it (the engine's part of GPU memory)."""
    width = 0.0 if share is None else max(0.0, min(1.0, share))
    inner = f'<i style="width:{width * 100:.1f}%"></i>'
    if overlay is not None:
        inner += f'<b style="width:{max(0.0, min(1.0, overlay)) * 100:.1f}%"></b>'
    return f'<span class="m3-bar {kind}">{inner}</span>'


def tile(label: str, value: str, sub: str = "", kind: str = "", title: str = "") -> str:
    """A headline figure: a caption, a big value and a line of detail."""
    hint = f' title="{esc(title)}"' if title else ""
    return (f'<div class="m3-kpi {kind}"{hint}><div class="m3-kpi-label">{esc(label)}</div>'
            f'<div class="m3-kpi-value">{esc(value)}</div><div class="m3-kpi-sub">{esc(sub)}</div></div>')


def note(kind: NoteKind, text: str, title: str = "") -> str:
    """A boxed message: why a panel is empty, what to change, a caveat."""
    heading = f"<strong>{esc(title)}</strong> " if title else ""
    return f'<div class="m3-note m3-note-{kind}">{heading}{esc(text)}</div>'


def notes(kind: NoteKind, texts: Iterable[str]) -> str:
    return "".join(note(kind, text) for text in texts)


def facts(pairs: Sequence[tuple[str, str]]) -> str:
    """A compact label/value grid."""
    cells = "".join(f"<dt>{esc(label)}</dt><dd>{esc(value)}</dd>" for label, value in pairs)
    return f'<dl class="m3-facts">{cells}</dl>'


def table(headers: Sequence[str], rows: Sequence[Sequence[str]], empty: str) -> str:
    if not rows:
        return f'<p class="m3-muted">{esc(empty)}</p>'
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{esc(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f'<table class="m3-table"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'

