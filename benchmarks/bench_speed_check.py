"""How long the speed check takes: `probe` (quick and full), a roofline, and one tuner planning step.

Targets (issue 23): the probe measures the host "in a few seconds": --quick within 3 s, the full probe within
10 s on a small host (its buffers grow with the cores, so a 128-core box takes longer); a roofline and the
tuner's planning of every candidate (model optimum plus all single-knob variations) within 0.5 s, since the
admin's Tune tab recomputes the roofline every second. Best of up to 3 runs; --check fails only past 2x target.

    .venv/bin/python benchmarks/bench_speed_check.py [--check]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from launch.host_file import load_host_file  # noqa: E402
from launch.host_probe import probe_host  # noqa: E402
from launch.model_config import load_model_shape  # noqa: E402
from launch.presets import single_gpu  # noqa: E402
from launch.roofline import roofline  # noqa: E402
from launch.tune_search import TUNABLE, model_optimum, variations  # noqa: E402

HOST_FILE = Path(__file__).resolve().parent.parent / "tests" / "data" / "hosts" / "two-socket-h200.json"
TARGETS_S = {"probe_quick": 3.0, "probe_full": 10.0, "roofline": 0.5, "tune_plan": 0.5}
RUNS = 3


def best_of(action: Callable[[], object], runs: int = RUNS) -> float:
    times = []
    for _ in range(runs):
        began = time.perf_counter()
        action()
        times.append(time.perf_counter() - began)
    return min(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when a figure is past twice its target")
    args = parser.parse_args()
    shape, host, settings = load_model_shape(None), load_host_file(HOST_FILE), single_gpu()

    def plan() -> None:
        optimum = model_optimum(shape, settings, host, TUNABLE)
        variations(shape, optimum.settings, host, TUNABLE)

    figures = {
        "probe_quick": best_of(lambda: probe_host(quick=True)),
        "probe_full": best_of(lambda: probe_host(quick=False)),
        "roofline": best_of(lambda: roofline(shape, settings, host)),
        "tune_plan": best_of(plan),
    }
    missed = []
    for name, seconds in figures.items():
        target = TARGETS_S[name]
        verdict = "ok" if seconds <= target else ("MISSED" if seconds > 2 * target else "over target, within 2x")
        print(f"{name:12} {seconds:7.3f} s   target {target:g} s   {verdict}")
        if seconds > 2 * target:
            missed.append(name)
    print(json.dumps({"seconds": figures, "targets_s": TARGETS_S, "missed": missed}))
    return 1 if args.check and missed else 0


if __name__ == "__main__":
    sys.exit(main())
