"""The admin app's layout: a status strip with Start / Stop / Restart, the failure diagnosis, and one tab per
section (launch settings with checks, command and sizing; engine log; hardware and model; profiles; model
weights; attach; fleet; placement; tune; users). Components live on `AdminView`; m3ui/ui/admin/events.py wires them."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import gradio as gr

from m3ui.ui.admin.api_keys import ApiKeysPanel, build_api_keys_panel
from m3ui.ui.admin.attach import AttachPanel, build_attach_panel
from m3ui.ui.admin.command import CommandPanel, build_command_panel
from m3ui.ui.admin.diagnosis import DiagnosisPanel, build_diagnosis_panel
from m3ui.ui.admin.fleet import FleetPanel, build_fleet_panel
from m3ui.ui.admin.form import SettingsForm, build_settings_form
from m3ui.ui.admin.logs import LogPanel, build_log_panel
from m3ui.ui.admin.placement import PlacementPanel, build_placement_panel
from m3ui.ui.admin.profiles import ProfilePanel, build_profile_panel
from m3ui.ui.admin.sizing import SizingPanel, build_sizing_panel
from m3ui.ui.admin.status import StatusStrip, build_status_strip
from m3ui.ui.admin.summary import SummaryPanel, build_summary_panel
from m3ui.ui.admin.tune import TunePanel, build_tune_panel
from m3ui.ui.admin.users import UsersPanel, build_users_panel
from m3ui.ui.admin.weights import WeightsPanel, build_weights_panel
from m3ui.ui.header_view import THEME_TOGGLE

CSS_PATH = Path(__file__).resolve().parents[3] / "assets" / "admin.css"
TICK_S = 1.0


@dataclass
class AdminView:
    strip: StatusStrip
    diagnosis: DiagnosisPanel
    preset: gr.Dropdown
    load_preset: gr.Button
    form: SettingsForm
    command: CommandPanel
    sizing: SizingPanel
    logs: LogPanel
    log_tab: gr.Tab
    summary: SummaryPanel
    hardware_tab: gr.Tab
    profiles: ProfilePanel
    weights: WeightsPanel
    attach: AttachPanel
    timer: gr.Timer
    seen: gr.State  # per session: what the timer last sent, so unchanged outputs are skipped
    placement: PlacementPanel  # wired on its own (m3ui/ui/admin/placement.py)
    users: UsersPanel  # wired on its own (m3ui/ui/admin/users.py)
    users_tab: gr.Tab
    fleet: FleetPanel  # wired on its own (m3ui/ui/admin/fleet.py)
    fleet_tab: gr.Tab
    tune: TunePanel  # wired on its own (m3ui/ui/admin/tune.py)
    tune_tab: gr.Tab
    api_keys: ApiKeysPanel | None = None  # in the Users tab, wired on its own (m3ui/ui/admin/api_keys.py)


def build_layout(fleet: bool = False) -> AdminView:
    """`fleet`: the app runs a fleet (the Fleet tab shows it; else it says how to run one)."""
    gr.HTML(f"<style>{CSS_PATH.read_text(encoding='utf-8')}</style>", elem_classes=["m3a-style"])
    gr.HTML('<div class="m3a-admin-title"><span class="m3a-title">m3ui admin</span><span class="m3a-dim">MiniMax-M3 '
            'on SGLang + KT-Kernel · engine cockpit</span><a class="m3a-link" href="../">open chat →</a>'
            f'{THEME_TOGGLE}</div>')
    strip = build_status_strip()
    diagnosis = build_diagnosis_panel()
    with gr.Tabs(elem_id="m3-admin-tabs"):
        with gr.Tab("Launch", id="launch"), gr.Row(equal_height=False):
            with gr.Column(scale=3, min_width=520):
                with gr.Row(equal_height=False, elem_classes=["m3a-preset-row"]):
                    preset = gr.Dropdown(label="Start from a preset or a saved profile", choices=[], scale=4,
                                         elem_id="m3-preset")
                    load_preset = gr.Button("Load into the form", scale=1, min_width=200, elem_id="m3-load-preset")
                form = build_settings_form()
            with gr.Column(scale=2, min_width=380, elem_classes=["m3a-side"]):
                command = build_command_panel()
                sizing = build_sizing_panel()
        with gr.Tab("Engine log", id="log") as log_tab:
            logs = build_log_panel()
        with gr.Tab("Hardware & model", id="hardware") as hardware_tab:
            summary = build_summary_panel()
        with gr.Tab("Profiles", id="profiles"):
            profiles = build_profile_panel()
        with gr.Tab("Model weights", id="weights"):
            weights = build_weights_panel()
        with gr.Tab("Attach", id="attach"):
            attach = build_attach_panel()
        with gr.Tab("Fleet", id="fleet") as fleet_tab:
            fleet_panel = build_fleet_panel(fleet)
        with gr.Tab("Placement", id="placement"):
            placement = build_placement_panel()
        with gr.Tab("Tune", id="tune") as tune_tab:
            tune = build_tune_panel()
        with gr.Tab("Users", id="users") as users_tab:
            users = build_users_panel()
            api_keys = build_api_keys_panel()
    return AdminView(strip, diagnosis, preset, load_preset, form, command, sizing, logs, log_tab, summary, hardware_tab,
                     profiles, weights, attach, gr.Timer(TICK_S), gr.State({}), placement,
                     users, users_tab, fleet_panel, fleet_tab, tune, tune_tab, api_keys)
