"""On sign-in, the chats this browser kept while the chat had no login can be imported into the person's server
chats: a visible offer, shown while the browser holds chats the server does not and the person has not said no
in this browser. The browser's records are untrusted; they are stored as new chats of the signed-in person only
(an id the person already has on the server is left as it is)."""

from __future__ import annotations

from typing import Any

import gradio as gr

from m3ui.accounts import AccountError
from m3ui.conversation.library import MAX_CHATS, chat_from_record
from m3ui.ui.chat.server_library import ServerLibrary

DECLINED_KEY = "m3ui-chats-import-declined"
# The page script's part: the browser's records and whether this browser said no (assets/js/chat.js reads them).
READ_JS = (f"async (browser) => ({{...(await window.m3uiAttach.restore(window.m3uiChats.read())), "
           f"declined: localStorage.getItem('{DECLINED_KEY}') === '1'}})")
DECLINE_JS = f"() => {{ localStorage.setItem('{DECLINED_KEY}', '1'); }}"


class BrowserImport:
    def __init__(self, server: ServerLibrary) -> None:
        self.server = server

    def _new(self, browser: object) -> list[dict[str, object]]:
        """The browser's readable records whose chats the person does not have on the server."""
        if not isinstance(browser, dict) or not isinstance(browser.get("records"), list):
            return []
        known = {record["id"] for record in self.server.records(self.server.user())}
        return [record for record in browser["records"][:MAX_CHATS]
                if chat_from_record(record) is not None and record["id"] not in known]

    def offer(self, browser: object) -> tuple[dict[str, object], str]:
        """The offer shown (or not), and its text."""
        count = 0 if isinstance(browser, dict) and browser.get("declined") is True else len(self._new(browser))
        return gr.update(visible=count > 0), f"Import the {count} chat{'s' * (count != 1)} kept in this browser " \
                                             "into your account?"

    def run(self, browser: object) -> dict[str, object]:
        """Store the browser's chats on the server and hide the offer (the page then syncs: see ui/chat/view.py)."""
        user = self.server.user()
        imported = 0
        try:
            for record in self._new(browser):
                chat = chat_from_record(record)
                if chat is not None:
                    self.server.chats.save(user, chat, 0)
                    imported += 1
        except AccountError as exc:
            gr.Warning(f"{imported} chats imported; the rest were not: {exc}")
        else:
            gr.Info(f"{imported} chat{'s' * (imported != 1)} imported.")
        return gr.update(visible=False)


def build_import_offer(server: ServerLibrary, library: gr.State, browser: gr.JSON, sync: dict[str, Any],
                       page: gr.Blocks) -> None:
    """The offer's row (where it is built: the top of the Chat tab) and its wiring; `sync` (the keyed handler and
    its outputs: m3ui.ui.chat.view_slots) then shows the chats."""
    importer = BrowserImport(server)
    with gr.Row(visible=False, equal_height=True, elem_id="m3-chat-import") as row:
        label = gr.Markdown()
        accept = gr.Button("Import", size="sm", variant="primary", min_width=80, elem_id="m3-chat-import-yes")
        decline = gr.Button("No, thanks", size="sm", min_width=80, elem_id="m3-chat-import-no")
    page.load(importer.offer, [browser], [row, label], js=READ_JS, api_visibility="private")
    accept.click(importer.run, [browser], row, js=READ_JS, api_visibility="private",
                 concurrency_id="chat-library", concurrency_limit=1
                 ).success(inputs=[library, browser], **sync, api_visibility="private", show_progress="hidden")
    decline.click(lambda: gr.update(visible=False), None, row, js=DECLINE_JS, api_visibility="private")
