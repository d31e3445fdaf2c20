"""What the monitor costs: the sampler's CPU per tick with a full M3-sized recorder dump read every tick, and
the size of the heatmap sent to the browser per refresh.

Targets (issue 5): at most 2% of one core at 1 Hz, i.e. 20 ms of CPU per tick, and at most ~25 kB per
heatmap refresh. Each tick samples the process tree, GPUs, CPU, /v1/loads, and dumps and reads a
[1000, 60, 128] recorder ring in which every row was written (the worst case for reading). The engine is a
stand-in HTTP server on 127.0.0.1 in this process; only the sampling thread's CPU time is counted, not the
server's nor the writing of the dumps.

    .venv/bin/python benchmarks/bench_sampler.py [--ticks N] [--check]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from launch.model_config import load_model_shape  # noqa: E402
from m3ui.monitor.sampler import Sampler, SamplerConfig  # noqa: E402
from m3ui.monitor.target import MonitorTarget  # noqa: E402
from tests.monitor_fake_engine import FakeEngine, FakeRecorder  # noqa: E402

TICK_CPU_TARGET_S = 0.020  # 2% of one core at 1 Hz
HEATMAP_TARGET_BYTES = 25_000
BUFFER_ROWS = 1000


def _fill_ring(recorder: FakeRecorder, rng: np.random.Generator, gpu: np.ndarray, moving: bool) -> None:
    """Every row written, as after a busy second; `moving`: the placement changes from pass to pass."""
    moe = np.flatnonzero(gpu.any(axis=1))
    recorder.counts[:, moe, :] = rng.integers(0, 40, (BUFFER_ROWS, moe.size, recorder.experts), dtype=np.int32)
    recorder.gpu[:] = gpu
    if moving:
        recorder.gpu[::2, moe, :] = np.roll(gpu[moe], 1, axis=1)


def _measure(sampler: Sampler, recorder: FakeRecorder, ticks: int, moving: bool) -> list[float]:
    rng = np.random.default_rng(0)
    gpu = np.zeros((recorder.layers, recorder.experts), dtype=bool)
    gpu[3:, :24] = True
    costs = []
    for _ in range(ticks):
        _fill_ring(recorder, rng, gpu, moving)  # the engine's work, not counted
        started = time.thread_time()
        snapshot = sampler.sample_once()
        assert snapshot.experts.heatmap_data_url  # what one browser watching the panel costs
        costs.append(time.thread_time() - started)
        assert snapshot.experts.status == "recording", snapshot.experts
    return costs


def _report(name: str, costs: list[float]) -> float:
    mean, p95 = statistics.fmean(costs), sorted(costs)[int(0.95 * (len(costs) - 1))]
    print(f"{name}: CPU per tick mean {mean * 1000:.1f} ms, p95 {p95 * 1000:.1f} ms "
          f"= {mean * 100:.1f}% of one core at 1 Hz (target {TICK_CPU_TARGET_S * 100:.0f}%)")
    return mean


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ticks", type=int, default=20)
    parser.add_argument("--check", action="store_true", help="exit 1 when a figure is over its target")
    args = parser.parse_args()
    shape = load_model_shape(None)  # the bundled M3 config: 60 layers x 128 experts
    with tempfile.TemporaryDirectory() as folder:
        recorder = FakeRecorder(Path(folder), BUFFER_ROWS, shape.num_layers, shape.num_routed_experts)
        with FakeEngine(recorder) as engine:
            target = MonitorTarget(engine_url=engine.url, engine_pid=os.getpid(), recorder_dir=Path(folder))
            sampler = Sampler(target, SamplerConfig())
            sampler.sample_once()  # starts the recorder
            _measure(sampler, recorder, 2, moving=False)  # warm caches and imports
            static = _report("static placement", _measure(sampler, recorder, args.ticks, moving=False))
            _report("placement moving every pass (dynamic expert update)",
                    _measure(sampler, recorder, max(args.ticks // 2, 2), moving=True))
            heatmap = sampler.latest().experts.heatmap_data_url or ""
            sampler.stop()
    print(f"heatmap refresh: {len(heatmap)} bytes as a data URL (target {HEATMAP_TARGET_BYTES}; random counts, "
          "the hardest case for PNG)")
    over = static > TICK_CPU_TARGET_S or len(heatmap) > HEATMAP_TARGET_BYTES
    if args.check and over:
        print("OVER TARGET", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
