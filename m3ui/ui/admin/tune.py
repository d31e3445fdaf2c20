"""The admin's Tune tab: the roofline of the running launch on this host, and the tuner's trials as they finish.

Self-contained: its own timer and guarded handlers; the logic is m3ui/admin/tune.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gradio as gr

from launch.advice import Figure
from launch.sizing import GB
from launch.tune_search import TUNABLE
from m3ui.admin.console import Outcome
from m3ui.admin.tune import TuneCard, TuneDesk
from m3ui.ui.admin.guard import AdminGuard
from m3ui.ui.admin.markup import figures_table, outcome_html
from m3ui.ui.monitor.format import esc

TICK_S = 1.0
DEFAULT_BUDGET_MIN = 30


@dataclass
class TunePanel:
    roofline: gr.HTML
    budget: gr.Number
    knobs: gr.CheckboxGroup
    start: gr.Button
    cancel: gr.Button
    outcome: gr.HTML
    progress: gr.HTML
    timer: gr.Timer


def build_tune_panel() -> TunePanel:
    gr.HTML('<div class="m3a-dim">Is this speed normal for this host? The roofline is what the memory bandwidth '
            "and the launch settings allow (docs/TUNING.md). Tune relaunches the engine over a short search of the "
            "KT knobs, measures each trial, leaves the best running and saves it as a new profile; cancel rolls "
            "back to the best measured so far.</div>")
    roofline = gr.HTML(elem_id="m3-tune-roofline")
    with gr.Row(equal_height=False, elem_classes=["m3a-tune-controls"]):
        budget = gr.Number(label="Budget, minutes", value=DEFAULT_BUDGET_MIN, minimum=0.1, maximum=24 * 60,
                           elem_id="m3-tune-budget", min_width=160)
        knobs = gr.CheckboxGroup(label="Knobs", choices=list(TUNABLE), value=list(TUNABLE), elem_id="m3-tune-knobs",
                                 min_width=320)
    with gr.Row():
        start = gr.Button("Start tuning", variant="primary", elem_id="m3-tune-start")
        cancel = gr.Button("Cancel and roll back", variant="stop", elem_id="m3-tune-cancel")
    outcome = gr.HTML(elem_id="m3-tune-outcome", elem_classes=["m3a-collapse-empty"])
    progress = gr.HTML(elem_id="m3-tune-progress")
    return TunePanel(roofline, budget, knobs, start, cancel, outcome, progress, gr.Timer(TICK_S))


def _tok(value: Any) -> str:
    return "—" if value is None else f"{float(value):.1f}"


def roofline_html(desk: TuneDesk) -> str:
    found = desk.roofline()
    if isinstance(found, str):
        return f'<div class="m3a-empty">{esc(found)}</div>'
    result, settings = found
    r = result.rates
    rows = [
        Figure("decode ceiling, 1 / 4 / 16 requests", " / ".join(_tok(v) for v in result.decode_tok_s.values())
               + " tok/s"),
        Figure("prefill ceiling, 1K / 8K / 32K prompt", " / ".join(_tok(v) for v in result.prefill_tok_s.values())
               + " tok/s"),
        Figure("CPU bytes per token", f"{result.cpu_bytes_per_token / GB:.2f} GB at {r.cpu_effective_gbs:.0f} GB/s "
               f"({r.cpu_share:.0%} of {r.cpu_read_gbs:.0f})"),
        Figure("GPU bytes per token", f"{result.gpu_bytes_per_token / GB:.2f} GB at {r.gpu_read_gbs:.0f} GB/s"),
        Figure("GPU experts per layer", f"{result.gpu_experts_per_layer:.0f} ({result.gpu_hit_share:.0%} of "
               "activations)"),
        Figure("--kt-cpuinfer / thread pools", f"{settings.kt_cpuinfer} / {settings.kt_threadpool_count}"),
    ]
    return '<div class="m3a-panel-title">Roofline of the running launch</div>' + figures_table(rows)


def progress_html(card: TuneCard) -> str:
    state = f'<div class="m3a-tune-state" data-state="{esc(card.state)}">{esc(card.detail)}</div>'
    result = card.result
    table = ""
    if result is not None:
        start = result["start"]["settings"]
        head = ("<tr><th>trial</th><th>changed from the start</th><th>decode tok/s</th><th>prefill tok/s</th>"
                "<th>result</th></tr>")
        rows = [_row("start", _knobs(start), result["start"], "baseline")]
        rows += [_row(str(i), _knobs({k: v for k, v in t["settings"].items() if start.get(k) != v}), t,
                      "ok" if t["ok"] else t["reason"]) for i, t in enumerate(result["trials"], 1)]
        table = (f'<div class="m3a-scroll-x"><table class="m3a-table" id="m3-tune-trials">{head}{"".join(rows)}'
                 "</table></div>")
    log = "".join(f"<div>{esc(line)}</div>" for line in card.lines[-40:])
    log_html = f'<details class="m3a-breakdown" open><summary>progress</summary>{log}</details>' if log else ""
    return state + table + log_html


def _knobs(settings: dict[str, Any]) -> str:
    """One knob a line (HTML)."""
    return "<br>".join(esc(f"{k}={v}") for k, v in settings.items()) or "—"


def _row(label: str, knobs: str, figures: dict[str, Any], verdict: str) -> str:
    return (f"<tr><td>{esc(label)}</td><td><code>{knobs}</code></td><td>{_tok(figures.get('decode_tok_s'))}</td>"
            f"<td>{_tok(figures.get('prefill_tok_s'))}</td><td>{esc(verdict)}</td></tr>")


class TuneEvents:
    def __init__(self, panel: TunePanel, desk: TuneDesk, guard: AdminGuard) -> None:
        self.panel, self.desk, self.guard = panel, desk, guard

    def tick(self) -> tuple[str, str]:
        return roofline_html(self.desk), progress_html(self.desk.card())

    def start(self, budget: float | None, knobs: list[str] | None) -> tuple[str, str]:
        started, message = self.desk.start(budget, knobs)
        return outcome_html(Outcome("info" if started else "error", message)), progress_html(self.desk.card())

    def cancel(self) -> str:
        return outcome_html(Outcome("info", self.desk.cancel()))

    def wire(self, tab: gr.Tab) -> None:
        p = self.panel
        self.guard.on([p.timer.tick, tab.select], self.tick, None, [p.roofline, p.progress], "tune_tick",
                      show_progress="hidden", queue=False)
        self.guard.on(p.start.click, self.start, [p.budget, p.knobs], [p.outcome, p.progress], "tune_start")
        self.guard.on(p.cancel.click, self.cancel, None, p.outcome, "tune_cancel")
