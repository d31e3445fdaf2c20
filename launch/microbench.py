"""Time one MoE layer of kt-kernel for a few (kt_cpuinfer, kt_threadpool_count) settings and pick the fastest.

Each setting is its own child process in the engine's Python (launch/microbench_kernel.py), as the
preflight's package probe runs there: kt-kernel lives in that venv, and its CPUInfer is one per process.
Two rounds, not a grid: the thread counts at the current pool count, then the pool counts at the best thread
count (the knobs interact little in the speed model, and each child costs seconds of weight set-up).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import psutil

from launch.model_config import ModelShape
from launch.probe import run_command

CHILD = Path(__file__).with_name("microbench_kernel.py")
GROUP = 32  # MXFP8: one ue8m0 scale per 32 weights
MIN_EXPERTS_PER_TOP_K = 4  # fewer experts than this many routings' worth would let decode read from the cache
MEMORY_SHARE = 0.25  # of the available RAM, for the source weights plus the kernel's copy
NOISE = 0.02  # a setting within this of the fastest counts as a tie; the fewer threads win it
CHILD_TIMEOUT_S = 600.0
METHODS = ("MXFP8",)  # M3's kt-method; the child builds only this layout
Progress = Callable[[str], None]


class MicrobenchError(RuntimeError):
    """kt-kernel cannot be timed here: absent from the engine's Python, a method it does not cover, ..."""


@dataclass(frozen=True)
class KernelShape:
    experts: int
    hidden_size: int
    intermediate_size: int
    top_k: int
    moe_layers: int

    @property
    def expert_bytes(self) -> int:
        """One MXFP8 expert: gate, up and down at a byte a weight, plus a scale byte per 32 weights."""
        return 3 * self.hidden_size * self.intermediate_size * (GROUP + 1) // GROUP

    @classmethod
    def of_model(cls, shape: ModelShape, available_bytes: int | None = None) -> KernelShape:
        """The model's expert shapes; fewer experts than the model has when RAM is short (decode still reads
        each routed expert from DRAM as long as the layer is far larger than the cache)."""
        probe = cls(shape.num_routed_experts, shape.hidden_size, shape.moe_intermediate_size,
                    shape.experts_per_token, shape.num_moe_layers)
        available = psutil.virtual_memory().available if available_bytes is None else available_bytes
        fit = int(available * MEMORY_SHARE / (2 * probe.expert_bytes))
        floor = min(shape.num_routed_experts, MIN_EXPERTS_PER_TOP_K * shape.experts_per_token)
        experts = max(floor, min(shape.num_routed_experts, fit))
        return cls(experts, probe.hidden_size, probe.intermediate_size, probe.top_k, probe.moe_layers)


@dataclass(frozen=True)
class PoolSetting:
    kt_cpuinfer: int
    kt_threadpool_count: int


@dataclass
class SettingTime:
    setting: PoolSetting
    ok: bool
    reason: str = ""
    decode_ms: float | None = None  # one token through the layer
    prefill_tok_s: float | None = None  # a chunk of tokens through the layer
    load_s: float | None = None

    def decode_gbs(self, shape: KernelShape) -> float | None:
        """The DRAM read rate decode reached: top-k experts' bytes per token."""
        return None if not self.decode_ms else shape.top_k * shape.expert_bytes / (self.decode_ms / 1e3) / 1e9

    def model_decode_tok_s(self, shape: KernelShape) -> float | None:
        """The ceiling this kernel puts on a token with every routed expert on the CPU (all MoE layers)."""
        return None if not self.decode_ms else 1e3 / (self.decode_ms * shape.moe_layers)


@dataclass
class MicrobenchResult:
    python: str
    variant: str
    kt_kernel: str
    kernel: str
    shape: KernelShape
    times: list[SettingTime] = field(default_factory=list)

    @property
    def best(self) -> SettingTime | None:
        """The fastest decode; within NOISE of it, the fewest threads (they leave cores to the engine)."""
        ok = [t for t in self.times if t.ok and t.decode_ms]
        if not ok:
            return None
        fastest = min(t.decode_ms or math.inf for t in ok)
        ties = [t for t in ok if (t.decode_ms or math.inf) <= fastest * (1 + NOISE)]
        return min(ties, key=lambda t: (t.setting.kt_cpuinfer, t.setting.kt_threadpool_count))

    def to_json(self) -> dict[str, Any]:
        best = self.best
        return {
            "python": self.python, "variant": self.variant, "kt_kernel": self.kt_kernel, "kernel": self.kernel,
            "shape": asdict(self.shape),
            "settings": [{**asdict(t.setting), "ok": t.ok, "reason": t.reason, "decode_ms": t.decode_ms,
                          "decode_gbs": t.decode_gbs(self.shape), "prefill_tok_s": t.prefill_tok_s,
                          "model_decode_tok_s": t.model_decode_tok_s(self.shape), "load_s": t.load_s}
                         for t in self.times],
            "best": None if best is None else asdict(best.setting),
        }


def _ask(python: str, request: dict[str, Any], timeout_s: float) -> dict[str, Any]:
    """One child's answer; {"error": ...} when it failed, whatever the way."""
    answer = run_command([python, str(CHILD), json.dumps(request)], timeout_s)
    lines = answer.text.strip().splitlines()
    try:
        parsed = json.loads(lines[-1]) if lines else None
    except ValueError:
        parsed = None
    if isinstance(parsed, dict) and (answer.ok or "error" in parsed):
        return parsed
    return {"error": answer.error or f"no answer from {python}"}


def detect(python: str, timeout_s: float = 60.0) -> dict[str, Any]:
    """kt-kernel's version and the build its detector picks in `python`; MicrobenchError when it is absent."""
    answer = _ask(python, {"mode": "detect"}, timeout_s)
    if "error" in answer:
        raise MicrobenchError(f"kt-kernel cannot be loaded in the engine's Python: {answer['error']}")
    return answer


def time_setting(python: str, shape: KernelShape, setting: PoolSetting, prefill_tokens: int, seconds: float,
                 numa_nodes: Sequence[int] | None = None) -> tuple[SettingTime, dict[str, Any]]:
    request = {"cpuinfer": setting.kt_cpuinfer, "pools": setting.kt_threadpool_count,
               "numa_nodes": list(numa_nodes) if numa_nodes else None, "experts": shape.experts,
               "hidden_size": shape.hidden_size, "intermediate_size": shape.intermediate_size,
               "top_k": shape.top_k, "group_size": GROUP, "prefill_tokens": prefill_tokens, "seconds": seconds}
    answer = _ask(python, request, CHILD_TIMEOUT_S)
    if "error" in answer:
        return SettingTime(setting, False, str(answer["error"])), answer
    prefill_s = answer.get("prefill_s")
    return SettingTime(setting, True, decode_ms=float(answer["decode_s"]) * 1e3,
                       prefill_tok_s=prefill_tokens / prefill_s if prefill_s else None,
                       load_s=answer.get("load_s")), answer


def run_microbench(python: str, shape: KernelShape, threads: Sequence[int], pools: Sequence[int],
                   start: PoolSetting, method: str | None = "MXFP8", prefill_tokens: int = 256,
                   seconds: float = 1.0, progress: Progress = print,
                   numa_nodes: Sequence[int] | None = None) -> MicrobenchResult:
    """Thread counts at the start's pool count, then pool counts at the fastest thread count. `numa_nodes`
    (`--kt-numa-nodes`) places the pools of a setting with that many pools; others take nodes 0, 1, ... as the
    engine does."""
    if method is not None and method.upper() not in METHODS:
        raise MicrobenchError(f"the microbenchmark builds {', '.join(METHODS)} layers (M3's kt-method), not {method}")
    found = detect(python)
    result = MicrobenchResult(python, str(found["variant"]), str(found.get("kt_kernel")), "", shape)
    progress(f"kt-kernel {result.kt_kernel} ({result.variant} build) in {python}: one MoE layer of "
             f"{shape.experts} experts, {shape.hidden_size}x{shape.intermediate_size}, top-{shape.top_k}")

    def measure(setting: PoolSetting) -> None:
        if setting.kt_threadpool_count > setting.kt_cpuinfer or any(t.setting == setting for t in result.times):
            return  # a pool needs a thread
        nodes = numa_nodes if numa_nodes and len(numa_nodes) == setting.kt_threadpool_count else None
        timed, answer = time_setting(python, shape, setting, prefill_tokens, seconds, nodes)
        result.kernel = result.kernel or str(answer.get("kernel", ""))
        result.times.append(timed)
        label = f"kt_cpuinfer={setting.kt_cpuinfer}, kt_threadpool_count={setting.kt_threadpool_count}"
        if timed.ok:
            progress(f"  {label}: decode {timed.decode_ms:.2f} ms/layer ({timed.decode_gbs(shape):.0f} GB/s), "
                     f"prefill {timed.prefill_tok_s or 0:.0f} tok/s/layer")
        else:
            progress(f"  {label}: FAILED: {timed.reason}")

    for n in sorted({start.kt_cpuinfer, *threads}):
        measure(PoolSetting(n, start.kt_threadpool_count))
    best = result.best
    threads_best = best.setting.kt_cpuinfer if best else start.kt_cpuinfer
    for p in sorted({start.kt_threadpool_count, *pools}):
        measure(PoolSetting(threads_best, p))
    if result.best is None:
        reasons = "; ".join(sorted({t.reason for t in result.times}))
        raise MicrobenchError(f"no setting ran: {reasons}")
    return result
