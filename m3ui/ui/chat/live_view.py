"""The Chat tab's side of the live channel (m3ui.live): the page's ticket, the hidden button whose browser-only
event puts a frame into the Chatbot (assets/js/live.js), and frames in the Chatbot's own format."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import gradio as gr

from m3ui.live.feed import LiveFeed, LiveFeeds, LiveRefused
from m3ui.live.frame_diff import LiveFrame
from m3ui.live.holder import LiveHolder
from m3ui.ui.request_origin import request_origin

# (client address, signed-in user, cookies) -> who uses a live ticket (AppServices.live_holder)
HolderOf = Callable[[str, str | None, Mapping[str, str]], LiveHolder]

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

    def __init__(self, feeds: LiveFeeds[LiveFrame], ticket: object, chatbot: gr.Chatbot, holder: LiveHolder) -> None:
        self._feeds, self._chatbot = feeds, chatbot
        self._ticket = ticket if isinstance(ticket, str) else ""
        self._feed: LiveFeed[LiveFrame] | None = feeds.claim(ticket, holder)

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

    def __init__(self, feeds: LiveFeeds[LiveFrame], chatbot: gr.Chatbot, holder_of: HolderOf) -> None:
        self._feeds, self._chatbot, self._holder_of = feeds, chatbot, holder_of

    def bind(self, ticket: str, request: gr.Request) -> bool:
        """The page's ticket is the asking session's from now on; False when another session has it."""
        try:
            self._feeds.bind(ticket, self._holder(request))
        except LiveRefused:
            return False
        return True

    def answer(self, ticket: object, request: gr.Request) -> AnswerChannel:
        """The answer's channel, claimed for the session that asks (another session's ticket gets none)."""
        return AnswerChannel(self._feeds, ticket, self._chatbot, self._holder(request))

    def _holder(self, request: gr.Request) -> LiveHolder:
        client, cookies = request_origin(request)
        return self._holder_of(client, getattr(request, "username", None), cookies)
