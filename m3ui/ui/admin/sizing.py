"""Sizing: the advice with its breakdown and an Apply button, and a what-if slider for GPU experts per layer
that shows where each GPU's memory would go."""

from __future__ import annotations

from dataclasses import dataclass

import gradio as gr

from launch.advice import Advice
from launch.sizing import ACTIVATION_RESERVE, GB, MemoryPlan
from m3ui.admin.review import Review, current_gpu_experts, what_if
from m3ui.ui.admin.markup import esc, field_label, figures_table

_VERDICT = {
    "ok": ("ok", "Fits"),
    "oom_at_load": ("error", "CUDA out of memory while loading: the weights do not fit on the GPU"),
    "kv_pool_too_small": ("error", "No room left for the KV cache inside --mem-fraction-static"),
    "oom_outside_pool": ("error", "Too little memory outside the static pool for activations and the "
                                  "layerwise-prefill buffer"),
}


@dataclass
class SizingPanel:
    advice: gr.HTML
    apply_advice: gr.Button
    experts: gr.Slider
    plan: gr.HTML
    use_experts: gr.Button


def render_advice(review: Review) -> str:
    if not review.advice:
        return f'<div class="m3a-empty">{esc(review.advice_note or "No advice.")}</div>'
    items = []
    for advice in review.advice:
        current = getattr(review.settings, advice.field)
        same = current == advice.value
        now = ('<span class="m3a-tag m3a-ok">as set</span>' if same
               else f'<span class="m3a-tag">form: {esc("unset" if current is None else current)}</span>')
        items.append(f'<div class="m3a-advice" data-field="{esc(advice.field)}"><div class="m3a-advice-head">'
                     f'<code>{esc(field_label(advice.field))} {esc(advice.value)}</code>{now}</div>'
                     f'<div class="m3a-why">{esc(advice.why)}</div>{_breakdown(advice)}</div>')
    return "".join(items)


def _breakdown(advice: Advice) -> str:
    if len(advice.breakdown) <= 1:
        return ""
    return (f'<details class="m3a-breakdown" open><summary>Breakdown</summary>'
            f'{figures_table(advice.breakdown)}</details>')


def _gb(value: float) -> str:
    return f"{value / GB:,.1f} GB"


def render_plan(plan: MemoryPlan | None) -> str:
    """One GPU's memory as a stacked bar: weights, GPU experts, KV cache, and what lies outside the pool."""
    if plan is None:
        return '<div class="m3a-empty">The what-if needs the model\'s config.json and the GPU\'s memory.</div>'
    total = plan.gpu_bytes
    need_outside = plan.prefill_buffer_bytes + ACTIVATION_RESERVE
    parts = [("weights", "non-expert weights", plan.non_expert_bytes),
             ("experts", f"GPU experts ({plan.gpu_experts_per_layer}/layer)", plan.gpu_expert_bytes),
             ("kv", f"KV cache ({plan.kv_tokens:,} tokens)", plan.kv_pool_bytes),
             ("outside", f"outside the pool (needs {_gb(need_outside)}: prefill buffer "
                         f"{_gb(plan.prefill_buffer_bytes)} + activations)", plan.outside_pool_bytes)]
    used = 0.0
    segments = []
    for key, _label, size in parts:
        width = max(0.0, min(size, total - used)) / total * 100
        used += size
        segments.append(f'<div class="m3a-seg m3a-seg-{key}" style="width:{width:.2f}%"></div>')
    over = used > total * 1.0001
    legend = "".join(f'<li><span class="m3a-swatch m3a-seg-{key}"></span>{esc(label)}: <b>{_gb(size)}</b></li>'
                     for key, label, size in parts)
    level, text = _VERDICT[plan.verdict]
    if plan.verdict == "ok":
        text = f"Fits: {plan.kv_tokens:,} tokens of KV cache per GPU"
    overflow = '<div class="m3a-overflow">over capacity</div>' if over or plan.verdict == "oom_at_load" else ""
    return (f'<div class="m3a-plan" data-verdict="{plan.verdict}"><div class="m3a-plan-head">Per GPU: '
            f'{_gb(total)} at TP{plan.tp}, mem-fraction-static {plan.mem_fraction:.2f} '
            f'(static pool {_gb(plan.static_budget_bytes)})</div>'
            f'<div class="m3a-bar">{"".join(segments)}<div class="m3a-fraction" '
            f'style="left:{plan.mem_fraction * 100:.1f}%" title="mem-fraction-static"></div></div>{overflow}'
            f'<ul class="m3a-legend">{legend}</ul><div class="m3a-verdict m3a-{level}">{esc(text)}</div></div>')


def slider_update(review: Review) -> gr.Slider:
    """The what-if starts from the form's own GPU experts per layer, up to the model's routed experts."""
    maximum = review.shape.num_routed_experts if review.shape else 256
    return gr.Slider(maximum=maximum, value=min(maximum, current_gpu_experts(review)))


def plan_for(review: Review, experts: float | None) -> str:
    count = int(experts) if experts is not None else current_gpu_experts(review)
    return render_plan(what_if(review, count))


def build_sizing_panel() -> SizingPanel:
    with gr.Group(elem_classes=["m3a-panel"]):
        gr.HTML('<div class="m3a-panel-title">Sizing advice</div>')
        advice = gr.HTML(elem_id="m3-advice")
        apply_advice = gr.Button("Apply advice to the form", size="sm", elem_classes=["m3a-action"],
                                 elem_id="m3-apply-advice")
    with gr.Group(elem_classes=["m3a-panel"]):
        gr.HTML('<div class="m3a-panel-title">What if: GPU experts per layer</div>')
        experts = gr.Slider(0, 256, value=4, step=1, label="GPU experts per MoE layer", elem_id="m3-whatif",
                            info="Predicted memory of each GPU with this many routed experts per layer on it.")
        plan = gr.HTML(elem_id="m3-whatif-plan")
        use_experts = gr.Button("Use this value", size="sm", elem_classes=["m3a-action"], elem_id="m3-use-whatif")
    return SizingPanel(advice, apply_advice, experts, plan, use_experts)
