"""What the monitor costs: the sampler's CPU per tick against the simulated engine serving chats, the reading
of a worst-case M3 recorder dump, and the size of the heatmap sent to the browser per refresh.

Targets (issue 5): at most 2% of one core at 1 Hz, i.e. 20 ms of CPU per tick on average, and at most
~25 kB per heatmap refresh.
- Tick: `Sampler.sample_once()` against a running sim (`python -m launch.sim`, recorder `stat`, GPU masks,
  a 1000-pass ring: a 31 MB dump each time) while two clients chat with it: the process tree, GPUs, CPU,
  /v1/loads, /metrics, and a recorder dump read and deleted and its heatmap rendered. Measured with and
  without the dump (the sampler dumps every 5 s, so the average tick at 1 Hz is 4 without and 1 with).
  Only the sampling thread's CPU time counts, not the engine's (another process).
- Dump read: a [1000, 60, 128] ring in which every row was written, with per-pass masks, written by the
  sim's own `torch.save` writer: the worst case for reading.
- Heatmap: random counts over 60 x 128 experts (the hardest case for PNG).

    .venv/bin/python benchmarks/bench_sampler.py [--ticks N] [--check [--ci]]
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.timing_gate import Gate, Timing, add_arguments  # noqa: E402
from launch.model_config import load_model_shape  # noqa: E402
from launch.presets import single_gpu, with_expert_monitoring  # noqa: E402
from m3ui.experts.dump_reader import read_dump  # noqa: E402
from m3ui.experts.heatmap import png_data_url, render_heatmap  # noqa: E402
from m3ui.experts.recorder_files import list_dump_files, pair_dumps  # noqa: E402
from m3ui.monitor.sampler import Sampler, SamplerConfig  # noqa: E402
from m3ui.monitor.target import target_for_launch  # noqa: E402
from tests.sim_process import free_port, running_sim  # noqa: E402
from torchzip.writer import save_tensors  # noqa: E402

TICK_CPU_TARGET_S = 0.020  # 2% of one core at 1 Hz
HEATMAP_TARGET_BYTES = 25_000
BUFFER_ROWS = 1000
DUMP_EVERY_TICKS = round(SamplerConfig().expert_dump_every_s / SamplerConfig().interval_s)


def _cpu_times(action: Callable[[], object], runs: int) -> list[float]:
    costs = []
    for _ in range(runs):
        started = time.thread_time()
        action()
        costs.append(time.thread_time() - started)
    return costs


def _report(name: str, costs: list[float]) -> float:
    mean, p95 = statistics.fmean(costs), sorted(costs)[int(0.95 * (len(costs) - 1))]
    print(f"{name}: CPU mean {mean * 1000:.1f} ms, p95 {p95 * 1000:.1f} ms")
    return mean


def _chat_forever(url: str, topic: str, stop: threading.Event) -> None:
    body = {"model": "m", "messages": [{"role": "user", "content": topic}], "max_tokens": 200}
    with httpx.Client(timeout=60, trust_env=False) as client:
        while not stop.is_set():
            client.post(f"{url}/v1/chat/completions", json=body)


def bench_ticks(ticks: int) -> float:
    """Average CPU per tick at 1 Hz with a dump every DUMP_EVERY_TICKS ticks."""
    with tempfile.TemporaryDirectory() as folder:
        settings = with_expert_monitoring(single_gpu(), BUFFER_ROWS).replace(host="127.0.0.1", port=free_port())
        env = {"SGLANG_EXPERT_DISTRIBUTION_RECORDER_DIR": folder, "M3UI_SIM_UNTHROTTLED": "0",
               "M3UI_SIM_DECODE_TPS": "60"}
        with running_sim(settings, env) as sim:
            stop = threading.Event()
            clients = [threading.Thread(target=_chat_forever, args=(sim.url, topic, stop), daemon=True)
                       for topic in ("a poem about the sea", "how do tides work")]
            for client in clients:
                client.start()
            target = target_for_launch(settings, sim.proc.pid, Path(folder), load_model_shape(None))
            with_dump = Sampler(target)
            without_dump = Sampler(dataclasses.replace(target, recorder_dir=None))  # never drives the recorder
            try:
                for sampler in (with_dump, without_dump):
                    _cpu_times(sampler.sample_once, 2)  # recorder started, caches and imports warm
                time.sleep(1.0)  # the engine routes a second of decoding into the ring
                # with the heatmap a watching browser makes the sampler render once per dump
                dumping = _report("tick with a recorder dump and its heatmap",
                                  _cpu_times(lambda: with_dump.sample_once().experts.heatmap_data_url, ticks))
                plain = _report("tick without", _cpu_times(without_dump.sample_once, ticks))
                assert with_dump.latest().experts.activations > 0, with_dump.latest().experts
            finally:
                stop.set()
                with_dump.stop()
                without_dump.stop()
    average = (dumping + (DUMP_EVERY_TICKS - 1) * plain) / DUMP_EVERY_TICKS
    print(f"average tick, one dump every {DUMP_EVERY_TICKS}: {average * 1000:.1f} ms = {average * 100:.1f}% of one "
          f"core at 1 Hz (target {TICK_CPU_TARGET_S * 100:.0f}%)")
    return average


def bench_dump_read(runs: int) -> None:
    shape = load_model_shape(None)
    rng = np.random.default_rng(0)
    cells = (BUFFER_ROWS, shape.num_layers, shape.num_routed_experts)
    counts = np.zeros(cells, dtype=np.int32)
    moe = list(shape.moe_layer_ids)
    counts[:, moe, :] = rng.integers(0, 40, (BUFFER_ROWS, len(moe), shape.num_routed_experts), dtype=np.int32)
    masks = np.zeros(cells, dtype=bool)
    masks[:, moe, :24] = True
    masks[::2, moe, :] = np.roll(masks[::2, moe, :], 1, axis=2)  # placement moving (dynamic expert update)
    with tempfile.TemporaryDirectory() as folder:
        now = time.time()
        save_tensors(Path(folder) / f"expert_distribution_recorder_{now}.pt",
                     {"rank": 0, "logical_count": counts, "average_utilization_rate_over_window": None},
                     device="cuda:0")
        save_tensors(Path(folder) / f"gpu_expert_distribution_{now}.pt", {"gpu_expert_masks": masks})
        (pair,) = pair_dumps(list_dump_files(Path(folder)))
        _report("worst-case dump read (every row written, placement moving)",
                _cpu_times(lambda: read_dump(pair, None), runs))


def bench_heatmap() -> int:
    shape = load_model_shape(None)
    counts = np.random.default_rng(1).integers(0, 5000, (shape.num_layers, shape.num_routed_experts))
    residency = np.zeros(counts.shape, dtype=bool)
    residency[:, :24] = True
    size = len(png_data_url(render_heatmap(counts, residency)))
    print(f"heatmap refresh: {size} bytes as a data URL (target {HEATMAP_TARGET_BYTES}; random counts)")
    return size


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ticks", type=int, default=10)
    add_arguments(parser, "exit 1 when a figure is over its target")
    args = parser.parse_args()
    gate = Gate.from_args(args)
    # the tick's CPU is a timing (best of up to 3 runs; CI fails only past twice it); the heatmap's size is not
    _, best = gate.best_of(lambda: bench_ticks(args.ticks), lambda average: [
        Timing("sampler CPU per tick at 1 Hz", average * 1000, TICK_CPU_TARGET_S * 1000, " ms")])
    bench_dump_read(args.ticks)
    size = bench_heatmap()
    return gate.exit_code(best, [] if size <= HEATMAP_TARGET_BYTES else [f"heatmap {size} bytes as a data URL "
                                                                          f"> {HEATMAP_TARGET_BYTES}"])


if __name__ == "__main__":
    sys.exit(main())
