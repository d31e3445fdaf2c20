"""How long the speed check takes: `probe` (quick and full), a roofline, and one tuner planning step.

Targets (issue 23): the probe measures the host "in a few seconds": --quick within 3 s, the full probe within
10 s on a small host (its buffers grow with the cores, so a 128-core box takes longer); a roofline and the
tuner's planning of every candidate (model optimum plus all single-knob variations) within 0.5 s, since the
admin's Tune tab recomputes the roofline every second. Best of 3 runs each; --check fails past a target, with --ci
(or CI=true) only past twice it (benchmarks/timing_gate.py).

    .venv/bin/python benchmarks/bench_speed_check.py [--check [--ci]]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.timing_gate import Gate, Timing, add_arguments  # noqa: E402
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
    add_arguments(parser)
    args = parser.parse_args()
    gate = Gate.from_args(args)
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
    timings = [Timing(name, seconds, TARGETS_S[name], " s") for name, seconds in figures.items()]
    failed = gate.failures(timings, [])
    print(json.dumps({"seconds": figures, "targets_s": TARGETS_S, "missed": failed}))
    return 1 if gate.check and failed else 0


if __name__ == "__main__":
    sys.exit(main())
