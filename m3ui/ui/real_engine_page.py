"""`GET /real-engine`: docs/REAL_ENGINE.md as a page of the app, the one the simulated engine's banner and badge
link to, so the way to the real engine is one tap away on any screen (a phone has no hover tooltips)."""

from __future__ import annotations

import html
from functools import cache
from pathlib import Path

from markdown_it import MarkdownIt
from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.routing import Route

PATH = "/real-engine"
DOC = Path(__file__).resolve().parents[2] / "docs" / "REAL_ENGINE.md"
TITLE = "Run the real engine — m3ui"
# Readable in both themes (m3ui.web.early_head puts the theme script into this page's <head>, as into every page).
STYLE = """body { font: 16px/1.55 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 0;
  background: #fff; color: #1f2937; }
:root.dark body { background: #0b0f19; color: #e5e7eb; }
main { max-width: 46rem; margin: 0 auto; padding: 1rem 1.25rem 3rem; }
pre { background: #f3f4f6; padding: 0.75rem; border-radius: 6px; overflow-x: auto; font-size: 0.85rem; }
:root.dark pre, :root.dark code { background: #1f2937; }
code { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; }
a { color: #1d4ed8; } :root.dark a { color: #93c5fd; }
.m3-back { display: inline-block; margin-top: 0.5rem; }"""


@cache
def page_html() -> str:
    body = MarkdownIt("commonmark").render(DOC.read_text(encoding="utf-8"))
    return (f'<!doctype html><html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{html.escape(TITLE)}</title><style>{STYLE}</style></head><body><main>"
            f'<a class="m3-back" href="/">← back to the app</a>{body}</main></body></html>')


async def _page(request: Request) -> HTMLResponse:
    return HTMLResponse(page_html())


def real_engine_route() -> Route:
    return Route(PATH, _page, methods=["GET"])
