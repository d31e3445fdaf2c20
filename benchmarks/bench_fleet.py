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
[--check]`; `--check` is the short run (< 60 s) and exits 1 when a checked target is missed. The last line
printed is one JSON object with every figure.
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
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.update({"M3UI_SIM_STARTUP_SECONDS": "0.3", "M3UI_SIM_UNTHROTTLED": "0", "M3UI_SIM_DECODE_TPS": "40",
                   "M3UI_SIM_PREFILL_TPS": "20000"})

import openai  # noqa: E402
import psutil  # noqa: E402

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
    parser.add_argument("--check", action="store_true", help="short run; exit 1 when a checked target is missed")
    args = parser.parse_args(argv)
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
            rates: dict[int, list[float]] = {n: [] for n in range(1, WORKERS + 1)}
            used: dict[int, float] = {}
            busy: dict[int, float] = {}
            for n in (*range(1, WORKERS + 1), 1):  # one worker again last: the baseline spans any drift
                use_workers(url, urls[:n])
                cpu0, machine0, t0 = cpu_seconds(processes), psutil.cpu_times(), time.monotonic()
                rates[n].append(throughput(url, n * PER_WORKER_STREAMS, window_s))
                used[n] = (cpu_seconds(processes) - cpu0) / (time.monotonic() - t0)
                busy[n] = machine_busy(machine0, psutil.cpu_times())
            direct_ms, routed_ms = added_ttft_ms(url, urls[0], pairs)
        finally:
            router.stop(5.0)
            for pid in pids:
                terminate_group(pid, 5.0)
    return report(rates, used, busy, cores, direct_ms, routed_ms, time.monotonic() - began, args.check)


def machine_busy(before: object, after: object) -> float:
    """Share of the whole machine's CPU time that was not idle between two psutil.cpu_times() readings."""
    spent = {name: getattr(after, name) - getattr(before, name) for name in after._fields}  # type: ignore[attr-defined]
    total = sum(spent.values())
    return 1.0 - (spent.get("idle", 0.0) + spent.get("iowait", 0.0)) / total if total > 0 else 0.0


def report(measured: dict[int, list[float]], used: dict[int, float], busy: dict[int, float], cores: int,
           direct_ms: float, routed_ms: float, wall_s: float, check: bool) -> int:
    failed = []
    rates = {n: statistics.mean(runs) for n, runs in measured.items()}
    print(f"cores available: {cores} (load average {os.getloadavg()[0]:.1f}); policy round_robin; "
          f"{PER_WORKER_STREAMS} streams per worker, {ANSWER_TOKENS}-token answers")
    for n, rate in rates.items():
        ratio = rate / (n * rates[1])
        # The fleet shares the cores with everything else on the machine: near full, the cores cap the fleet.
        enough = busy[n] < HEADROOM and used[n] < HEADROOM * cores
        verdict = ("" if n == 1 else
                   f"target >= {SCALING_TARGET}: {'ok' if ratio >= SCALING_TARGET else 'MISSED'}" if enough else
                   f"not checked: the cores were the limit (machine {busy[n]:.0%} busy)")
        runs = " (" + ", ".join(f"{r:.1f}" for r in measured[n]) + ")" if len(measured[n]) > 1 else ""
        print(f"{n} worker(s): {rate:7.1f} tok/s{runs}  scaling {ratio:.2f}  cores used {used[n]:.2f} of {cores}, "
              f"machine {busy[n]:.0%} busy  {verdict}")
        if n > 1 and enough and ratio < SCALING_TARGET:
            failed.append(f"scaling with {n} workers {ratio:.2f} < {SCALING_TARGET}")
    added = routed_ms - direct_ms
    print(f"TTFT direct {direct_ms:.1f} ms, through the router {routed_ms:.1f} ms: the router adds {added:.1f} ms "
          f"(target < {ADDED_TTFT_TARGET_MS:g} ms)")
    if added >= ADDED_TTFT_TARGET_MS:
        failed.append(f"router adds {added:.1f} ms TTFT")
    print(f"wall {wall_s:.1f} s")
    for line in failed:
        print(f"MISSED: {line}")
    print(json.dumps({"cores": cores, "tok_s": measured, "cores_used": used, "machine_busy": busy,
                      "scaling": {n: r / (n * rates[1]) for n, r in rates.items()},
                      "ttft_direct_ms": direct_ms, "ttft_router_ms": routed_ms, "wall_s": wall_s}))
    return 1 if check and failed else 0


if __name__ == "__main__":
    sys.exit(main())
