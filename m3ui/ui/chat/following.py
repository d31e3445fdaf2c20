"""What an answer's stream sets, and what it hands to the `finish` event chained after it.

Gradio turns every gr.skip() or gr.update() among an update's outputs into a new component object (about
0.3 ms each, plus a rebuild of its config), so every output a live frame carries but does not change costs
more than the frame's real work. An answer's handler therefore outputs only LIVE_SLOTS: the chatbot, which
changes, `library`, a State (a skip of it costs nothing), and `outbox`, which saves the question and then the
answer in the browser. In between, frames set the outbox to None: its change event fires once (the page's storage
script ignores a None), and a None costs Gradio nothing, where a gr.skip() made it build a new component each
frame (0.36 ms). The page itself turns Send into Stop and moves the question out of the message box when it
is clicked (ASK_JS / BUSY_JS in ui/chat/view.py), and `finish`, chained after the stream, sets the rest of the view:
the chat list, title, undo, export and the idle controls.
"""

from __future__ import annotations

from dataclasses import dataclass

from m3ui.conversation.library import ChatLibrary, SavedChat
from m3ui.ui.chat.view_slots import Values

LIVE_SLOTS = ("library", "outbox", "chatbot")  # names of m3ui.ui.chat.view_slots
FOLLOWED = (*LIVE_SLOTS, "following")  # an answer's outputs


@dataclass
class Following:
    """An answer's stream, as `finish` needs it."""

    library: ChatLibrary  # as the browser (or the server) holds it
    outcome: SavedChat | None = None  # the chat with the answer saved, once it ended; None: refused
    message: str | None = None  # a refused question, put back in the message box by `finish`


def live_values(values: Values, following: object = None) -> Values:
    """LIVE_SLOTS and the Following (when given) from a full set of view values (ChatController._values)."""
    live = {name: values[name] for name in LIVE_SLOTS}
    return live if following is None else {**live, "following": following}


def live_frame(chatbot: object, following: object = None) -> Values:
    """The chatbot and the Following (when given); the others stay as they are."""
    return {"chatbot": chatbot} if following is None else {"chatbot": chatbot, "following": following}


def answer_frame(chatbot: object) -> Values:
    """A frame of a streaming answer: the chatbot, and the storage box None between its two writes."""
    return {"outbox": None, "chatbot": chatbot}
