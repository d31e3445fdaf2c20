"""The Connect tab: copy-paste settings for coding agents and SDKs (m3ui/gateway/client_settings.py), filled in with
this server's URL as the browser reached it and the model the engine serves, and a button that tries a key against
the gateway from the browser itself (GET /v1/models with it)."""

from __future__ import annotations

import html
import re
from typing import Literal

import gradio as gr

from m3ui.gateway.client_settings import client_settings
from m3ui.services import AppServices

CODE_LANGUAGE: dict[str, Literal["shell", "json", "yaml", "python"] | None] = {
    "bash": "shell", "json": "json", "yaml": "yaml", "python": "python", "toml": None}
DEFAULT_MODEL = "MiniMax-M3"
# Runs in the page: the key goes to this server's gateway only, as an agent would send it
TEST_KEY_JS = """async (key) => {
  key = (key || '').trim();
  if (!key) return 'Paste a key first (create one in the Account tab).';
  try {
    const r = await fetch('/v1/models', {headers: {'Authorization': 'Bearer ' + key}});
    const body = await r.json().catch(() => ({}));
    if (r.ok) return 'This key works: the gateway serves ' + (body.data || []).map(m => m.id).join(', ') + '.';
    const why = (body.error && body.error.message) || r.statusText;
    return 'Refused (HTTP ' + r.status + '): ' + why;
  } catch (e) { return 'No answer from the gateway: ' + e; }
}"""


def where_html(where: str) -> str:
    """A setting's `where` as the page shows it: escaped, its `command` spans as code rather than raw backticks."""
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", html.escape(where))


def server_url(request: gr.Request | None) -> str:
    """This app's URL as the person's browser reached it."""
    headers = request.headers if request is not None else {}
    host = headers.get("host") or "127.0.0.1:7860"
    scheme = "https" if headers.get("x-forwarded-proto") == "https" else "http"
    return f"{scheme}://{host}"


def build_connect_tab(services: AppServices, shown: gr.Tab) -> None:
    link = services.link
    gr.HTML('<div class="m3-account-title">Connect a coding agent or a script</div>'
            '<div class="m3a-dim" id="m3-connect-intro">The gateway serves the engine\'s OpenAI and Anthropic APIs '
            "on this server's own address, with your API key (create one in the Account tab): your agents' tokens "
            "count in your daily quota like your chats. Replace YOUR_M3UI_KEY with your key.</div>")
    where = gr.HTML(elem_id="m3-connect-where")
    with gr.Row():
        key = gr.Textbox(label="Test a key", type="password", max_length=200, elem_id="m3-connect-key", scale=3)
        test = gr.Button("Test this key", elem_id="m3-connect-test", scale=1)
    result = gr.Textbox(label="Result", interactive=False, elem_id="m3-connect-result")
    blocks: list[tuple[gr.HTML, gr.Code]] = []
    for setting in client_settings("http://127.0.0.1:7860", DEFAULT_MODEL):
        slug = setting.client.lower().replace(" ", "-").replace(":", "")
        title = gr.HTML(f'<div class="m3-connect-client"><b>{setting.client}</b> — {where_html(setting.where)}</div>',
                        elem_id=f"m3-connect-title-{slug}")
        code = gr.Code(language=CODE_LANGUAGE[setting.language], interactive=False, show_label=False,
                       elem_id=f"m3-connect-{slug}", elem_classes=["m3-connect-code"])
        blocks.append((title, code))

    def filled(request: gr.Request) -> list[object]:
        model = link.status().model or DEFAULT_MODEL
        server = server_url(request)
        note = (f'<div class="m3-connect-where">Server <code>{server}</code> · OpenAI base URL '
                f"<code>{server}/v1</code> · model <code>{model}</code></div>")
        return [note, *(s.text for s in client_settings(server, model))]

    gr.on([shown.select], filled, None, [where, *(code for _, code in blocks)], api_visibility="private",
          show_progress="hidden")
    test.click(None, [key], [result], js=TEST_KEY_JS, api_visibility="private")
