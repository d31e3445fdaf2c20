"""The admin's Placement tab: the Monitor's placement advice, "Relaunch with this placement", and the A/B card
of that trial (the same prompts replayed before and after, predicted beside measured).

Self-contained: its own timer (the card changes over minutes, not every second) and guarded handlers.
"""

from __future__ import annotations

from dataclasses import dataclass

import gradio as gr

from m3ui.admin.console import AdminConsole, Outcome
from m3ui.placement.advice import AdviceCache, PlacementAdvice, advise_snapshot
from m3ui.placement.trial import PlacementTrial
from m3ui.ui.admin.guard import AdminGuard
from m3ui.ui.admin.markup import outcome_html
from m3ui.ui.monitor.placement_html import placement_panel, trial_card

TICK_S = 2.0


@dataclass
class PlacementPanel:
    advice: gr.HTML
    relaunch: gr.Button
    outcome: gr.HTML
    card: gr.HTML
    timer: gr.Timer


def build_placement_panel() -> PlacementPanel:
    gr.HTML('<div class="m3a-dim">Planned on the Monitor\'s window of expert recorder dumps. Relaunch replays a '
            "built-in mix of prompts on the running engine, relaunches it with frequency placement from the "
            "recorded counts (saved under the data folder), replays the same prompts, and compares: about 7,000 "
            "tokens each way, minutes at a KT hybrid's decode speed.</div>")
    # never a wordless gap above the button until the first tick reads the Monitor
    advice = gr.HTML('<div class="m3a-dim">Reading the Monitor\'s expert recorder…</div>',
                     elem_id="m3-placement-advice")
    relaunch = gr.Button("Relaunch with this placement", variant="primary", elem_id="m3-placement-relaunch")
    outcome = gr.HTML(elem_id="m3-placement-outcome", elem_classes=["m3a-collapse-empty"])
    card = gr.HTML(elem_id="m3-placement-card")
    return PlacementPanel(advice, relaunch, outcome, card, gr.Timer(TICK_S))


class PlacementEvents:
    def __init__(self, panel: PlacementPanel, console: AdminConsole, guard: AdminGuard) -> None:
        self.panel, self.console, self.guard = panel, console, guard
        services = console.services
        self.services = services
        self.cache = AdviceCache()
        self.trial = PlacementTrial(services.link, services.monitor, self._relaunch, services.data_dir)

    def _relaunch(self, settings, engine) -> tuple[bool, str]:  # noqa: ANN001 - PlacementTrial.Relaunch
        outcome = self.console.restart(settings, engine)
        return outcome.ok, outcome.message

    def advice(self) -> PlacementAdvice | None:
        snapshot = self.services.monitor.sampler.latest()
        return self.cache.get(lambda: advise_snapshot(snapshot.experts, self.services.link.settings, snapshot.gpu,
                                                      self.services.link.status().simulated))

    def tick(self) -> tuple[str, str]:
        advice = self.advice()
        shown = placement_panel(advice) if advice is not None else (
            '<div class="m3a-dim">No placement advice: the engine\'s expert recorder is not recording.</div>')
        return shown, trial_card(self.trial.card())

    def start(self) -> tuple[str, str]:
        message = self.trial.start(self.advice())
        level = "info" if message.startswith("Placement trial started") else "error"
        return outcome_html(Outcome(level, message)), trial_card(self.trial.card())  # type: ignore[arg-type]  # "info" or "error"

    def wire(self) -> None:
        p = self.panel
        self.guard.on(p.timer.tick, self.tick, None, [p.advice, p.card], "placement_tick", show_progress="hidden",
                      queue=False)
        self.guard.on(p.relaunch.click, self.start, None, [p.outcome, p.card], "placement_relaunch")
