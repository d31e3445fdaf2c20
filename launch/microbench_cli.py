"""`python -m launch microbench`: time kt-kernel's MoE layer in the engine's Python for a few (kt_cpuinfer,
kt_threadpool_count) settings and print the fastest (what `tune` starts from on a real engine)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable

from launch.command import Engine
from launch.microbench import KernelShape, MicrobenchError, PoolSetting, run_microbench
from launch.model_config import load_shape_or_bundled
from launch.settings import LaunchSettings
from launch.tune_search import pool_candidates

Resolve = Callable[[argparse.Namespace], tuple[LaunchSettings, Engine]]


def cmd_microbench(args: argparse.Namespace, resolve: Resolve) -> int:
    from launch.speed_cli import host_for

    settings, engine = resolve(args)
    for name in ("threads", "pools"):
        bad = [n for n in getattr(args, name) or () if n < 1]
        if bad:
            raise ValueError(f"--{name} takes whole numbers from 1, got {bad[0]}")
    if args.seconds <= 0 or args.prefill_tokens < 1:
        raise ValueError("--seconds must be positive and --prefill-tokens at least 1")
    shape = load_shape_or_bundled(settings.model_path)
    host = host_for(args)
    (start_threads, start_pools), threads, pools = pool_candidates(shape, settings, host)
    start = PoolSetting(start_threads, start_pools)
    threads, pools = args.threads or threads, args.pools or pools
    kernel = KernelShape.of_model(shape)
    if args.experts:
        kernel = KernelShape(args.experts, kernel.hidden_size, kernel.intermediate_size, kernel.top_k,
                             kernel.moe_layers)
    progress = (lambda line: print(line, file=sys.stderr, flush=True)) if args.json else print
    try:
        result = run_microbench(args.python or engine.python, kernel, threads, pools, start,
                                settings.kt_method, args.prefill_tokens, args.seconds, progress,
                                settings.kt_numa_nodes)
    except MicrobenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(result.to_json(), indent=2))
    else:
        best = result.best
        assert best is not None  # run_microbench raises when nothing ran
        print(f"fastest: --kt-cpuinfer {best.setting.kt_cpuinfer} --kt-threadpool-count "
              f"{best.setting.kt_threadpool_count}: {best.decode_ms:.2f} ms per layer and token "
              f"(a {best.model_decode_tok_s(kernel):.1f} tok/s ceiling with every expert on the CPU)")
    return 0


def add_microbench_parser(sub: argparse._SubParsersAction, selection_args: Callable[[argparse.ArgumentParser], None],
                          resolve: Resolve) -> None:
    p = sub.add_parser("microbench", help="time kt-kernel's MoE layer for a few kt_cpuinfer / thread pool settings")
    selection_args(p)
    p.add_argument("--python", help="the engine venv's Python, where kt-kernel is (default: --engine-python)")
    p.add_argument("--threads", type=int, nargs="+", metavar="N", help="kt_cpuinfer values (default: the tuner's)")
    p.add_argument("--pools", type=int, nargs="+", metavar="N", help="kt_threadpool_count values (default: the "
                   "tuner's)")
    p.add_argument("--experts", type=int, help="experts in the layer (default: the model's, fewer if RAM is short)")
    p.add_argument("--prefill-tokens", type=int, default=256, help="tokens of the prefill chunk timed (default 256)")
    p.add_argument("--seconds", type=float, default=1.0, help="timing per setting and phase (default 1)")
    p.add_argument("--json", action="store_true", help="print one JSON object (progress goes to stderr)")
    p.set_defaults(func=lambda args: cmd_microbench(args, resolve))
