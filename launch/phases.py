"""Engine start-up phases, read from the log lines of sglang-kt 0.7.2 (ENGINE_CONTRACT.md §2).

`parse_line` is pure: one log line → the phase it announces, or None. `PhaseTracker` folds those events
into the current phase and an overall progress figure. Lines carry sglang's prefix
(`[2026-11-29 19:07:13 TP0] `); tqdm bars may arrive as several `\\r`-separated updates on one line.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum


class Phase(Enum):
    STARTING = "starting"
    LOADING_WEIGHTS = "loading weights"
    KV_CACHE = "KV cache"
    CUDA_GRAPHS = "CUDA graphs"
    WARMUP = "warm-up"
    READY = "ready"


PHASE_ORDER = tuple(Phase)

# Where each phase starts on the overall 0..1 progress bar: loading dominates the wait (KT reads every
# routed expert into CPU RAM), graphs and warm-up take seconds to minutes.
_PHASE_START = {
    Phase.STARTING: 0.0,
    Phase.LOADING_WEIGHTS: 0.05,
    Phase.KV_CACHE: 0.75,
    Phase.CUDA_GRAPHS: 0.8,
    Phase.WARMUP: 0.92,
    Phase.READY: 1.0,
}


@dataclass(frozen=True)
class PhaseEvent:
    phase: Phase
    detail: str
    kt_layer: int | None = None  # a KT `[NativeMoEWrapper Layer L] load_experts` line
    fraction: float | None = None  # a tqdm bar's own progress within the phase


_PREFIX = re.compile(r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d[^\]]*\]\s*")


def clean_line(line: str) -> str:
    """What a terminal would show: the last `\\r` update, without the trailing newline."""
    pieces = [p for p in line.rstrip("\r\n").split("\r") if p.strip()]
    return pieces[-1] if pieces else ""


def strip_prefix(line: str) -> str:
    """The message without sglang's `[date time TPn] ` prefix."""
    return _PREFIX.sub("", clean_line(line), count=1)


Rule = tuple[re.Pattern[str], Callable[[re.Match[str]], PhaseEvent]]

_RULES: tuple[Rule, ...] = (
    (re.compile(r"Init torch distributed begin"),
     lambda m: PhaseEvent(Phase.STARTING, "initializing torch distributed")),
    (re.compile(r"Init torch distributed ends"),
     lambda m: PhaseEvent(Phase.STARTING, "torch distributed initialized")),
    (re.compile(r"Load weight begin\. avail mem=([\d.]+) GB"),
     lambda m: PhaseEvent(Phase.LOADING_WEIGHTS, f"loading weights ({m[1]} GB GPU memory free)")),
    (re.compile(r"\[NativeMoEWrapper Layer (\d+)\] load_experts"),
     lambda m: PhaseEvent(Phase.LOADING_WEIGHTS, f"loading CPU experts of layer {m[1]}", kt_layer=int(m[1]))),
    (re.compile(r"Loading safetensors checkpoint shards:\s*\d+% Completed \| (\d+)/(\d+)"),
     lambda m: PhaseEvent(Phase.LOADING_WEIGHTS, f"checkpoint shard {m[1]}/{m[2]}",
                          fraction=int(m[1]) / max(1, int(m[2])))),
    (re.compile(r"Load weight end\..*mem usage=([\d.]+) GB"),
     lambda m: PhaseEvent(Phase.KV_CACHE, f"weights loaded ({m[1]} GB per GPU); sizing the KV cache")),
    (re.compile(r"KV Cache is allocated\. #tokens: (\d+)"),
     lambda m: PhaseEvent(Phase.KV_CACHE, f"KV cache allocated: {int(m[1]):,} tokens")),
    (re.compile(r"Memory pool end\. avail mem=([\d.]+) GB"),
     lambda m: PhaseEvent(Phase.KV_CACHE, f"memory pool ready ({m[1]} GB GPU memory free)")),
    (re.compile(r"Capture cuda graph begin\."),
     lambda m: PhaseEvent(Phase.CUDA_GRAPHS, "capturing CUDA graphs")),
    (re.compile(r"Capturing batches \(bs=(\d+)[^)]*\):\s*\d+%\|[^|]*\|\s*(\d+)/(\d+)"),
     lambda m: PhaseEvent(Phase.CUDA_GRAPHS, f"capturing CUDA graph for batch size {m[1]} ({m[2]}/{m[3]})",
                          fraction=int(m[2]) / max(1, int(m[3])))),
    (re.compile(r"Capture cuda graph end\. Time elapsed: ([\d.]+) s"),
     lambda m: PhaseEvent(Phase.CUDA_GRAPHS, f"CUDA graphs captured in {m[1]} s", fraction=1.0)),
    (re.compile(r"max_total_num_tokens=(\d+),.*context_len=(\d+)"),
     lambda m: PhaseEvent(Phase.WARMUP, f"scheduler up: {int(m[1]):,} KV tokens, context {int(m[2]):,}")),
    (re.compile(r"Uvicorn running on (\S+)"),
     lambda m: PhaseEvent(Phase.WARMUP, f"HTTP server up on {m[1]}; warm-up request")),
    (re.compile(r"The server is fired up and ready to roll!"),
     lambda m: PhaseEvent(Phase.READY, "ready")),
)


def parse_line(line: str) -> PhaseEvent | None:
    """The phase event a log line announces, or None for every other line."""
    text = strip_prefix(line)
    for pattern, make in _RULES:
        match = pattern.search(text)
        if match:
            return make(match)
    return None


class PhaseTracker:
    """The current phase and progress of one start-up, fed line by line. Phases only move forward:
    with TP > 1 every rank prints its own lines, and a slow rank's late line must not rewind the bar."""

    def __init__(self, moe_layers: int | None = None) -> None:
        self._moe_layers = moe_layers if moe_layers and moe_layers > 0 else None
        self._kt_layers: set[int] = set()
        self.phase: Phase = Phase.STARTING
        self.detail = "starting the engine process"
        self.phase_fraction: float | None = None

    def feed(self, line: str) -> PhaseEvent | None:
        event = parse_line(line)
        if event is not None:
            self.apply(event)
        return event

    def apply(self, event: PhaseEvent) -> None:
        if PHASE_ORDER.index(event.phase) < PHASE_ORDER.index(self.phase):
            return
        if event.phase is not self.phase:
            self.phase_fraction = None
        self.phase = event.phase
        self.detail = event.detail
        if event.kt_layer is not None:
            self._kt_layers.add(event.kt_layer)
            if self._moe_layers:
                seen = len(self._kt_layers)
                self.phase_fraction = min(1.0, seen / self._moe_layers)
                self.detail = f"{event.detail} ({seen}/{self._moe_layers} MoE layers)"
        elif event.fraction is not None and not (self._kt_layers and self._moe_layers):
            # KT's per-layer count, when known, is the better measure: CPU experts are most of the bytes.
            self.phase_fraction = event.fraction

    def mark_ready(self) -> None:
        """Readiness was proven over HTTP, whatever the log said."""
        self.apply(PhaseEvent(Phase.READY, "ready"))

    @property
    def progress(self) -> float:
        """Overall start-up progress, 0..1."""
        start = _PHASE_START[self.phase]
        if self.phase is Phase.READY:
            return 1.0
        end = _PHASE_START[PHASE_ORDER[PHASE_ORDER.index(self.phase) + 1]]
        return start + (end - start) * (self.phase_fraction or 0.0)
