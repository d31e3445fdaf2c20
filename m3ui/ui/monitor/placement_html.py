"""The Placement panel: GPU hit rate and predicted decode tok/s against GPU experts per layer, one line per
strategy, the VRAM ceiling and the current setting marked, and the recommendation in one sentence.

Inline SVG (a few kB, no plotting library): two small charts side by side sharing the x axis; inline styles,
so the panel needs no stylesheet of its own.
"""

from __future__ import annotations

from m3ui.placement.advice import PlacementAdvice
from m3ui.placement.trial import TrialCard
from m3ui.ui.monitor.format import esc, note, notes

STRATEGY_COLOURS = {"uniform": "#8a94a6", "frequency": "#00c8e6", "front-loading": "#f5a524", "random": "#c06cf0"}
_DRAW_ORDER = ("random", "front-loading", "uniform", "frequency")  # the recommendation's line on top
_W, _H, _PAD_LEFT, _PAD, _TOP = 300, 150, 46, 34, 22  # size, left/bottom/top margins, px


def _x(n: int, experts: int) -> float:
    return _PAD_LEFT + n / max(1, experts) * (_W - _PAD_LEFT - 8)


def _y(value: float, top: float) -> float:
    return _H - _PAD - (value / top if top else 0.0) * (_H - _PAD - _TOP)


def _chart(advice: PlacementAdvice, metric: str, title: str, unit: str) -> str:
    plan = advice.plan
    assert plan is not None
    experts = max(p.gpu_experts for points in plan.curve.values() for p in points)
    values = {s: [(p.gpu_experts, p.hit_rate * 100 if metric == "hit" else p.decode_tps) for p in points]
              for s, points in plan.curve.items()}
    top = 100.0 if metric == "hit" else max(v for series in values.values() for _, v in series) * 1.05
    lines = "".join(
        f'<polyline fill="none" stroke="{STRATEGY_COLOURS[s]}" stroke-width="1.6" data-strategy="{s}" '
        f'points="{" ".join(f"{_x(n, experts):.1f},{_y(v, top):.1f}" for n, v in series)}"/>'
        for s, series in sorted(values.items(), key=lambda item: _DRAW_ORDER.index(item[0])))
    ceiling = _x(min(plan.vram_ceiling, experts), experts)
    current = _x(plan.gpu_experts, experts)
    return (f'<svg class="m3-placement-chart" viewBox="0 0 {_W} {_H}" role="img" aria-label="{esc(title)}" '
            'style="flex:1 1 280px;max-width:460px;fill:currentColor">'
            f'<text x="{_PAD_LEFT}" y="11" font-size="10">{esc(title)}</text>'
            f'<line x1="{_PAD_LEFT}" y1="{_H - _PAD}" x2="{_W - 8}" y2="{_H - _PAD}" stroke="currentColor" '
            'stroke-width=".5"/>'
            f'<text x="2" y="{_TOP + 3}" font-size="9">{top:.0f}{unit}</text>'
            f'<text x="{_PAD_LEFT - 10}" y="{_H - _PAD}" font-size="9">0</text>'
            f'<text x="{_PAD_LEFT}" y="{_H - _PAD + 12}" font-size="9">0</text>'
            f'<text x="{_W - 26}" y="{_H - _PAD + 12}" font-size="9">{experts}</text>'
            f'<text x="{_W / 2 - 40:.0f}" y="{_H - _PAD + 24}" font-size="9">GPU experts per layer</text>'
            f'<line x1="{ceiling:.1f}" y1="{_TOP}" x2="{ceiling:.1f}" y2="{_H - _PAD}" stroke="#e5484d" '
            f'stroke-dasharray="3 2" data-mark="vram-ceiling"><title>VRAM ceiling: {plan.vram_ceiling}</title></line>'
            f'<line x1="{current:.1f}" y1="{_TOP}" x2="{current:.1f}" y2="{_H - _PAD}" stroke="currentColor" '
            f'stroke-width=".6" data-mark="current"><title>now: {plan.gpu_experts}</title></line>'
            f"{lines}</svg>")


def placement_panel(advice: PlacementAdvice | None) -> str:
    """The curves and the recommendation, or why there are none."""
    if advice is None:
        return ""
    if advice.plan is None:
        return note("empty", advice.reason or "", "No placement advice yet.")
    plan = advice.plan
    legend = " ".join(f'<span class="m3-legend-item"><i style="display:inline-block;width:14px;height:3px;'
                      f'margin:0 4px 3px 8px;background:{c}"></i>{esc(s)}</span>'
                      for s, c in STRATEGY_COLOURS.items())
    saved = (f" Frequency reaches uniform's hit rate with {plan.frequency_matches_uniform_at} experts per layer "
             f"({plan.vram_saved_gb:.1f} GB of VRAM per GPU freed)." if plan.vram_saved_gb else "")
    return (f'<div class="m3-placement" data-confidence="{esc(advice.confidence)}">'
            f'<p class="m3-placement-advice"><strong>{esc(advice.sentence)}</strong>{esc(saved)}</p>'
            '<div class="m3-placement-charts" style="display:flex;flex-wrap:wrap;gap:12px">'
            f'{_chart(advice, "hit", "GPU hit rate", "%")}'
            f'{_chart(advice, "tps", "Predicted decode (one request)", " tok/s")}</div>'
            f'<div class="m3-legend">{legend} · <span style="color:#e5484d">┆</span> VRAM ceiling '
            f"({plan.vram_ceiling} per layer) · │ now ({plan.gpu_experts})</div>"
            f"{notes('warn', plan.warnings)}</div>")


def _cell(value: float | None, pattern: str) -> str:
    return "—" if value is None else esc(pattern.format(value))


def trial_card(card: TrialCard) -> str:
    """The A/B card of a placement trial: predicted and measured, before and after, on the same prompts."""
    if card.state == "idle":
        return ""
    kind = "error" if card.state == "failed" else "info"
    head = note(kind, card.detail, "Placement trial")  # type: ignore[arg-type]  # "error" or "info"
    if card.before is None and card.predicted_before is None:
        return head
    rows = [
        ("GPU hit rate, predicted", card.predicted_before and card.predicted_before.hit_rate,
         card.predicted_after and card.predicted_after.hit_rate, "{:.1%}"),
        ("GPU hit rate, measured", card.before and card.before.hit_rate, card.after and card.after.hit_rate, "{:.1%}"),
        ("Decode tok/s, predicted", card.predicted_before and card.predicted_before.decode_tps,
         card.predicted_after and card.predicted_after.decode_tps, "{:.1f}"),
        ("Decode tok/s, measured", card.before and card.before.decode_tps, card.after and card.after.decode_tps,
         "{:.1f}"),
        ("Time to first token, measured", card.before and card.before.ttft_s, card.after and card.after.ttft_s,
         "{:.2f} s"),
    ]
    body = "".join(f"<tr><th>{esc(label)}</th><td>{_cell(before, fmt)}</td><td>{_cell(after, fmt)}</td></tr>"  # type: ignore[arg-type]  # each is a float or None (`x and x.field`)
                   for label, before, after, fmt in rows)
    return (f'{head}<table class="m3-table m3-placement-trial" data-state="{esc(card.state)}"><thead><tr><th></th>'
            f"<th>Before ({esc(card.strategy_before)})</th><th>After (frequency, {card.gpu_experts} per layer)</th>"
            f"</tr></thead><tbody>{body}</tbody></table>")
