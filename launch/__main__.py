"""`python -m launch ...`: the engine side on its own (command, check, doctor, advise, serve, placement,
fleet, probe, roofline, bench, tune, microbench).

Other tools call this CLI, so its commands and exit codes are stable: 0 ok, 1 findings/failure, 2 usage.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import replace
from pathlib import Path

from launch.advice import SizingInputs, advise, format_advice
from launch.command import Engine
from launch.findings import format_findings
from launch.fleet.cli import add_fleet_parser
from launch.microbench_cli import add_microbench_parser
from launch.model_config import BUNDLED_M3_CONFIG, ModelConfigError, load_model_shape
from launch.placement_plan.cli import add_placement_parser
from launch.presets import PRESETS, preset
from launch.profile import ProfileError, ProfileStore, load_profile
from launch.restart_policy import RestartPolicy
from launch.settings import LaunchSettings, SettingsError, parse_assignment
from launch.sizing import GB
from launch.speed_cli import add_speed_parsers

# Shared with app.py: one engine per host, whichever started it, and its runs/<time>/ logs.
DEFAULT_RUN_ROOT = Path(os.environ.get("M3UI_DATA_DIR", Path.home() / ".m3ui"))


def _selection_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--preset", choices=sorted(PRESETS), help="start from a reference preset")
    p.add_argument("--profile", type=Path, help="start from a saved profile (a JSON file, or the name of one saved "
                   "in the data folder)")
    p.add_argument("--model-path", help="model folder (config.json + weights)")
    p.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                   help="override one setting, e.g. --set kt_num_gpu_experts=8 (repeatable)")
    p.add_argument("--engine", choices=("sglang", "sim"), help="real sglang-kt or the simulated engine")
    p.add_argument("--engine-python", help="Python of the engine's venv (default: python on PATH)")


def profile_path(given: Path) -> Path:
    """A profile file, or the name of one saved in the data folder (what the app and `tune` save)."""
    if given.exists() or given.suffix == ".json" or len(given.parts) > 1:
        return given
    return ProfileStore(DEFAULT_RUN_ROOT / "profiles").path_for(str(given))


def resolve(args: argparse.Namespace) -> tuple[LaunchSettings, Engine]:
    """Settings and engine from --profile / --preset / --model-path / --set, in that order."""
    engine = Engine()
    if args.profile:
        prof = load_profile(profile_path(args.profile))
        settings, engine = prof.settings, prof.engine
    elif args.preset:
        settings = preset(args.preset, args.model_path) if args.model_path else preset(args.preset)
    else:
        settings = LaunchSettings()
    kind = args.engine or engine.kind
    engine = Engine(kind, args.engine_python or engine.python)
    if args.model_path:
        settings = settings.replace(model_path=args.model_path,
                                    kt_weight_path=settings.kt_weight_path and args.model_path)
    elif kind == "sim" and not args.profile and (settings.model_path is None or args.preset):
        # The simulated engine reads the bundled M3-shaped config when no model is given.
        bundled = str(BUNDLED_M3_CONFIG.parent)
        settings = settings.replace(model_path=bundled, kt_weight_path=bundled)
    for item in args.set:
        name, value = parse_assignment(item)
        settings = settings.replace(**{name: value})
    return settings, engine


def cmd_command(args: argparse.Namespace) -> int:
    from launch.command import build_command

    settings, engine = resolve(args)
    print(build_command(settings, engine).shell_text())
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    from launch.preflight import plan_launch

    settings, engine = resolve(args)
    plan = plan_launch(settings, engine)
    print(format_findings(plan.findings))
    return 0 if plan.ok else 1


def cmd_doctor(args: argparse.Namespace) -> int:
    from launch.hardware import detect_hardware, format_report

    print(format_report(detect_hardware(args.engine_python)))
    return 0


def cmd_advise(args: argparse.Namespace) -> int:
    from launch.hardware import detect_hardware

    shape = load_model_shape(args.model_path)
    report = detect_hardware(None)
    gpus = report.gpu.gpus
    gpu_bytes = args.gpu_mem_gb * GB if args.gpu_mem_gb else (min(g.memory_total_bytes for g in gpus)
                                                               if gpus else None)
    if gpu_bytes is None:
        print("no NVIDIA GPU found here: pass --gpu-mem-gb for the target GPU's memory", file=sys.stderr)
        return 2
    tp = args.tp or max(1, len(gpus))
    inputs = SizingInputs(tp=tp, gpu_bytes=gpu_bytes, mem_fraction=args.mem_fraction,
                          physical_cores=report.cpu.physical_cores,
                          numa_nodes=len(report.cpu.numa_nodes) or None,
                          ram_bytes=report.memory.total_bytes, context_tokens=args.context)
    print(f"model: {args.model_path or BUNDLED_M3_CONFIG.parent} — {shape.num_moe_layers} MoE layers x "
          f"{shape.num_routed_experts} experts, top-{shape.experts_per_token}; TP{tp}, "
          f"{gpu_bytes / GB:.0f} GB per GPU")
    print(format_advice(advise(shape, inputs)))
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    from launch.preflight import plan_launch
    from launch.recovery import recover
    from launch.supervisor import Supervisor, install_signal_handlers

    settings, engine = resolve(args)
    left = recover(args.run_root)  # an engine a killed earlier `serve` left running: stop it first
    if left.pid is not None:
        print(f"recovery: {left.message}", flush=True)
    plan = plan_launch(settings, engine)
    if plan.findings:
        print(format_findings(plan.findings))
    if not plan.ok:
        return 1
    supervisor = Supervisor(args.run_root)
    supervisor.set_restart_policy(_restart_policy(args))
    install_signal_handlers(supervisor)
    supervisor.start(settings, engine, moe_layers=plan.shape.num_moe_layers if plan.shape else None)
    last, shown_attempt = "", 0
    try:
        while True:
            snap = supervisor.snapshot()
            now = f"{snap.state.value}: {snap.phase_detail}"
            auto = snap.auto_restart if snap.state.value == "failed" else None
            if now != last or (auto is not None and auto.due_at is not None and auto.attempt != shown_attempt):
                print(f"[{snap.elapsed:6.1f}s] {now}", flush=True)
                if auto is not None:  # a death: why, then what happens next
                    if snap.diagnosis:
                        print(snap.diagnosis.render(), flush=True)
                    print(auto.describe(time.time()), flush=True)
                    shown_attempt = auto.attempt
                last = now
            if snap.state.value == "failed" and (auto is None or auto.gave_up):
                if auto is None and snap.diagnosis:
                    print(snap.diagnosis.render(), flush=True)
                return 1
            if snap.state.value == "stopped":
                return 0
            time.sleep(0.2)
    except KeyboardInterrupt:
        return 0
    finally:
        supervisor.close()


def _restart_policy(args: argparse.Namespace) -> RestartPolicy:
    """The profile's auto-restart policy; --auto-restart turns it on (with its limits, or the defaults)."""
    policy = load_profile(profile_path(args.profile)).restart if args.profile else RestartPolicy()
    return replace(policy, enabled=True) if args.auto_restart else policy


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m launch", description=__doc__)
    sub = parser.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("command", help="print the engine command (copyable)")
    _selection_args(p)
    p.set_defaults(func=cmd_command)
    p = sub.add_parser("check", help="run every preflight check; exit 1 on any error")
    _selection_args(p)
    p.set_defaults(func=cmd_check)
    p = sub.add_parser("doctor", help="print the hardware report")
    p.add_argument("--engine-python", help="Python of the engine's venv")
    p.set_defaults(func=cmd_doctor)
    p = sub.add_parser("advise", help="sizing advice with its breakdown")
    p.add_argument("--model-path", help="model folder (default: the bundled M3-shaped config)")
    p.add_argument("--tp", type=int, help="tensor-parallel size (default: GPUs found)")
    p.add_argument("--gpu-mem-gb", type=float, help="memory of one GPU in GB (default: detected)")
    p.add_argument("--mem-fraction", type=float, help="--mem-fraction-static (default: the seed's for the TP)")
    p.add_argument("--context", type=int, default=32_768, help="KV tokens to keep room for")
    p.set_defaults(func=cmd_advise)
    p = sub.add_parser("serve", help="preflight, then run the engine under supervision until Ctrl-C")
    _selection_args(p)
    p.add_argument("--run-root", type=Path, default=DEFAULT_RUN_ROOT,
                   help=f"folder for runs/ and the engine state file (default {DEFAULT_RUN_ROOT})")
    limits = RestartPolicy()
    p.add_argument("--auto-restart", action="store_true",
                   help=f"relaunch an engine that dies, with back-off (first after {limits.first_delay_s:g} s, "
                   f"doubling, at most {limits.max_attempts} in {limits.window_s / 60:g} minutes; a profile's "
                   "auto_restart sets other limits)")
    p.set_defaults(func=cmd_serve)
    add_placement_parser(sub, _selection_args, resolve, DEFAULT_RUN_ROOT)
    add_fleet_parser(sub, _selection_args, resolve, DEFAULT_RUN_ROOT)
    add_speed_parsers(sub, _selection_args, resolve, DEFAULT_RUN_ROOT)
    add_microbench_parser(sub, _selection_args, resolve)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except (SettingsError, ProfileError, ModelConfigError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
