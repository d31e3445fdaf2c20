"""The Account tab's "Your chats" part: export every chat the server keeps for the signed-in person (one JSON
download, in the browser's record format, so it can be read back), and delete-my-data (every chat, after typing
DELETE). The person is the request's login, never an input."""

from __future__ import annotations

import json

import gradio as gr

from m3ui.accounts import AccountError
from m3ui.accounts.server_chats import ServerChats
from m3ui.conversation.library import EXPORT_MAX_CHARS
from m3ui.services import AppServices
from m3ui.ui.chat.view import DOWNLOAD_JS

CONFIRM_WORD = "DELETE"


class AccountChats:
    def __init__(self, chats: ServerChats) -> None:
        self.chats = chats

    @staticmethod
    def _user(request: gr.Request) -> str:
        name = getattr(request, "username", None)
        if not name:
            raise gr.Error("Sign in to see your chats.", title="Not signed in")
        return str(name)

    def export(self, request: gr.Request) -> dict[str, str]:
        """Every chat of the person as one JSON document for the page to download (built in memory, bounded)."""
        try:
            records = self.chats.export(self._user(request))
        except AccountError as exc:
            raise gr.Error(str(exc), title="Export refused") from None
        text = json.dumps({"chats": records}, ensure_ascii=False, indent=1)
        if len(text) > EXPORT_MAX_CHARS:
            raise gr.Error(f"Your chats hold {len(text):,} characters, more than one export may "
                           f"({EXPORT_MAX_CHARS:,}): export the long ones from the Chat tab.", title="Export refused")
        return {"name": "m3ui-chats.json", "text": text, "kind": "json"}

    def delete_all(self, confirm: str, request: gr.Request) -> str:
        if (confirm or "").strip() != CONFIRM_WORD:
            raise gr.Error(f"Type {CONFIRM_WORD} to delete every chat of yours.", title="Nothing deleted")
        try:
            count = self.chats.delete_all(self._user(request))
        except AccountError as exc:
            raise gr.Error(str(exc), title="Nothing deleted") from None
        gr.Info(f"{count} chat{'s' * (count != 1)} deleted from the server.")
        return ""


def build_account_chats(services: AppServices) -> None:
    """The part's components and wiring (inside the Account tab); nothing without accounts."""
    if services.policy.accounts is None:
        return
    part = AccountChats(ServerChats(services.policy.accounts))
    with gr.Accordion("Your chats", open=False):
        export = gr.Button("⬇ Export all my chats (JSON)", size="sm", elem_id="m3-account-export-chats")
        download = gr.JSON(None, visible=False)
        confirm = gr.Textbox(label=f"Delete every chat of yours from the server: type {CONFIRM_WORD}", max_lines=1,
                             max_length=20, elem_id="m3-account-delete-confirm")
        delete = gr.Button("Delete all my chats", variant="stop", size="sm", elem_id="m3-account-delete-chats")
    export.click(part.export, None, download, api_visibility="private"
                 ).success(None, [download], None, js=DOWNLOAD_JS)
    delete.click(part.delete_all, [confirm], confirm, api_visibility="private")
