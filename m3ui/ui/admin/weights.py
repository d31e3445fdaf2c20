"""Model weights: config.json first, then the whole repo to a chosen folder with progress (bytes, rate, ETA),
resume, a disk-space check and cancel."""

from __future__ import annotations

from dataclasses import dataclass

import gradio as gr

from launch.weights import DEFAULT_REPO_ID, DownloadPlan, DownloadProgress
from launch.weights.units import format_bytes
from m3ui.admin.weights import WeightsForm
from m3ui.ui.admin.markup import esc


@dataclass
class WeightsPanel:
    repo_id: gr.Textbox
    revision: gr.Textbox
    dest_dir: gr.Textbox
    endpoint: gr.Textbox
    token: gr.Textbox
    fetch_config: gr.Button
    plan: gr.Button
    download: gr.Button
    cancel: gr.Button
    verify: gr.Button
    outcome: gr.HTML
    progress: gr.HTML

    @property
    def inputs(self) -> list[gr.Textbox]:
        return [self.repo_id, self.dest_dir, self.revision, self.endpoint, self.token]


def read_weights_form(repo_id: str, dest_dir: str, revision: str, endpoint: str, token: str) -> WeightsForm:
    return WeightsForm(repo_id or "", dest_dir or "", revision or "", endpoint or "", token or "")


def render_plan_files(plan: DownloadPlan) -> str:
    rows = "".join(f"<tr><td><code>{esc(p.file.name)}</code></td><td>{format_bytes(p.file.size)}</td>"
                   f"<td>{esc(p.state)}</td></tr>" for p in plan.files[:200])
    more = f'<div class="m3a-dim">… and {len(plan.files) - 200} more files</div>' if len(plan.files) > 200 else ""
    return (f'<details class="m3a-breakdown"><summary>{len(plan.files)} files</summary><table class="m3a-table">'
            f"<tr><th>file</th><th>size</th><th>on disk</th></tr>{rows}</table>{more}</details>")


def render_progress(progress: DownloadProgress | None) -> str:
    if progress is None:
        return '<div class="m3a-empty">No download in this app run yet.</div>'
    pct = progress.fraction * 100
    current = (f'<div class="m3a-dim">now: {esc(", ".join(progress.current_files[:4]))}'
               f'{" …" if len(progress.current_files) > 4 else ""}</div>' if progress.current_files else "")
    return (f'<div class="m3a-download" data-state="{esc(progress.state)}">'
            f'<div class="m3a-status-line"><span class="m3a-state m3a-state-dl-{esc(progress.state)}">'
            f'{esc(progress.state.upper())}</span><span>{esc(progress.summary())}</span><span class="m3a-spacer">'
            f'</span><span class="m3a-dim">{progress.files_done}/{progress.files_total} files</span></div>'
            f'<div class="m3a-progress m3a-progress-dl-{esc(progress.state)}"><div style="width:{pct:.1f}%"></div>'
            f'</div><div class="m3a-detail">{esc(progress.message)}</div>{current}</div>')


def build_weights_panel() -> WeightsPanel:
    gr.HTML('<div class="m3a-dim">Fetch <code>config.json</code> alone first: the model summary and the sizing '
            'advice work from it before hundreds of GB move. Downloads resume where they stopped; the disk space is '
            'checked before anything is written.</div>')
    with gr.Row(equal_height=True):
        repo_id = gr.Textbox(label="Hub repo", value=DEFAULT_REPO_ID, scale=3, elem_id="m3-weights-repo")
        revision = gr.Textbox(label="Revision", value="main", scale=1, elem_id="m3-weights-revision")
    dest_dir = gr.Textbox(label="Download to folder", placeholder="/data/models/MiniMax-M3-MXFP8",
                          elem_id="m3-weights-dest", info="It becomes the model path (and the KT weight path).")
    with gr.Accordion("Hub endpoint and token", open=False), gr.Row():
        endpoint = gr.Textbox(label="Endpoint (a mirror)", placeholder="HF_ENDPOINT, else https://huggingface.co",
                              elem_id="m3-weights-endpoint")
        token = gr.Textbox(label="Token (gated or private repos)", type="password", placeholder="HF_TOKEN",
                           elem_id="m3-weights-token")
    with gr.Row():
        fetch_config = gr.Button("1. Fetch config.json only", elem_id="m3-weights-config")
        plan = gr.Button("2. Check size and disk space", elem_id="m3-weights-plan")
        download = gr.Button("3. Download / resume", variant="primary", elem_id="m3-weights-download")
        cancel = gr.Button("Cancel", variant="stop", elem_id="m3-weights-cancel")
        verify = gr.Button("Verify folder", elem_id="m3-weights-verify")
    outcome = gr.HTML(elem_id="m3-weights-outcome", elem_classes=["m3a-collapse-empty"])
    progress = gr.HTML(elem_id="m3-weights-progress")
    return WeightsPanel(repo_id, revision, dest_dir, endpoint, token, fetch_config, plan, download, cancel, verify,
                        outcome, progress)
