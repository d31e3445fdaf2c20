"""`python -m launch placement plan|ab`: the placement loop on the command line.

plan: predict every strategy from recorder dumps, save the profile where the engine will read it, print the
flags to launch with (`--json`: the object issue 13 specifies, then the rest of the prediction).
ab: on the simulated engine, record → plan → relaunch with frequency → replay, side by side.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections.abc import Callable
from pathlib import Path

from launch.command import Engine
from launch.model_config import ModelShape, load_model_shape
from launch.placement_plan.ab import AbError, AbResult, Replay, run_ab
from launch.placement_plan.predict import Hardware, plan_placement
from launch.placement_plan.profile_file import default_profile_path, save_profile
from launch.placement_plan.prompts import MIX_B_TOPICS, builtin_mix, load_prompts
from launch.placement_plan.recording import Recording, read_recording
from launch.placement_plan.report import plan_json, plan_text
from launch.settings import LaunchSettings
from launch.sizing import GB

DEFAULT_GPU_MEM_GB = 96.0  # the seed's GPUs, and the simulated engine's default
Resolve = Callable[[argparse.Namespace], tuple[LaunchSettings, Engine]]


def add_placement_parser(sub: argparse._SubParsersAction, selection_args: Callable[[argparse.ArgumentParser], None],
                         resolve: Resolve, data_dir: Path) -> None:
    placement = sub.add_parser("placement", help="plan GPU expert placement from recorded routing, and prove it")
    commands = placement.add_subparsers(dest="placement_cmd", required=True)
    p = commands.add_parser("plan", help="predict each strategy from recorder dumps; print the flags to launch with")
    p.add_argument("--dump", action="extend", nargs="+", type=Path, required=True, metavar="FILE",
                   help="stat dumps (expert_distribution_recorder_*.pt), repeatable or several after one --dump; "
                        "a gpu_expert_distribution_*.pt of the same run gives its own placement")
    p.add_argument("--gpu-experts", type=int, metavar="N",
                   help="GPU experts per MoE layer (default: the recorded run's, from its masks or the settings)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--save", type=Path, metavar="FILE.pt",
                   help=f"where to save the profile for --init-expert-location (default {data_dir}/placement/)")
    p.add_argument("--gpu-mem-gb", type=float, default=DEFAULT_GPU_MEM_GB, help="memory of one GPU (VRAM ceiling)")
    selection_args(p)
    p.set_defaults(func=lambda args: _cmd_plan(args, resolve, data_dir))
    p = commands.add_parser("ab", help="simulated engine: record, plan, relaunch with frequency, replay; side by side")
    p.add_argument("--prompts", type=Path, metavar="FILE",
                   help="prompts to replay: a JSON list or one per line (default: a built-in mix of topics)")
    p.add_argument("--other-prompts", type=Path, metavar="FILE",
                   help="a second prompt set on other topics (default with the built-in mix: its counterpart)")
    p.add_argument("--work-dir", type=Path, help=f"run folders and the profile (default {data_dir}/placement/ab-*)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--gpu-mem-gb", type=float, default=DEFAULT_GPU_MEM_GB, help="memory of one GPU (VRAM ceiling)")
    selection_args(p)
    p.set_defaults(func=lambda args: _cmd_ab(args, resolve, data_dir))


def _hardware(settings: LaunchSettings, gpu_mem_gb: float) -> Hardware:
    if not (gpu_mem_gb > 0 and math.isfinite(gpu_mem_gb)):
        raise ValueError(f"--gpu-mem-gb must be a positive number, got {gpu_mem_gb}")
    return Hardware(settings.tp_size, gpu_mem_gb * GB, settings.mem_fraction_static, settings.quantization)


def _default_gpu_experts(recording: Recording, shape: ModelShape, settings: LaunchSettings) -> int:
    if recording.recorded_mask is not None:
        moe = list(shape.moe_layer_ids)
        return round(recording.recorded_mask[moe].sum() / max(1, len(moe)))
    if settings.kt_num_gpu_experts is not None:
        return settings.kt_num_gpu_experts
    raise ValueError("say how many GPU experts per layer to plan for: --gpu-experts N, the run's "
                     "gpu_expert_distribution_*.pt as another --dump, or --preset / --profile")


def _cmd_plan(args: argparse.Namespace, resolve: Resolve, data_dir: Path) -> int:
    settings, _ = resolve(args)
    shape = load_model_shape(args.model_path)
    for path in args.dump:
        if not path.is_file():
            raise ValueError(f"--dump {path}: no such file")
    recording = read_recording(list(args.dump), shape)
    gpu_experts = args.gpu_experts if args.gpu_experts is not None else _default_gpu_experts(recording, shape, settings)
    plan = plan_placement(recording, shape, gpu_experts, _hardware(settings, args.gpu_mem_gb))
    profile = save_profile(args.save or default_profile_path(data_dir / "placement"), recording.counts)
    segments = len(recording.segments)
    print(json.dumps(plan_json(plan, segments, profile)) if args.json else plan_text(plan, segments, profile))
    return 0


def _replay_json(replay: Replay | None) -> dict[str, object] | None:
    if replay is None:
        return None
    return {"hit_rate": replay.hit_rate, "decode_tps": replay.decode_tps, "mean_ttft_s": replay.mean_ttft_s,
            "tokens": replay.tokens}


def _pair(label: str, before: float | None, after: float | None, pattern: str) -> tuple[str, str, str]:
    return label, _fmt(before, pattern), _fmt(after, pattern)


def _ab_text(result: AbResult) -> str:
    plan = result.plan
    was, now = plan.predicted[result.before_strategy], plan.predicted["frequency"]  # type: ignore[index]  # a Strategy: the settings validate it
    rows = [("", f"before ({result.before_strategy})", "after (frequency)"),
            _pair("GPU hit rate, predicted", was.hit_rate, now.hit_rate, "{:.2%}"),
            _pair("GPU hit rate, measured", result.before.hit_rate, result.after.hit_rate, "{:.2%}"),
            _pair("decode tok/s, predicted", was.decode_tps, now.decode_tps, "{:.1f}"),
            _pair("decode tok/s, measured", result.before.decode_tps, result.after.decode_tps, "{:.1f}"),
            _pair("TTFT, measured", result.before.mean_ttft_s, result.after.mean_ttft_s, "{:.2f} s"),
            _pair("tokens replayed", result.before.tokens, result.after.tokens, "{:,}")]
    if result.before_other is not None and result.after_other is not None:
        rows.append(_pair("other topics: hit rate", result.before_other.hit_rate, result.after_other.hit_rate,
                          "{:.2%}"))
        rows.append(_pair("other topics: decode tok/s", result.before_other.decode_tps,
                          result.after_other.decode_tps, "{:.1f}"))
    lines = [f"{a:<28}{b:>22}{c:>20}" for a, b, c in rows]
    if plan.unlike_mix is not None:
        lines.append(f"predicted on traffic unlike the recording: hit {plan.unlike_mix.hit_rate:.2%} vs uniform "
                     f"{plan.unlike_mix.uniform_hit_rate:.2%}")
    lines += [f"warning: {w}" for w in plan.warnings]
    lines.append(f"profile: {result.profile}")
    return "\n".join(lines)


def _fmt(value: float | None, pattern: str) -> str:
    return "—" if value is None else pattern.format(value)


def _cmd_ab(args: argparse.Namespace, resolve: Resolve, data_dir: Path) -> int:
    settings, engine = resolve(args)
    if engine.kind != "sim":
        raise ValueError("placement ab drives the simulated engine only (--engine sim); on a real engine, "
                         "record, run `placement plan` and relaunch with its flags")
    shape = load_model_shape(args.model_path)
    prompts = load_prompts(args.prompts) if args.prompts else builtin_mix()
    other = (load_prompts(args.other_prompts) if args.other_prompts
             else None if args.prompts else builtin_mix(MIX_B_TOPICS))
    hardware = _hardware(settings, args.gpu_mem_gb)
    work_dir = args.work_dir or data_dir / "placement" / f"ab-{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}"
    try:
        result = run_ab(settings, shape, prompts, other, work_dir, hardware)
    except AbError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    if args.json:
        segments = len(result.before.recording.segments)
        print(json.dumps({"plan": plan_json(result.plan, segments, result.profile),
                          "before": _replay_json(result.before), "after": _replay_json(result.after),
                          "before_other": _replay_json(result.before_other),
                          "after_other": _replay_json(result.after_other)}))
    else:
        print(_ab_text(result))
    return 0
