"""Attach to an engine someone else runs, by URL (+ API key), instead of launching one."""

from __future__ import annotations

from dataclasses import dataclass

import gradio as gr


@dataclass
class AttachPanel:
    url: gr.Textbox
    api_key: gr.Textbox
    attach: gr.Button
    outcome: gr.HTML


def build_attach_panel() -> AttachPanel:
    gr.HTML('<div class="m3a-dim">Chat, tools and monitoring then talk to that engine. Stop detaches. Expert '
            'panels need the engine\'s recorder dumps on this machine, so they stay empty for a remote engine.</div>')
    with gr.Row(equal_height=True):
        url = gr.Textbox(label="Engine base URL", placeholder="http://gpu-box:30000", scale=3, elem_id="m3-attach-url")
        api_key = gr.Textbox(label="API key (if the engine has --api-key)", type="password", scale=2,
                             elem_id="m3-attach-key")
        attach = gr.Button("Attach", variant="primary", scale=1, elem_id="m3-attach")
    outcome = gr.HTML(elem_id="m3-attach-outcome", elem_classes=["m3a-collapse-empty"])
    return AttachPanel(url, api_key, attach, outcome)
