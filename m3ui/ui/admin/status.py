"""The cockpit's top strip: engine state, start-up phases with progress, elapsed time, where automatic restarts
stand; Start / Stop / Restart, each enabled only when it can act, and a line that says what they act on."""

from __future__ import annotations

import time
from dataclasses import dataclass

import gradio as gr

from launch.phases import PHASE_ORDER, Phase
from launch.supervisor import EngineState, SupervisorSnapshot
from m3ui.engine_link import EngineStatus
from m3ui.ui.admin.markup import duration, esc


@dataclass
class StatusStrip:
    status: gr.HTML
    start: gr.Button
    start_anyway: gr.Button
    stop: gr.Button
    restart: gr.Button
    outcome: gr.HTML
    acts_on: gr.HTML

    @property
    def controls(self) -> list[gr.components.Component]:
        """What `control_updates` fills, in its order."""
        return [self.start, self.stop, self.restart, self.acts_on]


@dataclass(frozen=True)
class Controls:
    """Which of Start / Stop / Restart can act now, and what they act on (in words)."""

    start: bool
    stop: bool
    restart: bool
    acts_on: str


def controls_for(snap: SupervisorSnapshot, link: EngineStatus, fleet_router: str | None) -> Controls:
    """Start only when nothing runs; Stop while something runs or an automatic restart is due; Restart while an
    engine runs or has failed. On a fleet none of them: its workers are launched and removed in the Fleet tab."""
    if fleet_router is not None:
        return Controls(False, False, False, f"This app runs a fleet behind the router at {fleet_router}: Start, "
                                             "Stop and Restart act on one engine, so they are off here. Launch, "
                                             "attach and remove workers in the Fleet tab.")
    state = snap.state
    pending = snap.auto_restart is not None and snap.auto_restart.due_at is not None
    running = state in (EngineState.STARTING, EngineState.READY)
    where = f" at {snap.url}" if snap.url and running else ""
    acts_on = (f"They act on the {link.kind[0].lower()}{link.kind[1:]}{where}; Start and Restart launch the "
               "settings below." if running or state is EngineState.FAILED
               else "No engine runs: Start launches the settings below.")
    return Controls(start=state in (EngineState.STOPPED, EngineState.FAILED), stop=running or pending,
                    restart=running or state is EngineState.FAILED, acts_on=acts_on)


def control_updates(controls: Controls) -> list[object]:
    return [gr.Button(interactive=controls.start), gr.Button(interactive=controls.stop),
            gr.Button(interactive=controls.restart), f'<div class="m3a-acts-on">{esc(controls.acts_on)}</div>']


def _stepper(snap: SupervisorSnapshot) -> str:
    if snap.mode != "managed" or snap.phase is None or snap.state in (EngineState.STOPPED, EngineState.STOPPING):
        return ""
    current = PHASE_ORDER.index(snap.phase)
    failed = snap.state is EngineState.FAILED
    steps = []
    for i, phase in enumerate(PHASE_ORDER):
        if i < current or snap.phase is Phase.READY:
            cls = "done"
        elif i == current:
            cls = "failed" if failed else ("active" if snap.state is EngineState.STARTING else "done")
        else:
            cls = "todo"
        steps.append(f'<li class="m3a-step m3a-step-{cls}" data-phase="{esc(phase.value)}">{esc(phase.value)}</li>')
    return f'<ol class="m3a-steps">{"".join(steps)}</ol>'


def render_status(snap: SupervisorSnapshot, link: EngineStatus) -> str:
    state = snap.state.value
    model = f"{link.model} at " if link.model else "at "
    where = f'<span class="m3a-dim">{esc(model)}{esc(snap.url)}</span>' if snap.url else ""
    sim = '<span class="m3-badge m3-badge-sim">SIMULATED</span>' if link.simulated else ""
    elapsed = f'<span class="m3a-elapsed" title="since start">{duration(snap.elapsed)}</span>' if snap.url else ""
    pct = 100.0 if snap.state is EngineState.READY else snap.progress * 100
    bar = ""
    if snap.state in (EngineState.STARTING, EngineState.FAILED) or (snap.state is EngineState.READY
                                                                     and snap.mode == "managed"):
        bar = (f'<div class="m3a-progress m3a-progress-{state}" role="progressbar" aria-valuenow="{pct:.0f}" '
               f'aria-valuemin="0" aria-valuemax="100"><div style="width:{pct:.1f}%"></div></div>')
    detail = f'<div class="m3a-detail">{esc(snap.phase_detail)}</div>' if snap.state is not EngineState.READY else ""
    auto = snap.auto_restart
    if auto is not None:
        detail += (f'<div class="m3a-auto-restart" data-attempt="{auto.attempt}" data-max-attempts='
                   f'"{auto.max_attempts}" data-gave-up="{str(auto.gave_up).lower()}">'
                   f'{esc(auto.describe(time.time()))}</div>')
    phase = esc(snap.phase.value if snap.phase else "")
    return (f'<div class="m3a-status-card" data-engine-state="{state}" data-phase="{phase}">'
            f'<div class="m3a-status-line"><span class="m3a-state m3a-state-{state}">{esc(state.upper())}</span>'
            f'<span class="m3a-kind">{esc(link.kind)}</span>{sim}{where}<span class="m3a-spacer"></span>{elapsed}</div>'
            f'{_stepper(snap)}{bar}{detail}</div>')


def build_status_strip() -> StatusStrip:
    with gr.Row(elem_classes=["m3a-cockpit-bar"], equal_height=True):
        with gr.Column(scale=5, min_width=420):
            status = gr.HTML(elem_id="m3-admin-status")
        with gr.Column(scale=2, min_width=280, elem_classes=["m3a-controls"]):
            with gr.Row():
                start = gr.Button("Start", variant="primary", elem_id="m3-engine-start", min_width=80)
                stop = gr.Button("Stop", variant="stop", elem_id="m3-engine-stop", min_width=80)
                restart = gr.Button("Restart", elem_id="m3-engine-restart", min_width=80)
            start_anyway = gr.Button("Start anyway (ignore the memory estimate)", visible=False, size="sm",
                                     elem_id="m3-engine-start-anyway")
            acts_on = gr.HTML(elem_id="m3-engine-acts-on")
    outcome = gr.HTML(elem_id="m3-outcome", elem_classes=["m3a-collapse-empty"])
    return StatusStrip(status, start, start_anyway, stop, restart, outcome, acts_on)
