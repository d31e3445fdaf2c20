"""What the API gateway (m3ui/gateway/) costs, measured side by side against the same simulated engine direct.

1. TTFT added: streamed chat requests one at a time, alternating direct and through the gateway; the median time
   to the first content token through the gateway minus the median direct.
2. App CPU per forwarded token: the app process's CPU time while 64 streams run through the gateway, less its CPU
   over as long idle, divided by the tokens the clients received.
3. Concurrency: 64 streams at once direct, then 64 through the gateway, twice, interleaved; the best tokens per
   second through the gateway as a share of the best direct.
4. The yardstick for 2: the same 64 streams through a bare byte relay (benchmarks/relay_floor.py, its own
   process), its CPU per token: the socket calls and event-loop wake-ups that any Python relay pays on this host.
   Printed beside the gateway's figure (`relay_floor_cpu_ms_per_token`), not judged.

Run from the repo root: `python benchmarks/bench_gateway.py [--check [--ci]]`. Targets: TTFT added <= 3 ms, CPU
<= 0.02 ms per token, concurrency >= 0.95. All three are timings, judged by benchmarks/timing_gate.py: with
--check each is the best of up to 3 runs (a run is repeated only while one misses) and fails past its target; with
--ci (or CI=true) only past twice it (the ratio: below 1 - 2 x (1 - target)). The last line printed is one JSON
object with the three figures (gateway_added_ttft_ms, gateway_cpu_ms_per_token, gateway_concurrency_ratio: each
its best over the runs) and every run's figures.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import aiohttp  # noqa: E402
import psutil  # noqa: E402

from benchmarks.timing_gate import Gate, Timing, add_arguments  # noqa: E402
from m3ui.accounts import AccountStore  # noqa: E402
from m3ui.accounts.keys import ApiKeyStore  # noqa: E402
from tests.app_process import free_port, running_app  # noqa: E402

TTFT_TARGET_MS = 3.0
CPU_TARGET_MS = 0.02
# Not reached on the 2-core host (0.05-0.07 ms measured, where the bare relay alone costs 0.03; docs/GATEWAY.md):
# CI fails past about 3x the figure measured there
CPU_OPEN_CI_BOUND_MS = 0.15
CONCURRENCY_TARGET = 0.95
STREAMS = 64
TTFT_ROUNDS = 40
DECODE_TPS = "200"  # per stream: 64 streams make ~12,800 tokens/s through the app
QUESTION = "Write a long story about a lighthouse keeper and the sea, in many paragraphs."
MAX_TOKENS = 400


@dataclass
class Figures:
    gateway_added_ttft_ms: float
    direct_ttft_ms: float
    gateway_cpu_ms_per_token: float
    gateway_concurrency_ratio: float
    direct_tokens_per_s: float
    gateway_tokens_per_s: float
    tokens_per_run: int
    relay_floor_cpu_ms_per_token: float

    def timings(self) -> list[Timing]:
        return [Timing("gateway_added_ttft_ms", self.gateway_added_ttft_ms, TTFT_TARGET_MS, " ms"),
                Timing("gateway_cpu_ms_per_token", self.gateway_cpu_ms_per_token, CPU_TARGET_MS, " ms",
                       open_ci_bound=CPU_OPEN_CI_BOUND_MS),
                Timing("gateway_concurrency_ratio", self.gateway_concurrency_ratio, CONCURRENCY_TARGET, ratio=True)]


def body(stream: bool = True) -> dict[str, object]:
    return {"model": "MiniMax-M3", "messages": [{"role": "user", "content": QUESTION}], "stream": stream,
            "max_tokens": MAX_TOKENS, "stream_options": {"include_usage": True}}


async def one_stream(client: aiohttp.ClientSession, url: str, headers: dict[str, str]) -> tuple[float, int]:
    """(seconds to the first content token, content tokens received). The client reads with aiohttp and counts
    in raw bytes: on a small machine its own CPU would otherwise slow the engine and the app it measures."""
    start = time.perf_counter()
    first, tokens = 0.0, 0
    async with client.post(url, json=body(), headers=headers) as reply:
        reply.raise_for_status()
        async for data in reply.content.iter_any():
            found = data.count(b'"content":"')
            if found and not first:
                first = time.perf_counter() - start
            tokens += found
    return first, tokens


def session(streams: int) -> aiohttp.ClientSession:
    return aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=streams + 4),
                                 timeout=aiohttp.ClientTimeout(total=300))


async def ttft(direct: tuple[str, dict[str, str]], gateway: tuple[str, dict[str, str]]) -> tuple[float, float]:
    """Median TTFT (ms) direct and through the gateway, alternating."""
    times: dict[int, list[float]] = {0: [], 1: []}
    async with session(1) as client:
        for _ in range(3):  # warm both paths
            for url, headers in (direct, gateway):
                await one_stream(client, url, headers)
        for n in range(TTFT_ROUNDS):
            for side in ((0, 1) if n % 2 else (1, 0)):
                url, headers = (direct, gateway)[side]
                times[side].append((await one_stream(client, url, headers))[0] * 1000)
    return statistics.median(times[0]), statistics.median(times[1])


async def many(url: str, headers: dict[str, str]) -> tuple[float, int]:
    """Wall seconds for STREAMS streams at once, and the tokens they received."""
    async with session(STREAMS) as client:
        start = time.perf_counter()
        results = await asyncio.gather(*(one_stream(client, url, headers) for _ in range(STREAMS)))
        return time.perf_counter() - start, sum(tokens for _, tokens in results)


def cpu_s(process: psutil.Process) -> float:
    times = process.cpu_times()
    return times.user + times.system


def measure(app_url: str, engine_url: str, key: str, app_pid: int, relay: tuple[str, int]) -> Figures:
    """`relay`: the bare relay's URL and process id."""
    direct = (engine_url + "/v1/chat/completions", {})
    gateway = (app_url + "/v1/chat/completions", {"authorization": f"Bearer {key}"})
    direct_ttft, gateway_ttft = asyncio.run(ttft(direct, gateway))
    process = psutil.Process(app_pid)
    rates: dict[str, list[float]] = {"direct": [], "gateway": []}
    cpu_per_token: list[float] = []
    floor_per_token: list[float] = []
    relay_process = psutil.Process(relay[1])
    for _ in range(2):  # interleaved, each side's best: a busy moment of the host hits one round, not one side
        seconds, tokens = asyncio.run(many(*direct))
        rates["direct"].append(tokens / seconds)
        before = cpu_s(process)
        seconds, tokens = asyncio.run(many(*gateway))
        busy = cpu_s(process) - before
        rates["gateway"].append(tokens / seconds)
        before = cpu_s(process)
        time.sleep(seconds)
        idle = cpu_s(process) - before
        cpu_per_token.append(max(0.0, busy - idle) * 1000 / max(1, tokens))
        before = cpu_s(relay_process)  # idle, the relay uses none
        _, relayed = asyncio.run(many(relay[0] + "/v1/chat/completions", {}))
        floor_per_token.append((cpu_s(relay_process) - before) * 1000 / max(1, relayed))
    direct_rate, gateway_rate = max(rates["direct"]), max(rates["gateway"])
    return Figures(
        gateway_added_ttft_ms=round(gateway_ttft - direct_ttft, 3), direct_ttft_ms=round(direct_ttft, 3),
        gateway_cpu_ms_per_token=round(min(cpu_per_token), 5),
        gateway_concurrency_ratio=round(gateway_rate / direct_rate, 4),
        direct_tokens_per_s=round(direct_rate), gateway_tokens_per_s=round(gateway_rate), tokens_per_run=tokens,
        relay_floor_cpu_ms_per_token=round(min(floor_per_token), 5))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(p)
    args = p.parse_args(argv)
    gate = Gate.from_args(args)
    with tempfile.TemporaryDirectory(prefix="bench-gateway-") as tmp:
        folder = Path(tmp)
        store = AccountStore.open(folder / "data")
        store.add("bench", "bench-password")
        key = ApiKeyStore(store).create("bench", "bench")[1]
        store.close()
        env = {"M3UI_SIM_DECODE_TPS": DECODE_TPS}
        with running_app(folder, "--engine", "sim", "--gateway-key-limits", f"{STREAMS}/100000", env=env,
                         data_dir=folder / "data") as app:
            app.wait_engine_ready()
            engine_url = re.findall(r"monitor now watches (http://\S+)", app.log())[-1]
            port = free_port()
            relay = subprocess.Popen([sys.executable, str(Path(__file__).with_name("relay_floor.py")), engine_url,
                                      str(port)])

            def one_run() -> Figures:
                figures = measure(app.url, engine_url, key, app.process.pid, (f"http://127.0.0.1:{port}", relay.pid))
                print(f"run: TTFT added {figures.gateway_added_ttft_ms:+.2f} ms over {figures.direct_ttft_ms:.2f} ms "
                      f"direct; app CPU {figures.gateway_cpu_ms_per_token:.4f} ms per forwarded token above idle "
                      f"(a bare byte relay: {figures.relay_floor_cpu_ms_per_token:.4f}); "
                      f"{STREAMS} streams {figures.gateway_concurrency_ratio:.1%} of direct "
                      f"({figures.gateway_tokens_per_s:,} vs {figures.direct_tokens_per_s:,} tokens/s)", flush=True)
                return figures

            try:
                runs, best = gate.best_of(one_run, Figures.timings)
            finally:
                relay.kill()
                relay.wait()
    code = gate.exit_code(best, [])
    print(json.dumps({**{t.name: t.value for t in best}, "runs": [asdict(r) for r in runs],
                      "targets_missed": [t.name for t in best if not t.within(1.0)], "ok": code == 0}))
    return code


if __name__ == "__main__":
    sys.exit(main())
