"""The admin's view of every API key (in the Users tab): whose, label, state, created, last used, expiry; and
revoking any of them. Every handler goes through AdminGuard."""

from __future__ import annotations

from dataclasses import dataclass

import gradio as gr

from m3ui.accounts import AccountError, AccountStore
from m3ui.accounts.keys import ApiKeyStore
from m3ui.admin.console import Outcome
from m3ui.ui.admin.guard import AdminGuard
from m3ui.ui.admin.markup import outcome_html
from m3ui.ui.api_keys_view import keys_table


@dataclass
class ApiKeysPanel:
    table: gr.HTML
    outcome: gr.HTML
    key_id: gr.Textbox
    revoke: gr.Button
    refresh: gr.Button


def build_api_keys_panel() -> ApiKeysPanel:
    gr.HTML('<div class="m3a-panel-title">API keys (the gateway, /v1)</div>')
    outcome = gr.HTML(elem_id="m3-admin-keys-outcome")
    table = gr.HTML(elem_id="m3-admin-keys")
    with gr.Row():
        key_id = gr.Textbox(label="Key id", max_length=20, elem_id="m3-admin-key-id")
        revoke = gr.Button("Revoke key", variant="stop", elem_id="m3-admin-key-revoke")
        refresh = gr.Button("Refresh", size="sm", elem_id="m3-admin-keys-refresh")
    return ApiKeysPanel(table, outcome, key_id, revoke, refresh)


class ApiKeysEvents:
    def __init__(self, panel: ApiKeysPanel, accounts: AccountStore | None, guard: AdminGuard) -> None:
        self.panel, self.guard = panel, guard
        self.keys = ApiKeyStore(accounts) if accounts is not None else None

    def listed(self, outcome: Outcome | None = None) -> list[object]:
        if self.keys is None:
            return [outcome_html(Outcome("info", "This app runs without an accounts database.")), ""]
        return [outcome_html(outcome) if outcome else "", keys_table(self.keys.list(), with_user=True)]

    def revoke(self, key_id: str) -> list[object]:
        if self.keys is None:
            return self.listed()
        try:
            key = self.keys.revoke(key_id or "")
        except AccountError as exc:
            return self.listed(Outcome("error", f"Not revoked: {exc}"))
        return self.listed(Outcome("ok", f"API key {key.id} of {key.user} revoked."))

    def wire(self, tab: gr.Tab) -> None:
        p, on = self.panel, self.guard.on
        out = [p.outcome, p.table]
        on([tab.select, p.refresh.click], self.listed, None, out, "keys_list", show_progress="hidden")
        on(p.revoke.click, self.revoke, [p.key_id], out, "keys_revoke")
