"""The header every page shows: what engine answers (a SIMULATED badge when it is the sim), its state, and the
dark-mode toggle (assets/head/theme.js does the switching; the admin page shows the same toggle)."""

from __future__ import annotations

import html

import gradio as gr

from m3ui.engine_link import EngineStatus
from m3ui.services import AppServices

STATUS_REFRESH_S = 1.0
# Clicks are handled by theme.js on the whole document and the label follows the page's `dark` class in CSS, so
# the button works unchanged wherever it is drawn and however often its header is redrawn.
THEME_TOGGLE = ('<button type="button" class="m3-theme-toggle" title="Light or dark pages (remembered in this '
                'browser)"><span class="m3-when-light">☾ Dark</span><span class="m3-when-dark">☀ Light</span></button>')


def render_status(status: EngineStatus) -> str:
    badge = ('<span class="m3-badge m3-badge-sim" title="No model runs here: a simulated engine answers with '
             'scripted text, following sglang-kt\'s exact HTTP contract.">SIMULATED ENGINE</span>'
             if status.simulated else "")
    state = "ready" if status.ready else status.state.value
    return (f'<div class="m3-header" data-engine-state="{state}">'
            f'<span class="m3-title">m3ui · MiniMax-M3 on SGLang + KT-Kernel</span>{badge}'
            f'<span class="m3-status m3-status-{state}">{html.escape(status.label)}</span>{THEME_TOGGLE}</div>')


def build_header(services: AppServices) -> gr.HTML:
    header = gr.HTML(render_status(services.link.status()), elem_id="m3-header")
    timer = gr.Timer(STATUS_REFRESH_S)
    timer.tick(lambda: render_status(services.link.status()), None, header, show_progress="hidden",
               queue=False)
    return header
