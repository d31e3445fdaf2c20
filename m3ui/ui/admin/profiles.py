"""Profiles: named settings saved on disk; one may start with the app. The last good launch is shown too, and
the auto-restart policy (applied now, and saved with a profile)."""

from __future__ import annotations

from dataclasses import dataclass

import gradio as gr

from launch.profile import Profile, ProfileError, ProfileStore
from m3ui.ui.admin.markup import esc


@dataclass
class RestartControls:
    enabled: gr.Checkbox
    attempts: gr.Number
    window_min: gr.Number
    delay_s: gr.Number
    apply: gr.Button

    @property
    def inputs(self) -> list[gr.components.Component]:
        return [self.enabled, self.attempts, self.window_min, self.delay_s]


def build_restart_controls() -> RestartControls:
    with gr.Group(elem_classes=["m3a-panel"], elem_id="m3-restart-policy"):
        gr.HTML('<div class="m3a-panel-title">Auto-restart when the engine dies</div><div class="m3a-dim">For '
                "unattended deployments: a dead engine is started again with the last good launch, after a wait "
                "that doubles each time, until the attempts within the window are used up. Saved with a profile; "
                "a profile that starts with the app brings its own.</div>")
        enabled = gr.Checkbox(label="Restart a dead engine by itself", elem_id="m3-restart-enabled")
        with gr.Row():
            attempts = gr.Number(label="Attempts", precision=0, minimum=1, maximum=100, elem_id="m3-restart-attempts",
                                 min_width=90)
            window_min = gr.Number(label="within (minutes)", minimum=0, elem_id="m3-restart-window", min_width=90)
            delay_s = gr.Number(label="first wait (s)", minimum=0, elem_id="m3-restart-delay", min_width=90)
        apply = gr.Button("Apply now", size="sm", elem_classes=["m3a-action"], elem_id="m3-restart-apply")
    return RestartControls(enabled, attempts, window_min, delay_s, apply)


@dataclass
class ProfilePanel:
    table: gr.HTML
    name: gr.Textbox
    start_with_app: gr.Checkbox
    save: gr.Button
    chosen: gr.Dropdown
    load: gr.Button
    delete: gr.Button
    make_startup: gr.Button
    no_startup: gr.Button
    outcome: gr.HTML
    restart: RestartControls


def _row(profile: Profile) -> str:
    s = profile.settings
    star = '<span class="m3a-tag m3a-ok">starts with the app</span>' if profile.start_with_app else ""
    return (f"<tr><td><b>{esc(profile.name)}</b> {star}</td><td>{esc(profile.engine.kind)}</td>"
            f"<td><code>{esc(s.model_path or '—')}</code></td><td>TP{s.tp_size}</td>"
            f"<td>{esc(s.kt_num_gpu_experts if s.kt_num_gpu_experts is not None else '—')}</td>"
            f"<td>{esc(s.host)}:{s.port}</td></tr>")


def render_profiles(store: ProfileStore, last_good: Profile | None) -> str:
    rows = []
    for name in store.names():
        try:
            rows.append(_row(store.load(name)))
        except ProfileError as exc:
            rows.append(f'<tr><td><b>{esc(name)}</b></td><td colspan="5" class="m3a-error">unreadable: '
                        f'{esc(exc)}</td></tr>')
    head = ("<tr><th>name</th><th>engine</th><th>model</th><th>TP</th><th>GPU experts</th>"
            "<th>listens on</th></tr>")
    table = (f'<table class="m3a-table">{head}{"".join(rows)}</table>' if rows
             else '<div class="m3a-empty">No saved profiles yet: save the form below.</div>')
    good = (f'<div class="m3a-last-good"><div class="m3a-panel-title">Last good launch</div>'
            f'<table class="m3a-table">{head}{_row(last_good)}</table></div>' if last_good else "")
    return table + good


def build_profile_panel() -> ProfilePanel:
    with gr.Row(equal_height=False):
        with gr.Column(scale=3), gr.Group(elem_classes=["m3a-panel"]):
            gr.HTML('<div class="m3a-panel-title">Saved profiles</div>')
            table = gr.HTML(elem_id="m3-profiles")
            chosen = gr.Dropdown(label="Profile", choices=[], elem_id="m3-profile-choice")
            with gr.Row():
                load = gr.Button("Load into the form", size="sm", elem_classes=["m3a-action"],
                                 elem_id="m3-profile-load")
                make_startup = gr.Button("Start it with the app", size="sm", elem_classes=["m3a-action"],
                                         elem_id="m3-profile-startup")
                delete = gr.Button("Delete", size="sm", variant="stop", elem_id="m3-profile-delete")
        with gr.Column(scale=2):
            with gr.Group(elem_classes=["m3a-panel"]):
                gr.HTML('<div class="m3a-panel-title">Save the form as a profile</div>')
                name = gr.Textbox(label="Name", placeholder="e.g. h20-tp8-40experts", elem_id="m3-profile-name")
                start_with_app = gr.Checkbox(label="Start it with the app (instead of the simulated engine)",
                                             elem_id="m3-profile-start-with-app")
                save = gr.Button("Save profile", variant="primary", size="sm", elem_id="m3-profile-save")
                no_startup = gr.Button("Start the simulated engine with the app", size="sm",
                                       elem_classes=["m3a-action"], elem_id="m3-profile-no-startup")
            restart = build_restart_controls()
    outcome = gr.HTML(elem_id="m3-profile-outcome", elem_classes=["m3a-collapse-empty"])
    return ProfilePanel(table, name, start_with_app, save, chosen, load, delete, make_startup, no_startup, outcome,
                        restart)
