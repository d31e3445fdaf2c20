"""The admin's Fleet tab: the router and every worker (where it runs, phase, health in the router, load, restarts),
refreshed live; a worker launched or attached while the fleet serves, or removed; the router's or a worker's log.
Logic in m3ui/admin/fleet.py; every handler goes through AdminGuard. Without a fleet the tab says how to run one
and wires nothing that could act."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gradio as gr

from launch.fleet.supervisor import FleetState
from m3ui.admin.console import Outcome
from m3ui.admin.fleet import ROUTER_CHOICE, FleetDesk, FleetView, RouterRow, WorkerRow
from m3ui.ui.admin.guard import AdminGuard
from m3ui.ui.admin.markup import outcome_html
from m3ui.ui.monitor.format import esc

CSS_PATH = Path(__file__).resolve().parents[3] / "assets" / "admin-fleet.css"
TICK_S = 2.0
# A log filled while its tab was hidden, or replaced by another's, opens at its top: show the tail.
LOG_TAIL_JS = "() => setTimeout(() => { const t = document.querySelector('#m3-fleet-log textarea'); " \
              "if (t) t.scrollTop = t.scrollHeight; }, 50)"
HOW_TO = """<div class="m3f-howto" id="m3-fleet-howto"><div class="m3a-panel-title">This app runs one engine</div>
<p class="m3a-dim">A fleet puts several engines (workers) behind sglang-router: the chat goes through the router,
and this tab shows each worker's phase, health, load and log, and adds or removes workers while it serves.
Describe the fleet in a JSON file and start the app with it:</p>
<pre class="m3a-pre">python app.py --fleet fleet.json</pre>
<pre class="m3a-pre">{"engine": "sim", "router": {"port": 30000},
 "base": {"preset": "single-gpu", "set": {"host": "127.0.0.1"}},
 "workers": [{"port": 30010}, {"port": 30011}]}</pre>
<p class="m3a-dim">docs/FLEET.md describes the file (real engines with their GPUs and NUMA nodes, workers on
other hosts, attached URLs) and <code>python -m launch fleet command</code>, which prints every command.</p></div>"""
SIMULATED_FLEET = "Every worker launched here is a simulated engine: scripted answers, no model, no GPU."
# Badge colour per fleet state (m3a-state-* classes of assets/admin.css and admin-fleet.css).
STATE_CLASS = {FleetState.READY: "ready", FleetState.STARTING: "starting", FleetState.DEGRADED: "degraded",
               FleetState.FAILED: "failed", FleetState.STOPPING: "stopping", FleetState.STOPPED: "stopping"}
WORKER_STATE_CLASS = {"ready": "ready", "starting": "starting", "failed": "failed", "attached": "attached"}


@dataclass
class FleetPanel:
    active: bool
    router: gr.HTML
    workers: gr.HTML
    outcome: gr.HTML
    port: gr.Textbox
    gpus: gr.Textbox
    changes: gr.Textbox
    launch: gr.Button
    url: gr.Textbox
    attach: gr.Button
    chosen: gr.Dropdown
    remove: gr.Button
    log: gr.Textbox
    timer: gr.Timer
    seen: gr.State  # per session: what the last refresh sent, so unchanged outputs are skipped


def build_fleet_panel(active: bool) -> FleetPanel:
    gr.HTML(f"<style>{CSS_PATH.read_text(encoding='utf-8')}</style>", elem_classes=["m3a-style"])
    if not active:
        gr.HTML(HOW_TO)
    with gr.Column(visible=active, elem_id="m3-fleet"):
        router = gr.HTML(elem_id="m3-fleet-router")
        workers = gr.HTML(elem_id="m3-fleet-workers")
        outcome = gr.HTML(elem_id="m3-fleet-outcome", elem_classes=["m3a-collapse-empty"])
        with gr.Row(equal_height=False):
            with gr.Column(min_width=300), gr.Group(elem_classes=["m3a-panel"]):
                gr.HTML('<div class="m3a-panel-title">Launch a worker here</div><div class="m3a-dim">The fleet\'s '
                        "engine settings on a port of its own; it joins the router once it is ready.</div>")
                port = gr.Textbox(label="Port (empty: a free one)", elem_id="m3-fleet-port", max_length=5)
                gpus = gr.Textbox(label="GPUs (real engines: its own, e.g. 2,3)", elem_id="m3-fleet-gpus",
                                  max_length=200)
                changes = gr.Textbox(label="Other settings to change (field=value, one a line)", lines=2,
                                     elem_id="m3-fleet-changes", max_length=2000)
                launch = gr.Button("Launch", variant="primary", elem_id="m3-fleet-launch")
            with gr.Column(min_width=300), gr.Group(elem_classes=["m3a-panel"]):
                gr.HTML('<div class="m3a-panel-title">Attach a running engine</div><div class="m3a-dim">Here or '
                        "on another host; it must answer /health first.</div>")
                url = gr.Textbox(label="Engine URL", placeholder="http://gpu-b:30000", elem_id="m3-fleet-url",
                                 max_length=300)
                attach = gr.Button("Attach", elem_id="m3-fleet-attach")
            with gr.Column(min_width=300), gr.Group(elem_classes=["m3a-panel"]):
                gr.HTML('<div class="m3a-panel-title">Log, or remove a worker</div><div class="m3a-dim">A worker '
                        "launched here is stopped; an attached one only leaves the router.</div>")
                chosen = gr.Dropdown([ROUTER_CHOICE], value=ROUTER_CHOICE, label="Router or worker",
                                     elem_id="m3-fleet-chosen")
                # off until a worker is picked: the picker opens on the router's log, which is not removable
                remove = gr.Button("Remove this worker", variant="stop", elem_id="m3-fleet-remove", interactive=False)
        log = gr.Textbox(label="Log (last lines)", lines=14, max_lines=14, interactive=False, autoscroll=True,
                         elem_id="m3-fleet-log", elem_classes=["m3a-mono"])
    return FleetPanel(active, router, workers, outcome, port, gpus, changes, launch, url, attach, chosen, remove,
                      log, gr.Timer(TICK_S, active=active), gr.State({}))


def render_router(router: RouterRow) -> str:
    health = ("" if router.healthy is None else
              f'<span class="m3a-tag {"m3a-ok" if router.healthy else "m3f-bad"}">/health '
              f'{"200" if router.healthy else "not answering"}</span>')
    pid = f'<span class="m3a-dim">pid {router.pid}</span>' if router.pid else ""
    sim = (f'<span class="m3-badge m3-badge-sim" title="{esc(SIMULATED_FLEET)}">SIMULATED</span>'
           if router.simulated else "")
    return (f'<div class="m3a-status-card m3f-router" data-fleet-state="{router.state.value}" '
            f'data-router-healthy="{str(router.healthy).lower()}"><div class="m3a-status-line">'
            f'<span class="m3a-state m3a-state-{STATE_CLASS[router.state]}">{router.state.value.upper()}</span>'
            f'<span class="m3a-kind">Router</span>{sim}<code>{esc(router.url)}</code>'
            f'<span class="m3a-tag">{esc(router.policy)}</span>{health}{pid}</div>'
            f'<div class="m3a-detail">{esc(router.detail)}</div></div>')


def _in_router(row: WorkerRow) -> tuple[str, str]:
    """(text, css class) of a worker's place in the router's /workers."""
    status = row.status
    if not status.in_router:
        return "not listed", "m3f-dim"
    return ("healthy", "m3f-good") if status.healthy else ("unhealthy", "m3f-bad")


def render_worker(row: WorkerRow) -> str:
    w = row.status
    place, place_class = _in_router(row)
    where = "launched here" if w.launched else "attached"
    own = row.load
    load = (f"{own.running_requests} · {own.queued_requests} · {own.used_tokens:,}" if own is not None
            else f'<span class="m3f-dim">{esc(row.load_note)}</span>')
    in_flight = str(w.load) if w.load >= 0 else "—"
    restarts = f"{w.restarts}" if w.launched else "—"
    state_class = WORKER_STATE_CLASS.get(w.state, "stopping")
    detail = f' <span class="m3f-detail">{esc(w.detail)}</span>' if w.detail != w.state else ""
    cells = (("#", str(row.number)), ("worker", f"<code>{esc(w.url)}</code>"), ("runs", where),
             ("phase", f'<span class="m3a-state m3a-state-{state_class}">{esc(w.state)}</span>{detail}'),
             ("in the router", f'<span class="{place_class}">{place}</span>'), ("in flight (router)", in_flight),
             ("running · waiting · KV tokens", load), ("restarts", restarts))
    body = "".join(f'<td data-label="{label}"><span>{value}</span></td>' for label, value in cells)
    return (f'<tr data-url="{esc(w.url)}" data-where="{"launched" if w.launched else "attached"}" '
            f'data-state="{esc(w.state)}" data-in-router="{str(w.in_router).lower()}" '
            f'data-healthy="{str(w.healthy).lower()}">{body}</tr>')


def render_workers(view: FleetView) -> str:
    head = "".join(f"<th>{label}</th>" for label in ("#", "worker", "runs", "phase", "in the router",
                                                      "in flight (router)", "running · waiting · KV tokens",
                                                      "restarts"))
    rows = "".join(render_worker(row) for row in view.workers)
    return f'<table class="m3f-workers"><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>'


def removable(chosen: str | None) -> gr.Button:
    """Remove acts on a worker: off while the router (or nothing) is picked."""
    return gr.Button(interactive=chosen not in (None, ROUTER_CHOICE))


class FleetEvents:
    def __init__(self, panel: FleetPanel, desk: FleetDesk, guard: AdminGuard) -> None:
        self.panel, self.desk, self.guard = panel, desk, guard

    @property
    def shown(self) -> list[Any]:
        p = self.panel
        return [p.router, p.workers, p.chosen, p.remove, p.log, p.seen]

    def refresh(self, seen: dict[str, Any] | None, chosen: str | None) -> list[Any]:
        """The router, the workers, the picker's choices and the chosen log; what did not change is skipped."""
        seen = seen or {}
        view = self.desk.view()
        choices = self.desk.choices()
        if chosen not in choices:
            chosen = ROUTER_CHOICE
        now = {"router": render_router(view.router) if view else "",
               "workers": render_workers(view) if view else "",
               "choices": choices, "chosen": chosen, "log": self.desk.log(chosen)}
        fresh = {k: now[k] != seen.get(k) for k in now}
        picked = fresh["choices"] or fresh["chosen"]
        picker = gr.Dropdown(choices=choices, value=chosen) if picked else gr.skip()
        return [now["router"] if fresh["router"] else gr.skip(), now["workers"] if fresh["workers"] else gr.skip(),
                picker, removable(chosen) if picked else gr.skip(), now["log"] if fresh["log"] else gr.skip(), now]

    def acted(self, outcome: Outcome, seen: dict[str, Any] | None, chosen: str | None) -> list[Any]:
        return [outcome_html(outcome), *self.refresh(seen, chosen)]

    def wire(self, tab: gr.Tab) -> None:
        p, on = self.panel, self.guard.on
        if not p.active:
            return
        on([tab.select, p.timer.tick], self.refresh, [p.seen, p.chosen], self.shown, "fleet_refresh",
           show_progress="hidden", queue=False)
        on(p.chosen.input, lambda chosen: (self.desk.log(chosen), removable(chosen)), [p.chosen], [p.log, p.remove],
           "fleet_log", show_progress="hidden")
        for shown in (tab.select, p.log.change):  # browser-only: no handler on the server
            shown(None, js=LOG_TAIL_JS)
        acted = [p.outcome, *self.shown]
        on(p.launch.click, lambda port, gpus, changes, seen, chosen: self.acted(
            self.desk.launch(port, gpus, changes), seen, chosen), [p.port, p.gpus, p.changes, p.seen, p.chosen],
           acted, "fleet_launch")
        on(p.attach.click, lambda url, seen, chosen: self.acted(self.desk.attach(url), seen, chosen),
           [p.url, p.seen, p.chosen], acted, "fleet_attach")
        on(p.remove.click, lambda chosen, seen: self.acted(self.desk.remove(chosen), seen, chosen),
           [p.chosen, p.seen], acted, "fleet_remove")
