"""The header every page shows: what engine answers (a SIMULATED badge when it is the sim), its state, and the
dark-mode toggle (assets/head/theme.js does the switching; the admin page shows the same toggle).

On the simulated engine the badge is a button that unfolds what "simulated" means (a phone has no hover), and a
banner says so until the person closes it (assets/head/simulated.js remembers that per browser); both link to
docs/REAL_ENGINE.md, served as the app's /real-engine page."""

from __future__ import annotations

import html

import gradio as gr

from m3ui.engine_link import EngineStatus
from m3ui.services import AppServices
from m3ui.ui.real_engine_page import PATH as REAL_ENGINE_PATH

STATUS_REFRESH_S = 1.0
# Clicks are handled by theme.js on the whole document and the label follows the page's `dark` class in CSS, so
# the button works unchanged wherever it is drawn and however often its header is redrawn.
THEME_TOGGLE = ('<button type="button" class="m3-theme-toggle" title="Light or dark pages (remembered in this '
                'browser)"><span class="m3-when-light">☾ Dark</span><span class="m3-when-dark">☀ Light</span></button>')


SIMULATED_MEANS = ("No model runs here: a simulated engine answers with scripted text, following sglang-kt's exact "
                   "HTTP contract. Its GPU, its speed and its failures (\"CUDA out of memory\" too) are simulated.")
SIM_BADGE = ('<button type="button" class="m3-badge m3-badge-sim" aria-controls="m3-sim-about" '
             f'title="{html.escape(SIMULATED_MEANS)}">SIMULATED ENGINE</button>')
SIM_ABOUT = (f'<div class="m3-sim-about" id="m3-sim-about" role="note">{html.escape(SIMULATED_MEANS)} '
             f'<a href="{REAL_ENGINE_PATH}" target="_blank" rel="noopener">Run the real one →</a></div>')
SIM_BANNER = ('<div class="m3-sim-banner" role="status"><span>Scripted answers, no model here. '
              f'<a href="{REAL_ENGINE_PATH}" target="_blank" rel="noopener">Run the real one →</a></span>'
              '<button type="button" class="m3-sim-banner-close" aria-label="Close this note">×</button></div>')


def render_status(status: EngineStatus) -> str:
    badge, sim_notes = (SIM_BADGE, SIM_ABOUT) if status.simulated else ("", "")
    state = "ready" if status.ready else status.state.value
    return (f'<div class="m3-header" data-engine-state="{state}">'
            f'<span class="m3-title">m3ui · MiniMax-M3 on SGLang + KT-Kernel</span>{badge}'
            f'<span class="m3-status m3-status-{state}">{html.escape(status.label)}</span>{THEME_TOGGLE}'
            f'{sim_notes}</div>')


def render_banner(status: EngineStatus) -> str:
    """Below the header, not in it: on a phone the header stays on screen, the banner scrolls away."""
    return SIM_BANNER if status.simulated else ""


def build_header(services: AppServices) -> gr.HTML:
    status = services.link.status()
    header = gr.HTML(render_status(status), elem_id="m3-header")
    banner = gr.HTML(render_banner(status), elem_id="m3-sim-banner", elem_classes=["m3-sim-banner-box"])

    def shown() -> tuple[str, str]:
        now = services.link.status()
        return render_status(now), render_banner(now)

    timer = gr.Timer(STATUS_REFRESH_S)
    timer.tick(shown, None, [header, banner], show_progress="hidden", queue=False)
    return header
