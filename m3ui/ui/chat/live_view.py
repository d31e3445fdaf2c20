"""The Chat tab's side of the live channel (m3ui.live): the page's ticket, the hidden button whose browser-only
event puts a frame into the Chatbot (assets/js/live.js), and frames in the Chatbot's own format."""

from __future__ import annotations

from dataclasses import dataclass

import gradio as gr

from m3ui.live.feed import LiveFeed, LiveFeeds
from m3ui.live.frame_diff import LiveFrame

TICKET_JS = "() => window.m3uiLive.ticket()"
OPEN_JS = "window.m3uiLive.open()"  # a statement for the page's asking scripts (ASK_JS, BUSY_JS in ui/chat/view.py)
APPLY_JS = "(shown) => window.m3uiLive.apply(shown)"


@dataclass(frozen=True)
class LiveSlots:
    ticket: gr.Textbox  # the page's ticket, an input of every answer (empty for an API client: no channel)
    apply: gr.Button


def build_live_slots(chatbot: gr.Chatbot, page: gr.Blocks) -> LiveSlots:
    slots = LiveSlots(gr.Textbox("", visible=False), gr.Button("live", visible="hidden", elem_id="m3-chat-live"))
    slots.apply.click(None, [chatbot], [chatbot], js=APPLY_JS, queue=False)
    page.load(None, None, [slots.ticket], js=TICKET_JS, queue=False)
    return slots


class AnswerChannel:
    """One answer's way to its page's channel. show() returns False when the page has no channel open: the
    caller then sends the frame through Gradio."""

    def __init__(self, feeds: LiveFeeds[LiveFrame], ticket: object, chatbot: gr.Chatbot) -> None:
        self._feeds, self._chatbot = feeds, chatbot
        self._ticket = ticket if isinstance(ticket, str) else ""
        self._feed: LiveFeed[LiveFrame] | None = feeds.claim(ticket)

    def show(self, start: int, messages: list[gr.ChatMessage]) -> bool:
        """The chat from message `start` on is `messages` (those before it stay as the page shows them)."""
        if self._feed is None or not self._feed.reading:
            return False
        return self._feed.publish(LiveFrame(start, self._chatbot.postprocess(messages).model_dump()))  # type: ignore[arg-type]  # list is invariant; Gradio only reads it

    def close(self) -> None:
        if self._feed is not None:
            self._feeds.release(self._ticket, self._feed)
            self._feed = None


class LivePage:
    """What the chat controller needs of the live channel."""

    def __init__(self, feeds: LiveFeeds[LiveFrame], chatbot: gr.Chatbot) -> None:
        self._feeds, self._chatbot = feeds, chatbot

    def answer(self, ticket: object) -> AnswerChannel:
        return AnswerChannel(self._feeds, ticket, self._chatbot)
