"""The Monitor tab on a fleet (m3ui/monitor/fleet.py): under the headline of the fleet's totals a row per worker
(GPU expert hit rate, decode tok/s, requests, KV cache), and each worker's expert heatmap."""

from __future__ import annotations

from typing import Any

import gradio as gr

from m3ui.monitor.fleet import FleetView, WorkerView
from m3ui.ui.monitor.experts_html import experts_panel
from m3ui.ui.monitor.format import count, esc, pct, per_second

_HEADERS = ("Worker", "State", "GPU expert hit rate", "Decode", "Running / queued", "KV cache")


def _state(worker: WorkerView) -> str:
    answer = {"ok": "answering", "slow": "slow", "unreachable": "not answering", "error": "error"}
    state = worker.state if worker.state not in ("ready", "healthy") else answer.get(worker.engine.state, "")
    return state if worker.in_router else f"{state}, out of the router"


def _cells(name: str, state: str, worker: WorkerView | None, view: FleetView) -> list[str]:
    engine = worker.engine if worker is not None else view.total
    experts = worker.experts if worker is not None else view.experts
    load = engine.load if engine is not None else None
    hit = experts.hit_rate.rate if experts is not None and experts.hit_rate is not None else None
    if load is None:
        return [name, state, pct(hit, 1), "–", "–", "–"]
    return [name, state, pct(hit, 1), per_second(load.gen_throughput, "tok"),
            f"{load.running_requests} / {load.queued_requests}",
            f"{pct(load.token_usage)} of {count(load.max_total_tokens)}"]


def _row(cells: list[str], attrs: str = "") -> str:
    return f"<tr{attrs}>" + "".join(f"<td>{esc(c)}</td>" for c in cells) + "</tr>"


def workers_table(view: FleetView) -> str:
    """A row per worker and the fleet's total; empty when the app is not on a fleet."""
    if not view.active:
        return ""
    rows = "".join(_row(_cells(f"{i} · {w.url}", _state(w), w, view), f' data-worker="{esc(w.url)}"')
                   for i, w in enumerate(view.workers, 1))
    rows += _row(_cells("Fleet total", f"{view.answering} of {len(view.workers)} answering", None, view),
                 ' class="m3-fleet-total"')
    head = "".join(f"<th>{esc(h)}</th>" for h in _HEADERS)
    return (f'<div class="m3-fleet" data-workers="{len(view.workers)}" data-answering="{view.answering}">'
            f'<div class="m3-fleet-head">A fleet behind the router at {esc(view.router_url)}: the figures above are '
            f'its workers\' totals (the fleet\'s GPU hit rate is every GPU hit over every routed activation).</div>'
            f'<div class="m3-scroll"><table class="m3-table"><thead><tr>{head}</tr></thead><tbody>{rows}</tbody>'
            "</table></div></div>")


def worker_heatmaps(view: FleetView) -> str:
    """Each worker's expert panel (its heatmap, or why it has none) under the worker's name; one short note when
    no worker records (a fleet without the recorder), not the same explanation once per worker."""
    states = {w.experts.status for w in view.workers}
    if view.workers and len(states) == 1 and "recording" not in states:
        return f'<div class="m3-fleet-heatmaps-none">{experts_panel(view.workers[0].experts, "The workers run")}</div>'
    sections = "".join(f'<section class="m3-fleet-worker" data-worker="{esc(w.url)}"><h4>Worker {i} · {esc(w.url)}'
                       f"</h4>{experts_panel(w.experts)}</section>" for i, w in enumerate(view.workers, 1))
    return f'<div class="m3-fleet-heatmaps">{sections}</div>'


def fleet_expert_updates(view: FleetView) -> tuple[Any, ...]:
    """The expert section's four outputs on a fleet: the workers' heatmaps; no rankings or placement advice (those
    read one engine's placement)."""
    return worker_heatmaps(view), gr.Row(visible=False), "", ""
