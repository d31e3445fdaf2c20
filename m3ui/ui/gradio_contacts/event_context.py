"""The request of the Gradio event being handled, for code that a handler calls without passing it on.

Gradio keeps it in a context variable (`gradio.context.LocalContext.request`) while it runs an event's function.
The public way is a `request: gr.Request` parameter of the handler itself; the Chat tab's server library is
reached from many ChatController handlers that take none (docs/GRADIO.md: the plan)."""

from __future__ import annotations

import gradio as gr
from gradio.context import LocalContext


def event_request() -> gr.Request | None:
    """The request of the event this thread handles; None outside an event."""
    return LocalContext.request.get(None)
