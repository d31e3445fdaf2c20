"""Run in the ENGINE's Python (where kt-kernel is installed), one process per setting: build one MoE layer of
kt-kernel's own kernel with random weights and time its forward for decode (one token) and prefill (a chunk).

Standard library only, and kt-kernel's package `__init__` is never run: it imports torch, whose wrapper pins
memory through CUDA. The extension itself needs neither, so this loads `kt_kernel/_cpu_detect.py` by path and
lets kt-kernel's own detector pick and load the build (amx, avx512_*, avx2) the engine would load.
kt-kernel's CPUInfer is one per process, so the parent starts one child per (threads, pools) setting.

Protocol: argv[1] is a JSON request; the last stdout line is one JSON answer, {"error": ...} on failure
(exit 3: kt-kernel absent; 4: the kernel refused the setting or failed).
"""

from __future__ import annotations

import ctypes
import importlib.util
import json
import os
import random
import sys
import time
from pathlib import Path
from typing import Any

ABSENT, FAILED = 3, 4
_PATTERN_BYTES = 1 << 20
UE8M0_ONE = 127  # 2**(127-127) = 1.0: finite scales whatever the weights
FP8_NAN = (0x7F, 0xFF)  # E4M3fn's NaN bytes, replaced so the kernel meets only finite weights


class KernelAbsent(RuntimeError):
    """kt-kernel is not installed in this Python."""


def load_kernel() -> tuple[Any, str, str]:
    """kt-kernel's extension, the variant its own detector chose, and the package version."""
    spec = importlib.util.find_spec("kt_kernel")  # finds the package without running its __init__
    if spec is None or not spec.submodule_search_locations:
        raise KernelAbsent(f"kt-kernel is not installed in {sys.executable}")
    package = Path(next(iter(spec.submodule_search_locations)))
    detect_spec = importlib.util.spec_from_file_location("kt_kernel_cpu_detect", package / "_cpu_detect.py")
    if detect_spec is None or detect_spec.loader is None:
        raise KernelAbsent(f"{package} has no _cpu_detect.py (kt-kernel older than 0.7?)")
    detect = importlib.util.module_from_spec(detect_spec)
    detect_spec.loader.exec_module(detect)
    ext, variant = detect.initialize()
    sys.modules["kt_kernel_ext"] = ext
    try:
        from importlib.metadata import version
        kt_version = version("kt-kernel")
    except Exception:  # an unpacked package without metadata still runs
        kt_version = "unknown"
    return ext, str(variant), kt_version


def _buffer(size: int, pattern: bytes, keep: list[Any]) -> int:
    """A C buffer of `size` bytes tiled with `pattern`; kept alive in `keep`, its address returned."""
    buf = (ctypes.c_uint8 * size)()
    address = ctypes.addressof(buf)
    step = len(pattern)
    for start in range(0, size, step):
        ctypes.memmove(address + start, pattern, min(step, size - start))
    keep.append(buf)
    return address


def _mxfp8_class(moe: Any, variant: str) -> Any:
    """kt-kernel's own choice for MXFP8 (utils/amx.py _select_mxfp8_backend): AMX where the host has AMX."""
    forced = os.environ.get("KT_MXFP8_BACKEND", "").strip().lower()
    amx = getattr(moe, "AMXMXFP8_KGroup_MOE", None)
    avx2 = getattr(moe, "AVX2MXFP8_MOE", None)
    if forced == "avx2" or variant != "amx" or amx is None:
        if avx2 is None:
            raise RuntimeError("this kt-kernel build has no MXFP8 MoE kernel")
        return avx2
    return amx


def build_layer(ext: Any, variant: str, req: dict[str, Any]) -> tuple[Any, Any, list[Any]]:
    """A CPUInfer with the request's pools and one MXFP8 MoE layer of random weights loaded into it."""
    threads, pools = int(req["cpuinfer"]), int(req["pools"])
    nodes = [int(n) for n in req.get("numa_nodes") or range(pools)]
    config = ext.WorkerPoolConfig()
    config.subpool_count = pools
    config.subpool_numa_map = nodes
    config.subpool_thread_count = [threads // pools + (1 if i < threads % pools else 0) for i in range(pools)]
    cpu_infer = ext.CPUInfer(config)

    experts, hidden, inter = int(req["experts"]), int(req["hidden_size"]), int(req["intermediate_size"])
    group = int(req.get("group_size", 32))
    rng = random.Random(0)
    weights = bytes(0 if b in FP8_NAN else b for b in rng.randbytes(_PATTERN_BYTES))
    scales = bytes([UE8M0_ONE]) * 4096
    keep: list[Any] = []  # the source weights: freed on return, the kernel copies them at load
    alive: list[Any] = []  # what the kernel reads for as long as it runs, as the engine's wrapper keeps it
    mask = _buffer(experts, b"\0", alive)  # no expert on the GPU: every routed expert runs here
    identity = (ctypes.c_int64 * experts)(*range(experts))
    alive.append(identity)

    def per_expert(rows: int, cols: int, data: bytes) -> list[list[int]]:
        return [[_buffer(rows * cols, data, keep) for _ in range(experts)]]

    moe_config = ext.moe.MOEConfig(experts, int(req["top_k"]), hidden, inter, mask)
    moe_config.layer_idx = 0
    moe_config.pool = cpu_infer.backend_
    moe_config.max_len = max(1, int(req["prefill_tokens"]))
    moe_config.gate_projs = per_expert(inter, hidden, weights)
    moe_config.up_projs = per_expert(inter, hidden, weights)
    moe_config.down_projs = per_expert(hidden, inter, weights)
    moe_config.gate_scales = per_expert(inter, hidden // group, scales)
    moe_config.up_scales = per_expert(inter, hidden // group, scales)
    moe_config.down_scales = per_expert(hidden, inter // group, scales)
    moe_config.quant_config.bits = 8
    moe_config.quant_config.group_size = group
    moe_config.quant_config.zero_point = False
    layer = _mxfp8_class(ext.moe, variant)(moe_config)
    cpu_infer.submit(layer.load_weights_task(ctypes.addressof(identity)))
    cpu_infer.sync()
    return cpu_infer, layer, [moe_config, *alive]


def time_forward(cpu_infer: Any, layer: Any, req: dict[str, Any], tokens: int, seconds: float) -> float:
    """Seconds per forward of `tokens` tokens, over repeated passes with fresh random routings."""
    experts, top_k, hidden = int(req["experts"]), int(req["top_k"]), int(req["hidden_size"])
    rng = random.Random(tokens)
    keep: list[Any] = []
    routings = []
    for _ in range(16):  # distinct routings, so decode reads experts from DRAM, not the cache
        ids = [e for _ in range(tokens) for e in rng.sample(range(experts), top_k)]
        routings.append((ctypes.c_int64 * len(ids))(*ids))
    weights = (ctypes.c_float * (tokens * top_k))(*([1.0 / top_k] * (tokens * top_k)))
    bsz = (ctypes.c_int32 * 1)(tokens)
    x = _buffer(tokens * hidden * 2, bytes([0x80, 0x3F]), keep)  # bf16 1.0
    out = _buffer(tokens * hidden * 2, b"\0\0", keep)

    def forward(ids: Any) -> None:
        cpu_infer.submit(layer.forward_task(ctypes.addressof(bsz), top_k, ctypes.addressof(ids),
                                            ctypes.addressof(weights), x, out, False))
        cpu_infer.sync()

    forward(routings[0])  # warm-up: first-touch of the kernel's buffers
    began, n = time.perf_counter(), 0
    while n < 3 or (time.perf_counter() - began < seconds and n < 10_000):
        forward(routings[n % len(routings)])
        n += 1
    # The mean, not the median: a worker that loses its CPU stalls the layer's barrier, and every token pays
    # for those stalls (16 threads on 16 CPUs: 7.0 ms mean, 4.0 ms median, against 3.2 ms for 14 threads).
    return (time.perf_counter() - began) / n


def measure(req: dict[str, Any]) -> dict[str, Any]:
    ext, variant, kt_version = load_kernel()
    answer: dict[str, Any] = {"variant": variant, "kt_kernel": kt_version, "python": sys.version.split()[0]}
    if req.get("mode") == "detect":
        return answer
    began = time.perf_counter()
    cpu_infer, layer, _alive = build_layer(ext, variant, req)
    answer["kernel"] = type(layer).__name__
    answer["load_s"] = time.perf_counter() - began
    seconds = float(req.get("seconds", 1.0))
    answer["decode_s"] = time_forward(cpu_infer, layer, req, 1, seconds)
    tokens = int(req["prefill_tokens"])
    answer["prefill_s"] = time_forward(cpu_infer, layer, req, tokens, seconds) if tokens > 1 else None
    return answer


def main(argv: list[str]) -> int:
    try:
        req = json.loads(argv[1])
        print(json.dumps(measure(req)), flush=True)
        return 0
    except KernelAbsent as exc:
        print(json.dumps({"error": str(exc), "absent": True}), flush=True)
        return ABSENT
    except Exception as exc:  # the kernel's refusal is the answer, as data for the parent
        print(json.dumps({"error": f"{type(exc).__name__}: {exc}"}), flush=True)
        return FAILED


if __name__ == "__main__":
    sys.exit(main(sys.argv))
