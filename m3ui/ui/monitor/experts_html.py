"""The expert utilization panel: the layers x experts heatmap with GPU-resident experts marked, and the
experts worth moving (hot ones on the CPU, cold ones on the GPU); or why there is nothing to show."""

from __future__ import annotations

from m3ui.experts.heatmap import gpu_edge_css, ramp_css_gradient
from m3ui.experts.hit_rate import ExpertRank
from m3ui.monitor.experts import ExpertSnapshot
from m3ui.ui.monitor.format import NoteKind, count, esc, note, notes, pct, table

_EMPTY_STATES: dict[str, tuple[NoteKind, str]] = {
    "pending": ("empty", "No expert statistics yet."),
    "no_engine": ("empty", "No expert statistics: no engine is answering."),
    "disabled": ("info", "The expert recorder is off."),
    "unsupported_mode": ("warn", "This recorder mode cannot be shown."),
    "no_local_folder": ("info", "Expert statistics need the engine's dump folder."),
    "error": ("error", "Expert recorder problem."),
}
_LEGEND = (f'<span class="m3-legend-item"><span class="m3-ramp" style="background:{ramp_css_gradient()}"></span>'
           'fewer → more activations (log scale; dark: none)</span><span class="m3-legend-item">'
           f'<span class="m3-gpu-mark" style="background:{gpu_edge_css()}"></span>GPU-resident expert</span>')


def _scale(rates: tuple[float | None, ...]) -> float:
    """The per-layer bars' full width: the smallest of 10%, 25%, 50%, 100% above every layer's rate."""
    top = max((r for r in rates if r is not None), default=0.0)
    return next(limit for limit in (0.1, 0.25, 0.5, 1.0) if top <= limit)


def _layer_strip(rates: tuple[float | None, ...], layers: int) -> tuple[str, float]:
    """Hit rate per layer as bars beside the heatmap's rows (layers that routed nothing stay empty)."""
    scale = _scale(rates)
    bars = "".join(  # short titles: 60 of them go with every heatmap refresh
        f'<i style="width:{rate / scale * 100:.0f}%" title="layer {layer}: {pct(rate, 1)}"></i>'
        if rate is not None else f'<i title="layer {layer}: idle"></i>'
        for layer, rate in ((layer, rates[layer] if layer < len(rates) else None) for layer in range(layers)))
    return f'<div class="m3-layer-strip" title="GPU hit rate per layer, 0 to {pct(scale)}">{bars}</div>', scale


def _heatmap(snapshot: ExpertSnapshot) -> str:
    url = snapshot.heatmap_data_url
    if url is None or snapshot.counts is None:
        return ""
    layers, experts = snapshot.counts.shape
    rate = snapshot.hit_rate.rate if snapshot.hit_rate is not None else None
    caption = (f"Routed activations per expert, last {snapshot.window_s / 60:.0f} min: "
               f"{count(snapshot.activations)} · GPU hit rate {pct(rate, 1)}")
    if snapshot.residency_source == "assumed":
        caption += " · GPU placement taken from the launch settings (the engine does not dump it)"
    strip, scale = _layer_strip(snapshot.layer_hit_rates, layers)
    return (f'<figure class="m3-heatmap"><figcaption>{esc(caption)}</figcaption>'
            f'<div class="m3-heatmap-grid"><div class="m3-axis-y"><span>layer 0</span><span>{layers - 1}</span></div>'
            f'<img src="{url}" alt="expert activations: {layers} layers by {experts} experts" '
            f'data-layers="{layers}" data-experts="{experts}" data-activations="{snapshot.activations}">{strip}'
            f'<div></div><div class="m3-axis-x"><span>expert 0</span><span>{experts - 1}</span></div>'
            f'<div class="m3-axis-x"><span>GPU hit</span><span>{pct(scale)}</span></div></div>'
            f'<div class="m3-legend">{_LEGEND}</div></figure>')


def _ranks(ranks: tuple[ExpertRank, ...]) -> list[list[str]]:
    return [[str(r.layer), str(r.expert), count(r.activations), pct(r.share, 1)] for r in ranks]


def rankings_panel(snapshot: ExpertSnapshot) -> str:
    """The experts worth moving; empty until something was routed."""
    if snapshot.status != "recording" or not snapshot.activations:
        return ""
    headers = ("Layer", "Expert", "Activations", "Share of layer")
    hot = table(headers, _ranks(snapshot.hottest_cpu), "No CPU-resident expert was activated.")
    cold = table(headers, _ranks(snapshot.coldest_gpu), "No GPU-resident experts in the layers that routed.")
    return (f'<div class="m3-columns"><div><h4>Hottest CPU-resident experts</h4>'
            f'<p class="m3-muted">The best candidates for the GPU.</p>{hot}</div>'
            f'<div><h4>Coldest GPU-resident experts</h4><p class="m3-muted">VRAM spent on little work.</p>{cold}</div>'
            "</div>")


def experts_panel(snapshot: ExpertSnapshot, who_runs: str = "The engine runs") -> str:
    """The heatmap with its per-layer hit rates, or why there is none (for a recorder that is off: in a line of
    words, the flags that turn it on folded away). `who_runs`: who runs without it, in words."""
    if snapshot.status == "disabled":
        how = f"<details><summary>How to turn it on</summary>{esc(snapshot.reason)}</details>" if snapshot.reason \
            else ""
        return (f'<div class="m3-note m3-note-info"><strong>The expert recorder is off.</strong> '
                f"{esc(who_runs)} without it: no heatmap of the routed experts, no GPU hit rate.{how}</div>"
                + notes("warn", snapshot.warnings))
    if snapshot.status != "recording":
        kind, title = _EMPTY_STATES.get(snapshot.status, ("error", snapshot.status))
        return note(kind, snapshot.reason or "", title) + notes("warn", snapshot.warnings)
    body = notes("warn", snapshot.warnings)
    if not snapshot.activations:
        body += note("info", "Recording, but no expert was activated in the window yet: send a chat.")
    return body + _heatmap(snapshot)
