"""The Account tab's API keys: the person's own keys (label, created, last used, expiry, state), a new key shown
once, and revoking one. The person comes from the request's login, never from an input (m3ui/ui/account_view.py)."""

from __future__ import annotations

import gradio as gr

from m3ui.accounts import AccountError
from m3ui.accounts.keys import ApiKey, ApiKeyStore
from m3ui.accounts.usage import local_time
from m3ui.services import AppServices
from m3ui.ui.monitor.format import esc

REVOKE_READY_JS = "(id) => ({__type__: 'update', interactive: !!(id || '').trim()})"
ONCE_NOTE = "Copy it now: it is shown this once (only its hash is kept). Connect an agent with it in the Connect tab."


def keys_table(keys: list[ApiKey], with_user: bool = False) -> str:
    if not keys:
        return '<div class="m3a-dim">No API keys yet.</div>'
    head = "<th>user</th>" if with_user else ""
    rows = "".join(
        f'<tr data-key="{esc(k.id)}"><td><code>{esc(k.id)}</code></td>' + (f"<td>{esc(k.user)}</td>" if with_user
                                                                           else "")
        + f"<td>{esc(k.label)}</td><td>{k.state()}</td><td>{local_time(k.created_at)}</td>"
        f"<td>{local_time(k.last_used_at)}</td><td>{local_time(k.expires_at) if k.expires_at else 'never'}</td></tr>"
        for k in keys)
    return (f'<table class="m3-usage m3-keys"><thead><tr><th>id</th>{head}<th>label</th><th>state</th>'
            f"<th>created</th><th>last used</th><th>expires</th></tr></thead><tbody>{rows}</tbody></table>")


class ApiKeysSection:
    def __init__(self, services: AppServices) -> None:
        self.policy = services.policy
        self.keys = ApiKeyStore(services.policy.accounts) if services.policy.accounts is not None else None

    def _person(self, request: gr.Request) -> str:
        user = self.policy.signed_in_user(request.username if request else None)
        if user is None or self.keys is None:
            raise gr.Error("API keys belong to accounts: sign in with one.", title="No account")
        return user.name

    def listed(self, request: gr.Request) -> str:
        user = self.policy.signed_in_user(request.username if request else None)
        if user is None or self.keys is None:
            return '<div class="m3a-dim">API keys belong to accounts.</div>'
        return keys_table(self.keys.list(user.name))

    def create(self, label: str, days: float | None, request: gr.Request) -> tuple[object, str, str]:
        name = self._person(request)
        assert self.keys is not None
        try:
            _, key = self.keys.create(name, label, int(days) if days else None)
        except AccountError as exc:
            raise gr.Error(str(exc), title="No key made") from None
        return gr.Textbox(value=key, visible=True), "", keys_table(self.keys.list(name))

    def revoke(self, key_id: str, request: gr.Request) -> tuple[str, str]:
        name = self._person(request)
        assert self.keys is not None
        if not (key_id or "").strip():  # the button is off until an id is typed; a direct call gets told so
            raise gr.Error("Enter the id of the key to revoke (the first column of the table above).",
                           title="Not revoked")
        try:
            key = self.keys.revoke(key_id, by=name)
        except AccountError as exc:
            raise gr.Error(str(exc), title="Not revoked") from None
        gr.Info(f"API key {key.id} revoked: it stops working at once.")
        return "", keys_table(self.keys.list(name))


def build_api_keys(services: AppServices, shown: gr.Tab) -> None:
    section = ApiKeysSection(services)
    gr.HTML('<div class="m3-account-title">Your API keys (for coding agents and scripts)</div>')
    table = gr.HTML(elem_id="m3-keys-table")
    with gr.Row():
        label = gr.Textbox(label="Label", placeholder="laptop, CI...", max_length=64, elem_id="m3-key-label")
        days = gr.Number(label="Expires after days (empty or 0: never)", precision=0, elem_id="m3-key-days")
        create = gr.Button("Create key", elem_id="m3-key-create")
    new_key = gr.Textbox(label="Your new key", info=ONCE_NOTE, interactive=False, visible=False, buttons=["copy"],
                         elem_id="m3-key-new")
    with gr.Row():
        revoke_id = gr.Textbox(label="Key id to revoke", max_length=20, elem_id="m3-key-revoke-id")
        revoke = gr.Button("Revoke", variant="stop", interactive=False, elem_id="m3-key-revoke")
    gr.on([shown.select], section.listed, None, table, api_visibility="private", show_progress="hidden")
    create.click(section.create, [label, days], [new_key, label, table], api_visibility="private")
    revoke.click(section.revoke, [revoke_id], [revoke_id, table], api_visibility="private")
    # Red and destructive: on only while an id is typed (in the page, no round trip)
    revoke_id.change(None, [revoke_id], [revoke], js=REVOKE_READY_JS, api_visibility="private")
