"""Why the engine stopped: its log → a cause, the evidence lines, and the setting changes that fix it.

The texts matched are sglang-kt / kt-kernel 0.7.2's own (ENGINE_CONTRACT.md §2; file:line in the wheel).
Memory failures need fixes in opposite directions: a KV pool that is too small wants MORE static memory
(raise --mem-fraction-static) or fewer GPU experts, while an OOM outside the pool (activations, CUDA
graphs) wants LESS static memory. The phase the engine had reached tells which OOM it was.
"""

from __future__ import annotations

import re
import signal
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

from launch.model_config import ModelShape
from launch.phases import Phase, strip_prefix
from launch.preflight import free_port
from launch.settings import FIELD_BY_NAME, LaunchSettings
from launch.sizing import default_mem_fraction, max_gpu_experts

MEM_FRACTION_STEP = 0.05
MAX_EVIDENCE = 8
# sglang's own example in CUDA_GRAPH_CAPTURE_FAILED_MSG (cuda_graph_runner.py:1166).
GRAPH_BS_WHEN_UNSET = 16


class FailureCause(Enum):
    KV_POOL_TOO_SMALL = "kv_pool_too_small"
    CUDA_OOM_AT_LOAD = "cuda_oom_at_load"
    CUDA_OOM_ACTIVATION = "cuda_oom_activation"
    GRAPH_CAPTURE = "graph_capture"
    PORT_BUSY = "port_busy"
    KT_KERNEL_CPU = "kt_kernel_cpu"
    MODEL_PATH = "model_path"
    SCHEDULER_DEATH = "scheduler_death"
    STARTUP_TIMEOUT = "startup_timeout"
    UNKNOWN = "unknown"


# Failures of the GPU's memory: on the simulated engine the GPU that ran out is simulated too.
GPU_MEMORY_CAUSES = frozenset({FailureCause.KV_POOL_TOO_SMALL, FailureCause.CUDA_OOM_AT_LOAD,
                               FailureCause.CUDA_OOM_ACTIVATION, FailureCause.GRAPH_CAPTURE})


@dataclass(frozen=True)
class Diagnosis:
    cause: FailureCause
    title: str
    explanation: str
    evidence: tuple[str, ...]
    # Alternatives, best first: each (LaunchSettings field name, new value) fixes it on its own.
    changes: tuple[tuple[str, Any], ...] = ()
    exit_code: int | None = None

    def render(self) -> str:
        lines = [f"FAILED: {self.title}", f"  {self.explanation}"]
        if self.evidence:
            lines.append("  evidence:")
            lines.extend(f"    {line}" for line in self.evidence)
        if self.changes:
            lines.append("  try (any one):")
            lines.extend(f"    --{name.replace('_', '-')} {value}" for name, value in self.changes)
        return "\n".join(lines)

    @property
    def plain(self) -> str:
        """What happened, in one sentence for people who only chat (no flags, no log lines)."""
        return _plain_words(self)

    def simulated_note(self) -> str | None:
        """What a GPU failure means when the simulated engine had it (this machine may have no GPU at all); None
        for other failures, which are as real as their cause (a process killed is killed)."""
        if self.cause not in GPU_MEMORY_CAUSES:
            return None
        return ("The GPU is simulated too: no real GPU ran out of memory. The simulated engine works out what these "
                "settings need on the GPU it stands for, and fails as sglang-kt would there.")


@dataclass(frozen=True)
class SizingContext:
    """What lets the diagnosis compute an expert count instead of halving: the model and the GPU."""

    shape: ModelShape
    gpu_bytes: float


_PATTERNS: dict[FailureCause, re.Pattern[str]] = {
    FailureCause.PORT_BUSY: re.compile(r"address already in use"),
    FailureCause.KT_KERNEL_CPU: re.compile(
        r"requires a newer CPU ISA than this host|backend not available\. (Required ISA|kt_kernel_ext|Rebuild)"
        r"|Please recompile kt_kernel_ext|kt_kernel is not installed|No module named '?kt_kernel"
        r"|needs the AVX2 FP4 backend"),
    FailureCause.MODEL_PATH: re.compile(
        r"Repo id must be in the form|is not a local folder and is not a valid model identifier"
        r"|does not appear to have (a file named|files named)|Incorrect path_or_model_id"
        r"|We couldn't connect to '[^']*' to load the files"),
    FailureCause.KV_POOL_TOO_SMALL: re.compile(r"Not enough memory\. Please try to increase --mem-fraction-static"),
    FailureCause.GRAPH_CAPTURE: re.compile(r"Capture cuda graph failed"),
    # Any CUDA OOM; the phase it happened in decides which kind (_oom_kind).
    FailureCause.CUDA_OOM_AT_LOAD: re.compile(r"CUDA out of memory|CUDA error: out of memory"),
    FailureCause.SCHEDULER_DEATH: re.compile(
        r"Scheduler hit an exception|Rank \d+ scheduler is dead|Exit code: -9$|Initialization failed"),
}
_ERROR_LINE = re.compile(r"^(?:[A-Za-z_][\w.]*(?:Error|Exception|Exit)|Exception)(?::\s.*)?$")
_MISSING_FILE = re.compile(r"No such file or directory: '([^']+)'")


def last_error_line(lines: Sequence[str]) -> str | None:
    """The last `SomeError: message` line: a Python traceback's conclusion."""
    for line in reversed(lines):
        if _ERROR_LINE.match(line.strip()):
            return line.strip()
    return None


def diagnose(
    lines: Sequence[str],
    settings: LaunchSettings,
    *,
    phase: Phase | None = None,
    exit_code: int | None = None,
    sizing: SizingContext | None = None,
) -> Diagnosis:
    """Classify an unexpected exit from the engine's log lines and the phase it had reached."""
    text = [strip_prefix(line) for line in lines]
    text = [t for t in text if t.strip()]
    cause, hits = _first_cause(text, settings)
    if cause is FailureCause.CUDA_OOM_AT_LOAD:
        cause = _oom_kind(phase)
    evidence = _evidence(text, hits)
    make = _EXPLAINERS.get(cause, _unknown)
    title, explanation, changes = make(_Case(settings, sizing, evidence, exit_code))
    return Diagnosis(cause, title, explanation, evidence, changes, exit_code)


def timeout_diagnosis(lines: Sequence[str], phase: Phase, waited_s: float) -> Diagnosis:
    text = [t for t in (strip_prefix(line) for line in lines) if t.strip()]
    return Diagnosis(
        FailureCause.STARTUP_TIMEOUT,
        f"The engine was not ready after {waited_s:.0f} s (stuck in: {phase.value})",
        "It was stopped. Loading M3's experts into CPU RAM can take many minutes on slow disks; if the log "
        "still moved, start again with a longer start-up timeout.",
        tuple(text[-MAX_EVIDENCE:]),
    )


def _first_cause(text: list[str], settings: LaunchSettings) -> tuple[FailureCause, list[int]]:
    for cause, pattern in _PATTERNS.items():
        hits = [i for i, t in enumerate(text) if pattern.search(t)]
        if cause is FailureCause.MODEL_PATH:
            hits += _missing_configured_paths(text, settings)
        if hits:
            return cause, sorted(hits)
    return FailureCause.UNKNOWN, []


def _missing_configured_paths(text: list[str], settings: LaunchSettings) -> list[int]:
    """`No such file or directory` lines that name one of the configured model folders."""
    roots = [p.rstrip("/") for p in (settings.model_path, settings.kt_weight_path) if p]
    return [i for i, t in enumerate(text)
            if (m := _MISSING_FILE.search(t)) and any(m[1].startswith(r) for r in roots)]


def _oom_kind(phase: Phase | None) -> FailureCause:
    if phase is Phase.CUDA_GRAPHS:
        return FailureCause.GRAPH_CAPTURE
    if phase in (Phase.WARMUP, Phase.READY):
        return FailureCause.CUDA_OOM_ACTIVATION
    return FailureCause.CUDA_OOM_AT_LOAD


def _evidence(text: list[str], hits: list[int]) -> tuple[str, ...]:
    """The matched lines and the traceback's conclusion, each text once (every TP rank prints its own)."""
    if not hits:
        return tuple(text[-MAX_EVIDENCE:])
    error = next((i for i in range(len(text) - 1, -1, -1) if _ERROR_LINE.match(text[i].strip())), None)
    matched = list(dict.fromkeys(text[i].strip() for i in hits))[:MAX_EVIDENCE - 1]
    if error is not None and text[error].strip() not in matched:
        matched.append(text[error].strip())
    return tuple(matched)


# --- setting changes, computed from the current settings -------------------------------------------

Change = tuple[str, Any]


def _current_mem_fraction(s: LaunchSettings) -> float:
    return s.mem_fraction_static if s.mem_fraction_static is not None else default_mem_fraction(s.tp_size)


def _mem_fraction_by(s: LaunchSettings, step: float) -> Change | None:
    spec = FIELD_BY_NAME["mem_fraction_static"].spec
    current = _current_mem_fraction(s)
    new = round(min(spec.hi or 1.0, max(spec.lo or 0.0, current + step)), 2)
    return ("mem_fraction_static", new) if new != round(current, 2) else None


def _fewer_gpu_experts(s: LaunchSettings, sizing: SizingContext | None) -> Change | None:
    if s.kt_gpu_experts_ratio:  # the ratio overrides the count, so lower the ratio
        return ("kt_gpu_experts_ratio", round(s.kt_gpu_experts_ratio / 2, 3))
    current = s.kt_num_gpu_experts
    if not current:
        return None
    target = current // 2
    if sizing is not None:
        fits = max_gpu_experts(sizing.shape, tp=s.tp_size, gpu_bytes=sizing.gpu_bytes,
                               mem_fraction=s.mem_fraction_static)
        target = fits if fits < current else target
    return ("kt_num_gpu_experts", target)


def _halved(s: LaunchSettings, name: str, floor: int = 1) -> Change | None:
    current = getattr(s, name)
    return (name, max(floor, current // 2)) if current and current > floor else None


def _changes(*candidates: Change | None) -> tuple[Change, ...]:
    return tuple(c for c in candidates if c is not None)


_OOM_KILLER_HINT = ("A SIGKILL nobody sent is usually the kernel's OOM killer (check dmesg): kt-kernel holds every "
                    "routed expert in CPU RAM, whatever --kt-num-gpu-experts says, so the host needs RAM for all "
                    "of them.")


# --- one explainer per cause: (title, explanation, changes) ----------------------------------------

Explained = tuple[str, str, tuple[Change, ...]]


@dataclass(frozen=True)
class _Case:
    s: LaunchSettings
    sizing: SizingContext | None
    evidence: tuple[str, ...]
    exit_code: int | None


def _kv_pool(c: _Case) -> Explained:
    return (
        "The KV cache pool got no memory",
        f"After the weights, nothing was left for the KV cache inside --mem-fraction-static "
        f"({_current_mem_fraction(c.s):g} of each GPU). This needs MORE static memory, not less: raise "
        "--mem-fraction-static, or keep fewer experts on the GPU to leave room for the pool.",
        _changes(_mem_fraction_by(c.s, +MEM_FRACTION_STEP), _fewer_gpu_experts(c.s, c.sizing)),
    )


def _oom_at_load(c: _Case) -> Explained:
    fewer = _fewer_gpu_experts(c.s, c.sizing)
    why = ("The GPU ran out of memory while loading weights: the non-expert weights plus "
           f"{c.s.kt_num_gpu_experts or 0} GPU experts per MoE layer do not fit. Keep fewer experts on the GPU "
           "(the rest run on the CPU).")
    if fewer is None:
        why += " No experts are on the GPU already: use more GPUs (a larger --tp-size)."
    return "CUDA out of memory while loading the model", why, _changes(fewer)


def _oom_activation(c: _Case) -> Explained:
    return (
        "CUDA out of memory while running requests",
        "The memory outside --mem-fraction-static (activations, the layerwise-prefill buffer, CUDA graphs) "
        "was too small. Lower --mem-fraction-static to leave more of it, or make each step smaller with a "
        "lower --chunked-prefill-size or --max-running-requests.",
        _changes(_mem_fraction_by(c.s, -MEM_FRACTION_STEP), _halved(c.s, "chunked_prefill_size", 512),
                 _halved(c.s, "max_running_requests")),
    )


def _graph_capture(c: _Case) -> Explained:
    smaller_bs = _halved(c.s, "cuda_graph_max_bs") if c.s.cuda_graph_max_bs else (
        "cuda_graph_max_bs", GRAPH_BS_WHEN_UNSET)
    return (
        "CUDA graph capture failed",
        "Capturing the decode CUDA graphs needs memory outside --mem-fraction-static. Capture fewer batch "
        "sizes (lower --cuda-graph-max-bs) or lower --mem-fraction-static.",
        _changes(smaller_bs, _mem_fraction_by(c.s, -MEM_FRACTION_STEP)),
    )


def _port_busy(c: _Case) -> Explained:
    return (
        f"Port {c.s.port} is already in use",
        f"Something else listens on {c.s.host}:{c.s.port}; sglang only finds out after loading the whole model. "
        "Stop the other server or pick another port.",
        (("port", free_port("127.0.0.1" if c.s.host in ("0.0.0.0", "::") else c.s.host)),),
    )


def _kt_cpu(c: _Case) -> Explained:
    if any("not installed" in t or "No module named" in t for t in c.evidence):
        return ("kt-kernel is not installed in the engine's Python",
                "Install kt-kernel 0.7.2 into the engine's environment (pip install -r requirements-gpu.txt).", ())
    return (
        f"kt-kernel cannot run {c.s.kt_method or 'this method'} on this CPU",
        "The kt-kernel build or the --kt-method needs CPU instructions this host lacks (MXFP8 needs at least "
        "AVX2+FMA; AMX is the fast path). Install the multi-variant kt-kernel wheel, or use a --kt-method "
        "your CPU supports with weights converted for it.",
        (),
    )


def _model_path(c: _Case) -> Explained:
    return (
        "The model could not be found",
        f"--model-path {c.s.model_path!r} (and --kt-weight-path {c.s.kt_weight_path!r}) must be local folders "
        "with config.json and the .safetensors weights. Fix the path or finish the download.",
        (),
    )


def _scheduler_death(c: _Case) -> Explained:
    if "Exit code: -9" in c.evidence and not any("Scheduler hit an exception" in t for t in c.evidence):
        return ("A scheduler process was killed (SIGKILL)", _OOM_KILLER_HINT, ())
    error = last_error_line(c.evidence)
    died = any("Scheduler hit an exception" in t or "scheduler is dead" in t for t in c.evidence)
    what = "The scheduler died" if died else "Engine initialization failed"
    return (
        f"{what}: {error}" if error else what,
        "An engine process raised an exception; the full traceback is in the log just above these lines.",
        (),
    )


def _unknown(c: _Case) -> Explained:
    error = last_error_line(c.evidence)
    how = _describe_exit(c.exit_code)
    explanation = f"The engine {how} without a known failure message."
    if c.exit_code == -signal.SIGKILL:
        explanation += " " + _OOM_KILLER_HINT
    return (f"The engine {how}" + (f": {error}" if error else ""), explanation, ())


def _describe_exit(code: int | None) -> str:
    if code is None:
        return "exited"
    if code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with code {code}"


_PLAIN_WORDS = {
    FailureCause.KV_POOL_TOO_SMALL: "The engine stopped: it had too little GPU memory left for its cache",
    FailureCause.CUDA_OOM_AT_LOAD: "The engine stopped: it ran out of GPU memory while loading the model",
    FailureCause.CUDA_OOM_ACTIVATION: "The engine stopped: it ran out of GPU memory while answering",
    FailureCause.GRAPH_CAPTURE: "The engine stopped: it ran out of GPU memory while preparing to answer",
    FailureCause.PORT_BUSY: "The engine stopped: another program uses its network port",
    FailureCause.KT_KERNEL_CPU: "The engine stopped: it cannot run on this computer's processor",
    FailureCause.MODEL_PATH: "The engine stopped: it could not find the model files",
    FailureCause.SCHEDULER_DEATH: "The engine crashed: one of its processes raised an error",
    FailureCause.STARTUP_TIMEOUT: "The engine took too long to start and was stopped",
}


def _plain_words(d: Diagnosis) -> str:
    """A clause without a full stop, so callers can say what happens next."""
    unexplained = d.cause in (FailureCause.UNKNOWN, FailureCause.SCHEDULER_DEATH)
    if unexplained and (d.exit_code == -signal.SIGKILL or "Exit code: -9" in d.evidence):
        return "The engine was killed by SIGKILL — probably the out-of-memory killer"
    if d.cause is FailureCause.UNKNOWN:
        return f"The engine {_describe_exit(d.exit_code)} unexpectedly"
    return _PLAIN_WORDS[d.cause]


_EXPLAINERS = {
    FailureCause.KV_POOL_TOO_SMALL: _kv_pool,
    FailureCause.CUDA_OOM_AT_LOAD: _oom_at_load,
    FailureCause.CUDA_OOM_ACTIVATION: _oom_activation,
    FailureCause.GRAPH_CAPTURE: _graph_capture,
    FailureCause.PORT_BUSY: _port_busy,
    FailureCause.KT_KERNEL_CPU: _kt_cpu,
    FailureCause.MODEL_PATH: _model_path,
    FailureCause.SCHEDULER_DEATH: _scheduler_death,
}
