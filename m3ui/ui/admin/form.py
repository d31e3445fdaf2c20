"""The settings form, generated from the settings table: one widget per field, grouped, each with its
help text and range, and a slot under it for the findings that concern it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import gradio as gr

from launch.command import Engine
from launch.findings import Finding
from launch.settings import GROUP_TITLES, Group, LaunchSettings
from m3ui.admin.form import ENGINE_KINDS, FORM_FIELDS, UNSET, FormField, form_values
from m3ui.ui.admin.markup import counts, field_message

OPEN_GROUPS: frozenset[Group] = frozenset({"model", "kt", "gpu", "memory"})


@dataclass
class SettingsForm:
    engine_kind: gr.Radio
    engine_python: gr.Textbox
    fields: list[gr.components.Component]  # FORM_FIELDS order
    messages: list[gr.HTML]  # the findings under each field, same order
    groups: dict[Group, gr.Accordion]
    model_summary: gr.HTML

    @property
    def inputs(self) -> list[Any]:
        """Everything the settings and the engine are read from, in `read` order."""
        return [self.engine_kind, self.engine_python, *self.fields]

    @staticmethod
    def values(settings: LaunchSettings, engine: Engine) -> list[Any]:
        """New values for `inputs`."""
        return [engine.kind, "" if engine.python == Engine().python else engine.python, *form_values(settings)]

    @property
    def finding_outputs(self) -> list[Any]:
        return [*self.messages, *self.groups.values()]

    def finding_updates(self, findings: Sequence[Finding]) -> list[Any]:
        by_field: dict[str | None, list[Finding]] = {}
        for f in findings:
            by_field.setdefault(f.field, []).append(f)
        messages = [field_message(by_field.get(f.name, ())) for f in FORM_FIELDS]
        groups = []
        for group in self.groups:
            found = [finding for field in FORM_FIELDS if field.group == group
                     for finding in by_field.get(field.name, ())]
            note = counts(found)
            groups.append(gr.Accordion(label=GROUP_TITLES[group] + (f"  ·  {note}" if note else "")))
        return messages + groups


def _widget(field: FormField) -> gr.components.Component:
    common: dict[str, Any] = dict(label=field.label, info=field.help, elem_id=f"m3-field-{field.name}",
                                  elem_classes=["m3a-field"])
    if field.widget == "checkbox":
        return gr.Checkbox(**common)
    if field.widget == "dropdown":
        choices = ([("— unset (engine default) —", UNSET)] if field.optional else []) + [(c, c) for c in field.choices]
        return gr.Dropdown(choices=choices, value=UNSET if field.optional else field.default, filterable=True,
                           **common)
    if field.widget in ("integer", "number"):
        # No precision or bounds here: the settings table's own rules report a bad value as a finding
        # (Gradio would silently round, or refuse the whole event).
        return gr.Number(value=None, step=1 if field.widget == "integer" else 0.01,
                         placeholder="unset (engine default)" if field.optional else None, **common)
    placeholder = {"list": "e.g. 0 1", "secret": "none"}.get(field.widget, "unset" if field.optional else "")
    return gr.Textbox(type="password" if field.widget == "secret" else "text", lines=1, max_lines=1,
                      placeholder=placeholder, **common)


def build_settings_form() -> SettingsForm:
    with gr.Row(equal_height=True):
        # min_width: side by side in the form's column on a desktop, one above the other on a phone (squeezed to
        # half of 390 px, each radio choice wrapped over three lines)
        engine_kind = gr.Radio(choices=list(ENGINE_KINDS), value="sim", label="Engine", scale=3, min_width=280,
                               elem_id="m3-engine-kind",
                               info="The simulated engine needs no GPU and follows sglang-kt's exact contract.")
        engine_python = gr.Textbox(label="Engine Python (sglang-kt only)", placeholder="python (on PATH)",
                                   info="The interpreter of the venv that has sglang-kt and kt-kernel.", scale=2,
                                   min_width=280, elem_id="m3-engine-python")
    widgets: dict[str, gr.components.Component] = {}
    messages: dict[str, gr.HTML] = {}
    groups: dict[Group, gr.Accordion] = {}
    model_summary = gr.HTML(render=False, elem_id="m3-model-summary")
    for group, title in GROUP_TITLES.items():
        members = [f for f in FORM_FIELDS if f.group == group]
        with gr.Accordion(title, open=group in OPEN_GROUPS, elem_id=f"m3-group-{group}",
                          elem_classes=["m3a-group"]) as accordion:
            groups[group] = accordion
            if group == "model":
                model_summary.render()
            for row in _rows(members):
                with gr.Row(equal_height=False):
                    for field in row:
                        with gr.Column(min_width=260, elem_classes=["m3a-cell"]):
                            widgets[field.name] = _widget(field)
                            messages[field.name] = gr.HTML(elem_classes=["m3a-field-msg"],
                                                           elem_id=f"m3-msg-{field.name}")
    fields = [widgets[f.name] for f in FORM_FIELDS]
    return SettingsForm(engine_kind, engine_python, fields, [messages[f.name] for f in FORM_FIELDS], groups,
                        model_summary)


def _rows(members: list[FormField]) -> list[list[FormField]]:
    """Two fields a row; checkboxes share rows with each other, the extra arguments take a row alone."""
    wide = [f for f in members if f.name == "extra_args"]
    boxes = [f for f in members if f.widget == "checkbox"]
    others = [f for f in members if f not in wide and f not in boxes]
    rows = [others[i:i + 2] for i in range(0, len(others), 2)]
    rows += [boxes[i:i + 2] for i in range(0, len(boxes), 2)]
    return rows + [[f] for f in wide]
