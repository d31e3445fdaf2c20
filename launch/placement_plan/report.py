"""A placement plan in words (the CLI's text), as JSON, and as the flags to launch with."""

from __future__ import annotations

from pathlib import Path

from launch.placement_plan.predict import GOOD_TOKENS, MIN_TRUSTED_TOKENS, PlacementPlan
from launch.placement_plan.stability import MIN_SEGMENTS_FOR_UNLIKE, HeldOut
from launch.placement_plan.strategies import STRATEGIES, Strategy


def recommended(plan: PlacementPlan) -> Strategy:
    """The strategy with the fastest predicted decode at the plan's N (uniform when none beats it)."""
    best = max(STRATEGIES, key=lambda s: plan.predicted[s].decode_tps)
    return best if plan.predicted[best].decode_tps > plan.predicted["uniform"].decode_tps else "uniform"


def confidence(plan: PlacementPlan, segments: int) -> str:
    if plan.recorded_tokens >= GOOD_TOKENS and segments >= MIN_SEGMENTS_FOR_UNLIKE:
        return "high"
    return "medium" if plan.recorded_tokens >= MIN_TRUSTED_TOKENS and segments >= 2 else "low"


def launch_flags(plan: PlacementPlan, profile: Path | None) -> list[str]:
    strategy = recommended(plan)
    flags = ["--kt-expert-placement-strategy", strategy]
    if strategy == "frequency" and profile is not None:
        flags += ["--init-expert-location", str(profile)]
    return flags + ["--kt-num-gpu-experts", str(plan.gpu_experts)]


def _gain(held: HeldOut) -> float:
    return held.uniform_step_time / held.step_time - 1


def recommendation(plan: PlacementPlan, segments: int) -> str:
    """One sentence, with its confidence."""
    strategy = recommended(plan)
    uniform, chosen = plan.predicted["uniform"], plan.predicted[strategy]
    sure = confidence(plan, segments)
    if strategy == "uniform":
        return (f"Keep uniform at {plan.gpu_experts} GPU experts per layer: no strategy is predicted to decode "
                f"faster on this traffic (confidence {sure}).")
    text = (f"Relaunch with {strategy} at {plan.gpu_experts} GPU experts per layer: GPU hit rate "
            f"{chosen.hit_rate:.1%} instead of {uniform.hit_rate:.1%}, decode {chosen.decode_tps:.1f} instead of "
            f"{uniform.decode_tps:.1f} tok/s ({chosen.decode_tps / uniform.decode_tps - 1:+.1%})")
    if strategy == "frequency" and plan.unlike_mix is not None:
        text += f", about {_gain(plan.unlike_mix):+.1%} on traffic unlike the recording"
    return text + f" (confidence {sure}, {plan.recorded_tokens:,} tokens recorded)."


def _held_json(held: HeldOut | None) -> dict[str, float] | None:
    if held is None:
        return None
    return {"hit_rate": held.hit_rate, "uniform_hit_rate": held.uniform_hit_rate, "decode_gain": _gain(held),
            "gpu_set_overlap": held.gpu_set_overlap}


def plan_json(plan: PlacementPlan, segments: int, profile: Path | None) -> dict[str, object]:
    """The issue's keys first (hit rates as fractions of 1), then the rest of the prediction."""
    return {
        "gpu_experts": plan.gpu_experts,
        "recorded_tokens": plan.recorded_tokens,
        "predicted": {s: plan.predicted[s].hit_rate for s in STRATEGIES},
        "curve": {s: [[p.gpu_experts, p.hit_rate] for p in plan.curve[s]] for s in STRATEGIES},
        "flags": launch_flags(plan, profile),
        "predicted_decode_tps": {s: plan.predicted[s].decode_tps for s in STRATEGIES},
        "curve_decode_tps": {s: [[p.gpu_experts, p.decode_tps] for p in plan.curve[s]] for s in STRATEGIES},
        "recorded_hit_rate": plan.recorded_hit_rate,
        "recommended": recommended(plan),
        "recommendation": recommendation(plan, segments),
        "confidence": confidence(plan, segments),
        "stability": {"segments": segments, "same_mix": _held_json(plan.same_mix),
                      "unlike_mix": _held_json(plan.unlike_mix)},
        "vram": {"gpu_experts_ceiling": plan.vram_ceiling, "gb_per_expert_per_gpu": plan.gb_per_expert_per_gpu,
                 "frequency_matches_uniform_at": plan.frequency_matches_uniform_at,
                 "gb_saved_per_gpu": plan.vram_saved_gb},
        "profile": None if profile is None else str(profile),
        "warnings": list(plan.warnings),
    }


def plan_text(plan: PlacementPlan, segments: int, profile: Path | None) -> str:
    lines = [f"recorded: {plan.recorded_tokens:,} tokens in {segments} segment(s)"
             + ("" if plan.recorded_hit_rate is None else f"; GPU hit rate as run: {plan.recorded_hit_rate:.1%}")]
    lines += [f"warning: {w}" for w in plan.warnings]
    lines.append(f"at {plan.gpu_experts} GPU experts per layer (VRAM ceiling {plan.vram_ceiling}, "
                 f"{plan.gb_per_expert_per_gpu:.2f} GB per expert per layer per GPU):")
    for s, point in plan.predicted.items():
        lines.append(f"  {s:<14} hit {point.hit_rate:6.1%}   decode {point.decode_tps:6.1f} tok/s")
    for label, held in (("same mix, held out", plan.same_mix), ("unlike traffic", plan.unlike_mix)):
        if held is not None:
            lines.append(f"  frequency on {label}: hit {held.hit_rate:.1%} vs uniform {held.uniform_hit_rate:.1%}, "
                         f"decode {_gain(held):+.1%}, GPU sets overlap {held.gpu_set_overlap:.0%}")
    if plan.frequency_matches_uniform_at is not None and plan.vram_saved_gb:
        lines.append(f"  frequency matches uniform's hit rate with {plan.frequency_matches_uniform_at} experts per "
                     f"layer: {plan.vram_saved_gb:.1f} GB of VRAM saved per GPU")
    lines.append("curve (GPU experts per layer: hit rate / decode tok/s):")
    for s in STRATEGIES:
        lines.append(f"  {s:<14} " + "  ".join(f"{p.gpu_experts}:{p.hit_rate:.0%}/{p.decode_tps:.0f}"
                                              for p in plan.curve[s]))
    lines.append(recommendation(plan, segments))
    lines.append("launch with: " + " ".join(launch_flags(plan, profile)))
    return "\n".join(lines)
