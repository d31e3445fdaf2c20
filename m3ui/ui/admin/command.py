"""Checks and command: the live findings with one-click fixes, the exact command (copyable; the same text
`python -m launch command` prints), and the preflight on demand."""

from __future__ import annotations

from dataclasses import dataclass

import gradio as gr

from m3ui.admin.review import Review
from m3ui.ui.admin.markup import counts, esc, findings_list


@dataclass
class CommandPanel:
    checks: gr.HTML
    apply_fixes: gr.Button
    command: gr.Code
    preflight: gr.Button
    preflight_result: gr.HTML


def render_checks(review: Review) -> str:
    summary = counts(review.findings)
    if review.blocking:
        head = f'<div class="m3a-check-head m3a-error">Not ready to start: {esc(summary)}</div>'
    elif summary:
        head = f'<div class="m3a-check-head m3a-warning">Ready to start, with {esc(summary)}</div>'
    else:
        head = '<div class="m3a-check-head m3a-ok">Ready to start: every check passes</div>'
    return head + findings_list(review.findings)


def command_text(review: Review) -> str:
    return review.command_text or "# no command: the extra arguments cannot be split (check the quotes)"


def build_command_panel() -> CommandPanel:
    with gr.Group(elem_classes=["m3a-panel"]):
        gr.HTML('<div class="m3a-panel-title">Checks</div>')
        checks = gr.HTML(elem_id="m3-checks")
        apply_fixes = gr.Button("Apply the suggested fixes", size="sm", elem_classes=["m3a-action"],
                                elem_id="m3-apply-fixes")
    with gr.Group(elem_classes=["m3a-panel"]):
        command = gr.Code(language="shell", label="Command (the exact argv that runs)", interactive=False,
                          buttons=["copy"], elem_id="m3-command", max_lines=40, wrap_lines=True)
        with gr.Row():
            preflight = gr.Button("Run preflight", size="sm", elem_classes=["m3a-action"], elem_id="m3-preflight",
                                  min_width=120)
        preflight_result = gr.HTML(elem_id="m3-preflight-result", elem_classes=["m3a-collapse-empty"])
    return CommandPanel(checks, apply_fixes, command, preflight, preflight_result)
