"""GPU-host proof: m3ui's GPU source read while a child process runs bf16 matrix products on GPU 0.

Prints one line a second (utilization, memory, the load process's memory as "engine" memory, power, temperature,
PCIe rates) before, during and after the load, and the time each sample took. Needs an NVIDIA GPU and torch
in the interpreter given by --load-python; elsewhere it says so and exits 0 (nothing to prove).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from m3ui.monitor.gpu import GpuSource  # noqa: E402

LOAD = """
import time, torch
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
end = time.time() + {seconds}
n = 0
while time.time() < end:
    for _ in range(20):
        a @ b
    torch.cuda.synchronize()
    n += 20
print(f"load: {{n}} products of 8192^3 in {seconds}s = {{n * 2 * 8192**3 / {seconds} / 1e12:.0f}} TFLOP/s")
"""


def _line(tag: str, snap: object, took_ms: float) -> str:
    if snap.status != "ok":  # type: ignore[attr-defined]
        return f"{tag}: {snap.status} {snap.reason}"  # type: ignore[attr-defined]
    g = snap.gpus[0]  # type: ignore[attr-defined]

    def mb(v: int | None) -> str:
        return "?" if v is None else f"{v / 2**20:.0f} MiB"

    def rate(v: float | None) -> str:
        return "?" if v is None else f"{v / 1e6:.1f} MB/s"

    return (f"{tag}: util={g.utilization_percent}% mem={mb(g.memory_used_bytes)}/{mb(g.memory_total_bytes)} "
            f"engine={mb(g.engine_memory_bytes)} power={g.power_watts}W/{g.power_limit_watts}W "
            f"temp={g.temperature_c}C pcie tx={rate(g.pcie_tx_bytes_per_s)} rx={rate(g.pcie_rx_bytes_per_s)} "
            f"[sample {took_ms:.1f} ms]")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--seconds", type=int, default=10)
    p.add_argument("--load-python", default=sys.executable)
    args = p.parse_args()
    source = GpuSource()
    first = source.sample()
    if first.status != "ok":
        print(f"no GPU to prove on: {first.status} ({first.reason})")
        return 0
    print(f"GPU 0: {first.gpus[0].name}")
    for _ in range(2):
        time.sleep(1)
        t = time.perf_counter()
        snap = source.sample()
        print(_line("idle", snap, (time.perf_counter() - t) * 1e3), flush=True)
    load = subprocess.Popen([args.load_python, "-c", LOAD.format(seconds=args.seconds)])
    pids = frozenset({load.pid})
    for i in range(args.seconds + 1):
        time.sleep(1)
        t = time.perf_counter()
        snap = source.sample(pids)
        print(_line(f"load t={i + 1}s", snap, (time.perf_counter() - t) * 1e3), flush=True)
    load.wait()
    time.sleep(1)
    print(_line("after", source.sample(), 0.0))
    source.close()
    return load.returncode


if __name__ == "__main__":
    sys.exit(main())
