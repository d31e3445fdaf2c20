"""What an answer's stream sets, and what it hands to the `finish` event chained after it.

Gradio turns every gr.skip() or gr.update() among an update's outputs into a new component object (about
0.3 ms each), so live frames that listed the whole view (18 outputs) cost more than everything else in the app
per streamed token. An answer's handler therefore outputs only LIVE_SLOTS (the question saved and Send turned
into Stop, frames of the chatbot, the answer saved and the page idle) and a Following; `finish`, chained after
it in chat_view, sets the rest of the view (the chat list, title, undo, export).
"""

from __future__ import annotations

from dataclasses import dataclass

import gradio as gr

from m3ui.conversation_store import ChatLibrary, SavedChat

LIVE_SLOTS = ("library", "outbox", "chatbot", "message", "send", "stop")  # names of m3ui.ui.chat.view_slots


@dataclass
class Following:
    """An answer's stream, as `finish` needs it."""

    library: ChatLibrary  # as the browser (or the server) holds it
    outcome: SavedChat | None = None  # the chat with the answer saved, once it ended
    message: object = None  # the message box's value at the end (None leaves it as the user left it)


def live_frame(chatbot: object) -> tuple[object, ...]:
    """Values for LIVE_SLOTS and the Following: the chatbot; the others stay as they are."""
    return (*(chatbot if name == "chatbot" else gr.skip() for name in LIVE_SLOTS), gr.skip())
