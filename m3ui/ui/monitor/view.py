"""The Monitor tab: a headline (GPU hit rate, tok/s, requests, GPU memory, CPU), then the expert, engine,
GPU and CPU panels, each with its history.

Sample once, serve many: the app's one sampler (services.monitor) samples in the background and every
browser session's timer only reads its cached snapshot. A session is sent only what changed: the
heatmap (~10 kB) when a new recorder dump arrived, the history charts every few seconds, and nothing at
all while the tab is hidden (its timer is off).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Any

import gradio as gr

from m3ui.monitor.sampler import MonitorHistory, MonitorSnapshot
from m3ui.placement.advice import AdviceCache, advise_snapshot
from m3ui.services import AppServices
from m3ui.ui.monitor import frames
from m3ui.ui.monitor.engine_html import engine_panel, headline
from m3ui.ui.monitor.experts_html import experts_panel, rankings_panel
from m3ui.ui.monitor.fleet_html import fleet_expert_updates, workers_table
from m3ui.ui.monitor.machine_html import cpu_panel, gpu_panel
from m3ui.ui.monitor.placement_html import placement_panel

REFRESH_S = 1.0
CHARTS_EVERY_S = 5.0
CHART_SPAN_S = 300.0  # the history charts show the last 5 minutes
# The first refreshes of a session bring the charts, the sampler's history: drawn at once, never an empty frame for
# the first seconds. Two: Gradio 6.31 drops a plot's value that lands while the tab it is in first mounts.
FIRST_PAINT = 2
TIME_AXIS, VALUE_AXIS = "%H:%M:%S", ",.1~f"  # d3 formats (Vega-Lite)
_PLACEMENT = AdviceCache()  # one placement plan per 30 s for the whole app (a plan takes about a second)


@dataclass(frozen=True)
class Seen:
    """What one browser session was sent last, so a tick re-sends only what changed."""

    experts_at: float = 0.0  # time of the expert snapshot sent
    charts_at: float = 0.0
    refreshes: int = 0  # how many were sent, up to FIRST_PAINT


@dataclass
class MonitorPanels:
    """The tab's components, in the order `refresh` fills them: live figures, expert panel, charts."""

    headline: gr.HTML
    engine: gr.HTML
    gpu: gr.HTML
    cpu: gr.HTML
    experts: gr.HTML
    expert_details: gr.Row
    rankings: gr.HTML
    placement: gr.HTML
    hit_history: gr.ScatterPlot
    throughput: gr.LinePlot
    requests: gr.LinePlot
    gpu_charts: gr.Row
    gpu_load: gr.LinePlot
    gpu_memory: gr.LinePlot
    cpu_load: gr.LinePlot
    seen: gr.State

    def outputs(self) -> list[gr.components.Component | gr.blocks.BlockContext]:
        return list(vars(self).values())


def _expert_updates(services: AppServices, snapshot: MonitorSnapshot, simulated: bool) -> tuple[Any, ...]:
    experts = snapshot.experts
    advice = _PLACEMENT.get(lambda: advise_snapshot(experts, services.link.settings, snapshot.gpu, simulated))
    routed = experts.status == "recording" and bool(experts.activations)  # else the panel says what is coming
    return (experts_panel(experts), gr.Row(visible=routed), rankings_panel(experts),
            placement_panel(advice if experts.status == "recording" else None))


def _chart_updates(snapshot: MonitorSnapshot, history: MonitorHistory) -> tuple[Any, ...]:
    gpu_ok = snapshot.gpu.status == "ok"
    nodes = [f"node {n.node}" for n in snapshot.cpu.nodes]
    gpu_charts = (frames.gpu_load(history.gpu), frames.gpu_memory(history.gpu)) if gpu_ok else (gr.skip(),) * 2
    return (frames.expert_hit_history(history.experts), frames.engine_throughput(history.engine),
            frames.engine_requests(history.engine), gr.Row(visible=gpu_ok), *gpu_charts,
            frames.cpu_load(history.cpu, nodes))


def refresh(services: AppServices, seen: Seen) -> tuple[Any, ...]:
    """One session's update: reads the sampler's cached snapshot and history, never samples. The live
    figures come every tick, the expert panel when a new dump was read, the charts every few seconds but
    never with the expert panel, so that no refresh weighs much more than the heatmap (~15 kB): only the first
    ones (FIRST_PAINT), which bring everything."""
    sampler, status = services.monitor.sampler, services.link.status()
    snapshot, now = sampler.latest(), time.time()
    fleet = services.fleet_monitor.latest()
    if fleet.active:  # the app's engine is a router: the figures are its workers' (m3ui/monitor/fleet.py)
        snapshot = replace(snapshot, engine=fleet.total, experts=fleet.experts)  # type: ignore[arg-type]  # an active fleet has both
    first_paint = seen.refreshes < FIRST_PAINT  # everything, the expert panel too: a value that lands while the tab
    # first mounts may be dropped, and the panel is sent again only with the next dump (none comes while idle)
    experts_new = snapshot.experts.time != seen.experts_at or first_paint
    charts_due = first_paint or (now - seen.charts_at >= CHARTS_EVERY_S and not experts_new)
    experts = ((fleet_expert_updates(fleet) if fleet.active else _expert_updates(services, snapshot, status.simulated))
               if experts_new else (gr.skip(),) * 4)
    history = sampler.history(since=now - CHART_SPAN_S) if charts_due else None
    if history is not None and fleet.active:
        history = replace(history, engine=services.fleet_monitor.history(since=now - CHART_SPAN_S), experts=())
    charts = _chart_updates(snapshot, history) if history is not None else (gr.skip(),) * 7
    return (
        headline(snapshot, status) + workers_table(fleet), engine_panel(snapshot.engine, status),
        gpu_panel(snapshot.gpu, status.simulated),
        cpu_panel(snapshot.cpu, status.simulated, fleet.active), *experts, *charts,
        Seen(snapshot.experts.time, now if charts_due else seen.charts_at, min(seen.refreshes + 1, FIRST_PAINT)),
    )


def _chart(name: str, label: str, y_title: str, percent: bool = False, points: bool = False) -> Any:
    # no `height`: with one, Gradio 6.31 clips the legend off. Times on a 24-hour clock (Vega's default reads
    # "04:45" for 4:45 pm), values without a train of zeros ("0.000000"). `points`: each value a dot, for values
    # that come one at a time (a line through a single value has no length: nothing was drawn).
    plot = gr.ScatterPlot if points else gr.LinePlot
    return plot(x="time", y="value", color="series", color_title="", label=label, x_title="", y_title=y_title,
                y_lim=[0, 100] if percent else None, elem_id=f"m3-mon-{name}",  # type: ignore[arg-type]  # None is Gradio's own default
                x_axis_format=TIME_AXIS, y_axis_format=VALUE_AXIS)


def _build() -> MonitorPanels:
    with gr.Column(elem_classes="m3-monitor"):
        head = gr.HTML(elem_id="m3-mon-headline")
        gr.Markdown("### Expert utilization", elem_classes="m3-h")
        experts = gr.HTML(elem_id="m3-mon-experts")
        with gr.Row(equal_height=False, visible=False) as expert_details:
            with gr.Column(scale=2):
                hit_history = _chart("hit-history", "GPU hit rate per recorder dump", "%", percent=True,
                                     points=True)
            with gr.Column(scale=3):
                rankings = gr.HTML(elem_id="m3-mon-rankings")
        placement = gr.HTML(elem_id="m3-mon-placement")
        gr.Markdown("### Engine", elem_classes="m3-h")
        with gr.Row(equal_height=False):
            with gr.Column(scale=2, min_width=260):
                engine = gr.HTML(elem_id="m3-mon-engine")
            with gr.Column(scale=3):
                throughput = _chart("throughput", "Throughput", "tokens/s")
            with gr.Column(scale=3):
                requests = _chart("requests", "Requests", "requests")
        gr.Markdown("### GPUs", elem_classes="m3-h")
        gpu = gr.HTML(elem_id="m3-mon-gpu")
        with gr.Row(visible=False) as gpu_charts:
            gpu_load = _chart("gpu-load", "GPU load", "%", percent=True)
            gpu_memory = _chart("gpu-memory", "GPU memory used", "GiB")
        gr.Markdown("### CPU", elem_classes="m3-h")
        with gr.Row(equal_height=False):
            with gr.Column(scale=3):
                cpu = gr.HTML(elem_id="m3-mon-cpu")
            with gr.Column(scale=2):
                cpu_load = _chart("cpu-load", "CPU load", "%", percent=True)
    return MonitorPanels(head, engine, gpu, cpu, experts, expert_details, rankings, placement, hit_history, throughput,
                         requests, gpu_charts, gpu_load, gpu_memory, cpu_load, gr.State(Seen()))


def build_monitor_tab(services: AppServices, tab: gr.Tab | None = None) -> MonitorPanels:
    """Given the gr.Tab it is built in, the refresh runs only while that tab is shown; else it always runs."""
    panels = _build()
    timer = gr.Timer(REFRESH_S, active=tab is None)
    outputs = panels.outputs()

    def update(seen: Seen) -> tuple[Any, ...]:
        return refresh(services, seen)

    timer.tick(update, panels.seen, outputs, show_progress="hidden", queue=False)
    if tab is not None:
        def follow_tab(event: gr.SelectData) -> gr.Timer:
            return gr.Timer(active=event.value == tab.label)

        tab.select(update, panels.seen, outputs, show_progress="hidden", queue=False)
        tab.parent.select(follow_tab, None, timer, queue=False)  # type: ignore[union-attr]  # a Tab's parent is its Tabs
    return panels
