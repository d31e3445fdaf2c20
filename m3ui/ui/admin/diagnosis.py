"""When the engine dies: the classified cause, the evidence lines, one-click "apply and relaunch", and
a roll back to the last launch that reached ready."""

from __future__ import annotations

from dataclasses import dataclass

import gradio as gr

from launch.diagnosis import Diagnosis
from launch.profile import Profile
from m3ui.ui.admin.markup import esc, field_label


@dataclass
class DiagnosisPanel:
    group: gr.Group
    report: gr.HTML
    changes: gr.Radio
    apply: gr.Button
    roll_back: gr.Button

    @property
    def outputs(self) -> list[gr.blocks.Block]:
        return [self.group, self.report, self.changes, self.apply]

    @staticmethod
    def updates(diagnosis: Diagnosis | None, last_good: Profile | None, simulated: bool = False) -> list[object]:
        """Hidden without a failure; else the report, its suggested changes (the first picked) and an Apply
        button only when there is something to apply."""
        if diagnosis is None:
            return [gr.Group(visible=False), "", gr.Radio(choices=[], value=None), gr.Button(visible=False)]
        choices = change_choices(diagnosis)
        return [gr.Group(visible=True), render_diagnosis(diagnosis, last_good, simulated),
                gr.Radio(choices=choices, value=choices[0][1] if choices else None, visible=bool(choices)),
                gr.Button(visible=bool(choices))]


def render_diagnosis(diagnosis: Diagnosis, last_good: Profile | None, simulated: bool = False) -> str:
    evidence = "".join(f"<div>{esc(line)}</div>" for line in diagnosis.evidence)
    code = f" (exit status {diagnosis.exit_code})" if diagnosis.exit_code is not None else ""
    fix = ("Pick a suggested change below: it is applied to the launch that failed, which starts again."
           if diagnosis.changes else "No setting change fixes this on its own; see the explanation.")
    note = diagnosis.simulated_note() if simulated else None
    sim = f'<div class="m3-note m3-note-warn m3a-diag-sim">{esc(note)}</div>' if note else ""
    good = (f"The last launch that reached ready is kept ({_describe(last_good)}): roll back to it."
            if last_good else "No launch has reached ready yet, so there is nothing to roll back to.")
    return (f'<div class="m3a-diagnosis" data-cause="{esc(diagnosis.cause.value)}">'
            f'<div class="m3a-diag-title">✖ {esc(diagnosis.title)}{esc(code)}</div>'
            f'<div class="m3a-diag-why">{esc(diagnosis.explanation)}</div>{sim}'
            f'<div class="m3a-evidence-label">Evidence from the engine log</div>'
            f'<div class="m3a-evidence">{evidence or "(no log lines)"}</div>'
            f'<div class="m3a-dim">{esc(fix)} {esc(good)}</div></div>')


def _describe(profile: Profile) -> str:
    s = profile.settings
    return f"{profile.engine.kind}, TP{s.tp_size}, {s.kt_num_gpu_experts} GPU experts/layer"


def change_choices(diagnosis: Diagnosis) -> list[tuple[str, str]]:
    return [(f"{field_label(name)} {value}", str(i)) for i, (name, value) in enumerate(diagnosis.changes)]


def build_diagnosis_panel() -> DiagnosisPanel:
    with gr.Group(visible=False, elem_id="m3-diagnosis-panel", elem_classes=["m3a-panel", "m3a-danger"]) as group:
        report = gr.HTML(elem_id="m3-diagnosis")
        with gr.Row(equal_height=True):
            changes = gr.Radio(label="Suggested change (any one fixes it)", choices=[], elem_id="m3-diag-changes",
                               scale=3)
            with gr.Column(scale=2, min_width=220):
                apply = gr.Button("Apply the change and relaunch", variant="primary", elem_id="m3-diag-apply")
                roll_back = gr.Button("Roll back to the last good launch", elem_id="m3-roll-back")
    return DiagnosisPanel(group, report, changes, apply, roll_back)
