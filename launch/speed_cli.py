"""`python -m launch probe | roofline | bench | tune`: is this speed normal for the hardware, and what should change.

probe: this host's figures (launch/host_probe.py). roofline: the speed a launch can reach on a host
(launch/roofline.py). bench: measure a running engine against it (launch/bench.py). tune: relaunch the engine
over a short, ordered search of the KT knobs and keep the best as a profile (launch/tune.py).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from launch.bench import QUICK_DECODE_TOKENS, BenchPlan, BenchResult
from launch.command import Engine
from launch.host_file import SIM_HOST_ENV, HostFigures, load_host_file, sim_host
from launch.model_config import load_shape_or_bundled
from launch.roofline import PROMPT_LENGTHS
from launch.settings import LaunchSettings
from launch.tune_search import TUNABLE

API_KEY_ENV = "M3UI_ENGINE_API_KEY"  # the engine's key for bench, never on the command line

Resolve = Callable[[argparse.Namespace], tuple[LaunchSettings, Engine]]


def host_for(args: argparse.Namespace) -> HostFigures:
    """--host-file, else the host the simulated engine plays (M3UI_SIM_HOST), else this host, probed quickly."""
    if getattr(args, "host_file", None):
        return load_host_file(args.host_file)
    played = sim_host()
    if played is not None:
        return played
    from launch.host_probe import probe_host

    return probe_host(quick=True)


def cmd_probe(args: argparse.Namespace) -> int:
    from launch.host_probe import format_probe, probe_host

    host = probe_host(quick=args.quick)
    print(host.to_json() if args.json else format_probe(host), end="" if args.json else "\n")
    return 0


def cmd_roofline(args: argparse.Namespace, resolve: Resolve) -> int:
    from launch.roofline import format_roofline, roofline

    settings, _ = resolve(args)
    host = host_for(args)
    result = roofline(load_shape_or_bundled(settings.model_path), settings, host)
    if args.json:
        print(json.dumps(result.to_json(), indent=2))
    else:
        print(format_roofline(result, settings))
    return 0


def _bench_plan(args: argparse.Namespace) -> BenchPlan:
    plan = BenchPlan(decode_tokens=QUICK_DECODE_TOKENS if args.quick else BenchPlan.decode_tokens, clock=args.clock)
    if args.quick:
        plan = replace(plan, prompt_lengths=PROMPT_LENGTHS[:2])
    if args.concurrency:
        plan = replace(plan, concurrency=tuple(args.concurrency))
    if args.prompt_lengths:
        plan = replace(plan, prompt_lengths=tuple(args.prompt_lengths))
    return plan


def cmd_bench(args: argparse.Namespace, resolve: Resolve, data_dir: Path) -> int:
    from launch.bench import BenchError, run_bench, shares
    from launch.bench_runs import ENDPOINT_ONLY, BenchRuns
    from launch.roofline import roofline

    settings = None
    if args.profile or args.preset:
        settings, _ = resolve(args)
    progress = (lambda line: print(line, file=sys.stderr, flush=True)) if args.json else print
    try:
        result = run_bench(args.endpoint, _bench_plan(args), os.environ.get(API_KEY_ENV) or
                           (settings.api_key if settings else None), progress)
    except BenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if settings is not None:
        ceiling = roofline(load_shape_or_bundled(settings.model_path), settings, host_for(args)).to_json()
        result.roofline = {**ceiling, "share": shares(result, ceiling)}  # type: ignore[arg-type]  # to_json() is dict[str, object]; shares() reads its figures
    name = Path(args.profile).stem if args.profile else (args.preset or ENDPOINT_ONLY)
    runs = BenchRuns(data_dir)
    previous = runs.runs(name)
    runs.save(name, {"endpoint": args.endpoint, **result.to_json()})
    if args.json:
        print(json.dumps(result.to_json(), indent=2))
        return 0
    print(format_bench(result, previous[-1] if previous else None))
    return 0


def format_bench(result: BenchResult, previous: dict[str, Any] | None) -> str:
    share = result.roofline.get("share", {}) if result.roofline else {}
    lines = []
    for key, unit in (("decode_tok_s", "request(s)"), ("prefill_tok_s", "prompt tokens")):
        for k, v in getattr(result, key).items():
            of = share.get(key, {}).get(k) if isinstance(share, dict) else None
            before = (previous or {}).get(key, {}).get(k)
            lines.append(f"{'decode' if key == 'decode_tok_s' else 'prefill'} {k:>6} {unit}: "
                         + ("n/a" if v is None else f"{v:8.1f} tok/s")
                         + (f"  ({of:.0%} of the roofline)" if of else "")
                         + (f"  (last run {before:.1f})" if before else ""))
    for key in ("ttft_ms", "itl_ms"):
        values = getattr(result, key)
        lines.append(f"{key[:-3].upper()} p50 {_ms(values.get('p50'))}, p99 {_ms(values.get('p99'))}")
    return "\n".join(lines)


def _ms(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1f} ms"


def cmd_tune(args: argparse.Namespace, resolve: Resolve, data_dir: Path) -> int:
    from launch.profile import ProfileStore
    from launch.supervisor import Supervisor
    from launch.tune import TuneError, Tuner, TuneRequest, check_knobs

    settings, engine = resolve(args)
    if args.budget_min <= 0:
        raise ValueError(f"--budget-min must be positive, got {args.budget_min:g}")
    if engine.kind == "sim" and args.host_file:
        os.environ[SIM_HOST_ENV] = str(args.host_file)  # the simulated engine plays the host tuned for
    name = Path(args.profile).stem if args.profile else (args.preset or "settings")
    progress = (lambda line: print(line, file=sys.stderr, flush=True)) if args.json else \
        (lambda line: print(line, flush=True))
    try:
        request = TuneRequest(settings, engine, load_shape_or_bundled(settings.model_path), host_for(args),
                              check_knobs(tuple(args.knobs)), args.budget_min * 60, name, args.microbench)
        result = Tuner(request, Supervisor(data_dir), ProfileStore(data_dir / "profiles"), data_dir, progress).run()
    except TuneError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(result.to_json(), indent=2))
    else:
        best = result.best or result.start
        print(f"best: decode {best.decode_tok_s or 0:.2f} tok/s ({result.gain:+.1%} over the start), "
              f"{result.relaunches} relaunches in {result.elapsed_s / 60:.1f} min"
              + (f"; load it with: python -m launch serve --profile {result.profile!r}" if result.profile else ""))
    return 130 if result.interrupted else 0


def add_speed_parsers(sub: argparse._SubParsersAction, selection_args: Callable[[argparse.ArgumentParser], None],
                      resolve: Resolve, data_dir: Path) -> None:
    p = sub.add_parser("probe", help="measure this host: memory bandwidth, cores, ISA, host settings, GPUs")
    p.add_argument("--json", action="store_true", help="print the host document (a --host-file for another machine)")
    p.add_argument("--quick", action="store_true", help="smaller buffers: about a second")
    p.set_defaults(func=cmd_probe)
    p = sub.add_parser("roofline", help="the decode and prefill tok/s a launch can reach on a host, with breakdown")
    selection_args(p)
    p.add_argument("--host-file", type=Path, help=f"a probe --json from the target host (default: ${SIM_HOST_ENV}, "
                   "else this host, probed)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=lambda args: cmd_roofline(args, resolve))
    p = sub.add_parser("bench", help="measure decode and prefill tok/s, TTFT and ITL of a running engine")
    p.add_argument("--endpoint", required=True, help="the engine's base URL, e.g. http://127.0.0.1:30000")
    p.add_argument("--quick", action="store_true", help=f"{QUICK_DECODE_TOKENS} tokens per decode request, prompts up "
                   "to 8K")
    p.add_argument("--json", action="store_true", help="print one JSON object (progress goes to stderr)")
    p.add_argument("--clock", choices=("wall", "engine"), default="wall",
                   help="wall: time the streamed tokens; engine: the engine's /metrics histograms")
    p.add_argument("--concurrency", type=int, nargs="+", metavar="N", help="requests at once (default 1 4 16)")
    p.add_argument("--prompt-lengths", type=int, nargs="+", metavar="TOKENS",
                   help="prefill prompt sizes (default 1024 8192 32768)")
    p.add_argument("--host-file", type=Path, help="the host for the roofline (as for roofline)")
    selection_args(p)
    p.set_defaults(func=lambda args: cmd_bench(args, resolve, data_dir))
    p = sub.add_parser("tune", help="relaunch the engine over an ordered search of the KT knobs; save the best")
    selection_args(p)
    p.add_argument("--knobs", nargs="+", default=list(TUNABLE), metavar="FIELD",
                   help=f"settings to tune (default: all of {' '.join(TUNABLE)})")
    p.add_argument("--budget-min", type=float, default=30.0, help="wall-clock budget in minutes (default 30)")
    p.add_argument("--host-file", type=Path, help="the host the search plans for (as for roofline)")
    p.add_argument("--microbench", action=argparse.BooleanOptionalAction, default=None,
                   help="choose kt_cpuinfer and the pools by timing kt-kernel's MoE layer in the engine's Python "
                   "before relaunching (default: on for --engine sglang)")
    p.add_argument("--json", action="store_true", help="print one JSON object (progress goes to stderr)")
    p.set_defaults(func=lambda args: cmd_tune(args, resolve, data_dir))
