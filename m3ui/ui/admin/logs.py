"""The engine's live log tail with a filter (m3ui's own polling requests hidden unless asked for), and the whole
log file to download."""

from __future__ import annotations

from dataclasses import dataclass

import gradio as gr

LOG_LINES = 300


@dataclass
class LogPanel:
    contains: gr.Textbox
    problems_only: gr.Checkbox
    polling: gr.Checkbox
    tail: gr.Textbox
    download: gr.Button
    file: gr.File


def build_log_panel() -> LogPanel:
    with gr.Row(equal_height=False, elem_classes=["m3a-preset-row"]):
        contains = gr.Textbox(label="Filter", placeholder="only lines containing… (e.g. Load weight, TP0, error)",
                              scale=4, elem_id="m3-log-filter")
        problems_only = gr.Checkbox(label="Errors and warnings only", scale=1, elem_id="m3-log-problems")
        polling = gr.Checkbox(label="Show m3ui's polling requests", scale=1, elem_id="m3-log-polling",
                              info="health, models, loads, metrics: hidden here, kept in the file")
        download = gr.Button("Download the full log", scale=1, min_width=180, elem_id="m3-log-download")
    tail = gr.Textbox(label=f"Engine log (last {LOG_LINES} lines)", lines=22, max_lines=22, autoscroll=True,
                      interactive=False, elem_id="m3-log", elem_classes=["m3a-mono"])
    file = gr.File(label="Full log", visible=False, interactive=False, elem_id="m3-log-file")
    return LogPanel(contains, problems_only, polling, tail, download, file)
