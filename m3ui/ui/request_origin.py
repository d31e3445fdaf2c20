"""Where a Gradio event's HTTP request came from: its client address and cookies (which session asks)."""

from __future__ import annotations

import gradio as gr


def request_origin(request: gr.Request | None) -> tuple[str, dict[str, str]]:
    """The client address and the cookies of the HTTP request behind a Gradio event (a gr.Request built by hand,
    as tests do, has neither: "unknown" and none)."""
    client = getattr(getattr(request, "client", None), "host", None) or "unknown"
    return client, dict(getattr(request, "cookies", None) or {})
