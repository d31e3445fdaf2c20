"""What a fleet buys, measured with the real sglang-router in front of simulated engines on loopback.

1. Scaling: fleet throughput (completion tokens per second through the router) with 1, 2 and 3 workers at the
   same per-worker load (PER_WORKER_STREAMS streams each, every worker paced at the same simulated decode
   rate); the scaling ratio is throughput(N) / (N x throughput(1)), the target >= 0.9 per added worker. The
   simulated engines pace their answers in time, but each still burns CPU to stream; cores used = CPU seconds of
   the workers, the router and this process over the wall time. When those, or the whole machine (other work
   included), come near the cores available, the cores capped the fleet, and the report says so instead of
   checking the target.
2. The router's added time to first token: the same short chat sent to one worker directly and through the
   router, in alternating order (medians).

Workers and the router start once; the worker count changes through the router's worker API (removing and
adding workers), as the fleet supervisor does. Run from the repo root: `python benchmarks/bench_fleet.py
[--check [--ci]]`; `--check` is the short run (< 60 s) and exits 1 when a checked target is missed; both figures
are timings (best of up to 3 runs; with `--ci` or CI=true failing only past twice the target, see
benchmarks/timing_gate.py). The last line printed is one JSON object with every figure.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.update({"M3UI_SIM_STARTUP_SECONDS": "0.3", "M3UI_SIM_UNTHROTTLED": "0", "M3UI_SIM_DECODE_TPS": "40",
                   "M3UI_SIM_PREFILL_TPS": "20000"})

import openai  # noqa: E402
import psutil  # noqa: E402

from benchmarks.timing_gate import Gate, Timing, add_arguments  # noqa: E402
from launch.command import Engine, build_command  # noqa: E402
from launch.fleet.commands import router_command  # noqa: E402
from launch.fleet.router_api import add_worker, list_workers, remove_worker, router_healthy  # noqa: E402
from launch.fleet.router_process import RouterProcess  # noqa: E402
from launch.fleet.router_settings import RouterSettings  # noqa: E402
from launch.fleet.spec import AttachedWorker, Fleet  # noqa: E402
from launch.health import probe_readiness  # noqa: E402
from launch.preflight import free_port  # noqa: E402
from launch.presets import single_gpu  # noqa: E402
from launch.process_group import spawn, terminate_group  # noqa: E402

WORKERS = 3
PER_WORKER_STREAMS = 4
ANSWER_TOKENS = 24
WARMUP_S = 1.5
HEADROOM = 0.7  # below this share of the cores in use, the cores were not what limited the fleet
SCALING_TARGET = 0.9
ADDED_TTFT_TARGET_MS = 25.0
NO_THINKING = {"chat_template_kwargs": {"thinking_mode": "disabled"}}


def start_workers(folder: Path) -> tuple[list[str], list[int]]:
    urls, pids = [], []
    for i in range(WORKERS):
        settings = single_gpu().replace(host="127.0.0.1", port=free_port())
        popen = spawn(build_command(settings, Engine("sim")), folder / f"worker-{i}.log")
        urls.append(f"http://127.0.0.1:{settings.port}")
        pids.append(popen.pid)
    wait(lambda: all(probe_readiness(u).ready for u in urls), 120, "workers ready")
    return urls, pids


def wait(condition: object, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():  # type: ignore[operator]
            return
        time.sleep(0.1)
    raise RuntimeError(f"timed out waiting for {what}")


def use_workers(router: str, urls: list[str]) -> None:
    """Make the router's worker list exactly `urls`."""
    for listed in list_workers(router):
        if listed.url not in urls:
            remove_worker(router, listed)
    for url in set(urls) - {w.url for w in list_workers(router)}:
        add_worker(router, url)
    wait(lambda: sorted(w.url for w in list_workers(router) if w.healthy) == sorted(urls), 30, "worker list")


def stream_once(client: openai.OpenAI, prompt: str, max_tokens: int,
                counted: list[float] | None = None) -> float:
    """Seconds to the first content token; with `counted`, the arrival time of every content chunk (the engine
    streams one token per chunk) is appended to it."""
    started = time.monotonic()
    first = float("nan")
    stream = client.chat.completions.create(
        model="MiniMax-M3", messages=[{"role": "user", "content": prompt}], stream=True, max_tokens=max_tokens,
        extra_body=NO_THINKING)
    for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content:
            now = time.monotonic()
            if first != first:
                first = now - started
            if counted is not None:
                counted.append(now)
    return first


def throughput(router: str, streams: int, seconds: float) -> float:
    """Tokens per second that `streams` clients, asking back to back, receive during `seconds` after a warm-up."""
    client = openai.OpenAI(base_url=f"{router}/v1", api_key="EMPTY", max_retries=0, timeout=60)
    begin = time.monotonic() + WARMUP_S
    end = begin + seconds
    arrivals: list[list[float]] = [[] for _ in range(streams)]

    def client_loop(n: int) -> None:
        k = 0
        while time.monotonic() < end:
            stream_once(client, f"Client {n} request {k}: tell me a story about rivers.", ANSWER_TOKENS, arrivals[n])
            k += 1

    threads = [threading.Thread(target=client_loop, args=(n,)) for n in range(streams)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return sum(begin <= t < end for times in arrivals for t in times) / seconds


def cpu_seconds(processes: list[psutil.Process]) -> float:
    total = 0.0
    for process in processes:
        try:
            times = process.cpu_times()
            total += times.user + times.system
        except psutil.Error:
            continue
    return total


def added_ttft_ms(router: str, worker: str, pairs: int) -> tuple[float, float]:
    """Median TTFT direct and through the router, in ms."""
    clients = {name: openai.OpenAI(base_url=f"{url}/v1", api_key="EMPTY", max_retries=0, timeout=60)
               for name, url in (("direct", worker), ("router", router))}
    ttft: dict[str, list[float]] = {"direct": [], "router": []}
    for i in range(pairs):
        order = ("direct", "router") if i % 2 == 0 else ("router", "direct")
        for name in order:
            ttft[name].append(stream_once(clients[name], f"Pair {i}: say hi.", 4) * 1000)
    return statistics.median(ttft["direct"]), statistics.median(ttft["router"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_arguments(parser, "short run; exit 1 when a checked target is missed")
    args = parser.parse_args(argv)
    gate = Gate.from_args(args)
    window_s, pairs = (4.0, 10) if args.check else (30.0, 60)
    cores = len(os.sched_getaffinity(0))
    began = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="m3ui-bench-fleet-") as tmp:
        folder = Path(tmp)
        urls, pids = start_workers(folder)
        router_settings = RouterSettings(port=free_port(), policy="round_robin")
        router_settings = router_settings.replace(prometheus_port=free_port())
        fleet = Fleet(router_settings, tuple(AttachedWorker(u) for u in urls), Engine("sim"))
        router = RouterProcess(router_command(fleet), folder)
        try:
            url = router_settings.url
            wait(lambda: router_healthy(url) and sum(w.healthy for w in list_workers(url)) == WORKERS, 60, "router")
            processes = [psutil.Process(p) for p in (*pids, router.pid)] + [psutil.Process()]
            # scaling and the router's TTFT are timings: best of up to 3 runs, CI failing only past twice the target
            runs, best = gate.best_of(lambda: measure(url, urls, processes, window_s, pairs),
                                      lambda run: timings(run, cores))
        finally:
            router.stop(5.0)
            for pid in pids:
                terminate_group(pid, 5.0)
    for run in runs:
        report(run, cores)
    wall_s = time.monotonic() - began
    print(f"wall {wall_s:.1f} s, {len(runs)} run(s)")
    failed = gate.failures(best, [])
    last = runs[-1]
    rates = {n: statistics.mean(r) for n, r in last.measured.items()}
    print(json.dumps({"cores": cores, "tok_s": last.measured, "cores_used": last.used, "machine_busy": last.busy,
                      "scaling": {n: r / (n * rates[1]) for n, r in rates.items()},
                      "ttft_direct_ms": last.direct_ms, "ttft_router_ms": last.routed_ms, "wall_s": wall_s,
                      "runs_taken": len(runs), "timings_best": {t.name: round(t.value, 4) for t in best}}))
    return 1 if args.check and failed else 0


@dataclass(frozen=True)
class FleetRun:
    measured: dict[int, list[float]]  # tok/s with n workers (1 worker twice: first and last)
    used: dict[int, float]  # cores used with n workers
    busy: dict[int, float]  # the whole machine's busy share with n workers
    direct_ms: float
    routed_ms: float


def measure(url: str, urls: list[str], processes: list[psutil.Process], window_s: float, pairs: int) -> FleetRun:
    rates: dict[int, list[float]] = {n: [] for n in range(1, WORKERS + 1)}
    used: dict[int, float] = {}
    busy: dict[int, float] = {}
    for n in (*range(1, WORKERS + 1), 1):  # one worker again last: the baseline spans any drift
        use_workers(url, urls[:n])
        cpu0, machine0, t0 = cpu_seconds(processes), psutil.cpu_times(), time.monotonic()
        rates[n].append(throughput(url, n * PER_WORKER_STREAMS, window_s))
        used[n] = (cpu_seconds(processes) - cpu0) / (time.monotonic() - t0)
        busy[n] = machine_busy(machine0, psutil.cpu_times())
    return FleetRun(rates, used, busy, *added_ttft_ms(url, urls[0], pairs))


def machine_busy(before: object, after: object) -> float:
    """Share of the whole machine's CPU time that was not idle between two psutil.cpu_times() readings."""
    spent = {name: getattr(after, name) - getattr(before, name) for name in after._fields}  # type: ignore[attr-defined]
    total = sum(spent.values())
    return 1.0 - (spent.get("idle", 0.0) + spent.get("iowait", 0.0)) / total if total > 0 else 0.0


def cores_enough(run: FleetRun, n: int, cores: int) -> bool:
    """The fleet shares the cores with everything else on the machine: near full, the cores cap the fleet."""
    return run.busy[n] < HEADROOM and run.used[n] < HEADROOM * cores


def timings(run: FleetRun, cores: int) -> list[Timing]:
    rates = {n: statistics.mean(r) for n, r in run.measured.items()}
    return [*(Timing(f"scaling with {n} workers", rates[n] / (n * rates[1]), SCALING_TARGET, ratio=True)
              for n in rates if n > 1 and cores_enough(run, n, cores)),
            Timing("TTFT the router adds", run.routed_ms - run.direct_ms, ADDED_TTFT_TARGET_MS, " ms")]


def report(run: FleetRun, cores: int) -> None:
    rates = {n: statistics.mean(r) for n, r in run.measured.items()}
    print(f"cores available: {cores} (load average {os.getloadavg()[0]:.1f}); policy round_robin; "
          f"{PER_WORKER_STREAMS} streams per worker, {ANSWER_TOKENS}-token answers")
    for n, rate in rates.items():
        ratio = rate / (n * rates[1])
        verdict = ("" if n == 1 or cores_enough(run, n, cores) else
                   f"not checked: the cores were the limit (machine {run.busy[n]:.0%} busy)")
        runs = " (" + ", ".join(f"{r:.1f}" for r in run.measured[n]) + ")" if len(run.measured[n]) > 1 else ""
        print(f"{n} worker(s): {rate:7.1f} tok/s{runs}  scaling {ratio:.2f}  cores used {run.used[n]:.2f} of "
              f"{cores}, machine {run.busy[n]:.0%} busy  {verdict}")
    print(f"TTFT direct {run.direct_ms:.1f} ms, through the router {run.routed_ms:.1f} ms: the router adds "
          f"{run.routed_ms - run.direct_ms:.1f} ms (target < {ADDED_TTFT_TARGET_MS:g} ms)")


if __name__ == "__main__":
    sys.exit(main())
