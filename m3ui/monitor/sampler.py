"""One background sampler for every browser session: sample once, serve the cached snapshot to all.

Two threads, so a slow engine never delays the machine's own figures:
- "local": the engine's process tree, the GPUs (NVML) and the CPU (psutil), every `interval_s`;
- "engine": /v1/loads (+ /server_info, /metrics) every `interval_s`, and the expert recorder every
  `expert_dump_every_s` (a dump pauses the engine's scheduler while it saves ~40 MB, so not every second).
Each source keeps a bounded history of `history_s`. `latest()` and `history()` only copy under a lock.

Nobody may be looking: a reader of `latest()` or `history()` is a viewer for `watch_linger_s`, and without one
both threads tick every `unwatched_interval_s` only (the history stays, sparser; the recorder is still dumped
every `expert_dump_every_s`, so its ring never overflows). The first read after such a pause wakes both threads,
so a viewer's next refresh is fresh.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from m3ui.experts.hit_rate import HitRate
from m3ui.experts.window import HitRatePoint
from m3ui.monitor.cpu import CpuPoint, CpuSnapshot, CpuSource
from m3ui.monitor.engine import EngineSnapshot, EngineSource
from m3ui.monitor.experts import ExpertSnapshot, ExpertSource
from m3ui.monitor.gpu import GpuSnapshot, GpuSource
from m3ui.monitor.processes import EngineProcesses
from m3ui.monitor.target import MonitorTarget

log = logging.getLogger(__name__)
_T = TypeVar("_T")


@dataclass(frozen=True)
class SamplerConfig:
    interval_s: float = 1.0
    history_s: float = 600.0
    expert_dump_every_s: float = 5.0
    request_timeout_s: float = 2.0  # /v1/loads, /server_info, /metrics
    slow_after_s: float = 0.5  # an answer later than this makes the engine "slow"
    recorder_timeout_s: float = 10.0  # start/dump of the expert recorder
    server_info_every_s: float = 30.0
    process_relist_s: float = 5.0
    unwatched_interval_s: float = 5.0  # the tick while nobody reads the snapshot (never below interval_s)
    watch_linger_s: float = 10.0  # a read (or the start) counts as someone watching for this long
    # Answers that end within this share one recorder dump. Each dump pauses the engine's scheduler while it saves
    # ~40 MB (and the app reads it back), so while many answers end, one a second at most; a lone answer's dump
    # starts at once.
    checkpoint_gap_s: float = 1.0


@dataclass(frozen=True)
class MonitorSnapshot:
    gpu: GpuSnapshot
    cpu: CpuSnapshot
    engine: EngineSnapshot
    experts: ExpertSnapshot


@dataclass(frozen=True)
class MonitorHistory:
    gpu: tuple[GpuSnapshot, ...]
    cpu: tuple[CpuPoint, ...]
    engine: tuple[EngineSnapshot, ...]
    experts: tuple[HitRatePoint, ...]  # one point per recorder dump


def _since(items: deque[_T], since: float | None, when: Callable[[_T], float]) -> tuple[_T, ...]:
    return tuple(items) if since is None else tuple(item for item in items if when(item) > since)


class Sampler:
    def __init__(self, target: MonitorTarget | None = None, config: SamplerConfig | None = None) -> None:
        self.config = config = config or SamplerConfig()
        size = math.ceil(config.history_s / config.interval_s) + 1
        self._lock = threading.Lock()
        self._target = target or MonitorTarget()
        self._target_version = 0
        self._processes = EngineProcesses(config.process_relist_s)
        self._gpu = GpuSource()
        self._cpu = CpuSource()
        self._engine = EngineSource(config.request_timeout_s, config.slow_after_s, config.server_info_every_s)
        self._experts = ExpertSource(config.history_s, config.expert_dump_every_s, config.recorder_timeout_s,
                                     checkpoint_gap_s=config.checkpoint_gap_s)
        now = time.time()
        self._latest_gpu = GpuSnapshot(now, "pending")
        self._latest_cpu = CpuSnapshot(now, "pending")
        self._latest_engine = EngineSnapshot(now, "pending", "waiting for the first sample")
        self._gpu_history: deque[GpuSnapshot] = deque(maxlen=size)
        self._cpu_history: deque[CpuPoint] = deque(maxlen=size)
        self._engine_history: deque[EngineSnapshot] = deque(maxlen=size)
        self._applied = {"local": -1, "engine": -1}  # target version each thread has applied
        self._next_expert_poll = 0.0
        self._expert_poll_seen: tuple[int, bool] | None = None
        self._watched_until = 0.0  # time.monotonic() until which someone counts as watching
        self._stopping = threading.Event()
        self._wake = {"local": threading.Event(), "engine": threading.Event()}
        self._threads: list[threading.Thread] = []

    # ------------------------------------------------------------ control

    def start(self) -> None:
        if self._threads:
            return
        self._stopping.clear()
        self._watched_until = time.monotonic() + self.config.watch_linger_s  # the first views are fresh
        self._threads = [
            threading.Thread(target=self._loop, args=(name, tick), name=f"monitor-{name}", daemon=True)
            for name, tick in (("local", self._local_tick), ("engine", self._engine_tick))
        ]
        for thread in self._threads:
            thread.start()

    def stop(self, timeout_s: float = 5.0) -> None:
        self._stopping.set()
        for event in self._wake.values():
            event.set()
        for thread in self._threads:
            thread.join(timeout_s)
        self._threads = []
        self._gpu.close()
        self._engine.close()
        self._experts.close()
        with self._lock:  # the sources are closed: the next tick sets them up again
            self._applied = dict.fromkeys(self._applied, -1)

    def __enter__(self) -> Sampler:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def set_target(self, target: MonitorTarget) -> None:
        """Watch another engine (or none); each thread switches at its next tick, which comes at once."""
        with self._lock:
            self._target, self._target_version = target, self._target_version + 1
        for event in self._wake.values():
            event.set()

    def sample_once(self) -> MonitorSnapshot:
        """Sample everything now, the recorder included, on the calling thread (CLI, benchmarks, tests;
        not while the threads run)."""
        self._local_tick()
        self._next_expert_poll = 0.0
        self._engine_tick()
        return self.latest()

    # ------------------------------------------------------------ reading

    def latest(self) -> MonitorSnapshot:
        self._watching()
        with self._lock:
            return MonitorSnapshot(self._latest_gpu, self._latest_cpu, self._latest_engine, self._experts.latest())

    def latest_experts(self) -> ExpertSnapshot:
        """The expert snapshot alone, for a figure of the chat's: unlike `latest()`, no sign that someone
        watches the Monitor."""
        return self._experts.latest()

    def history(self, since: float | None = None) -> MonitorHistory:
        """Everything kept (the last `history_s`), or what came after `since` (a time.time() value)."""
        self._watching()
        with self._lock:
            gpu = _since(self._gpu_history, since, lambda s: s.time)
            cpu = _since(self._cpu_history, since, lambda p: p.time)
            engine = _since(self._engine_history, since, lambda s: s.time)
        experts = tuple(p for p in self._experts.points() if since is None or p.time > since)
        return MonitorHistory(gpu, cpu, engine, experts)

    def expert_checkpoint(self, after: float | None = None) -> float | None:
        """The boundary time of a recorder dump begun after `after` (default now), shared with the callers
        that ask at about the same time; bracket an answer with two of these."""
        return self._experts.checkpoint(after)

    def expert_hit_rate_between(self, t0: float, t1: float) -> HitRate | None:
        return self._experts.hit_rate_between(t0, t1)

    # ------------------------------------------------------------ the threads

    def _watching(self) -> None:
        now = time.monotonic()
        paused = now > self._watched_until
        self._watched_until = now + self.config.watch_linger_s
        if paused and self._threads:  # a viewer came back: sample at once rather than at the next slow tick
            for event in self._wake.values():
                event.set()

    def _interval(self, thread: str) -> float:
        config = self.config
        if time.monotonic() <= self._watched_until:
            return config.interval_s
        slow = config.unwatched_interval_s
        if thread == "engine":  # it also drives the recorder's dumps
            slow = min(slow, config.expert_dump_every_s)
        return max(config.interval_s, slow)

    def _loop(self, name: str, tick: Callable[[], None]) -> None:
        due = time.monotonic()
        while not self._stopping.is_set():
            try:
                tick()
            except Exception:  # a bug in one source must not freeze every panel: log it, keep sampling
                log.exception("monitor %s tick failed", name)
            due = max(due + self._interval(name), time.monotonic())  # after an overrun start afresh, don't catch up
            if self._wake[name].wait(max(0.0, due - time.monotonic())):
                due = time.monotonic()  # woken early: the next interval counts from now
            self._wake[name].clear()

    def _pending_target(self, thread: str) -> MonitorTarget | None:
        with self._lock:
            if self._applied[thread] == self._target_version:
                return None
            self._applied[thread] = self._target_version
            return self._target

    def _local_tick(self) -> None:
        target = self._pending_target("local")
        if target is not None:
            self._processes.set_root(target.engine_pid)
            self._cpu.set_kt_threads(target.kt_threads)
        tree = self._processes.sample()
        gpu = self._gpu.sample(tree.pids)
        cpu = self._cpu.sample(tree)
        with self._lock:
            self._latest_gpu, self._latest_cpu = gpu, cpu
            self._gpu_history.append(gpu)
            self._cpu_history.append(CpuPoint.of(cpu))

    def _engine_tick(self) -> None:
        target = self._pending_target("engine")
        if target is not None:
            self._engine.set_target(target)
            self._experts.set_target(target)
            self._next_expert_poll = 0.0
        engine = self._engine.sample()
        with self._lock:
            self._latest_engine = engine
            self._engine_history.append(engine)
        # poll when due (at the tick nearest to it), and at once when the engine appears, comes back or goes away
        seen = (self._engine.epoch, engine.reachable)
        now = time.monotonic()
        if now + self._interval("engine") / 2 >= self._next_expert_poll or seen != self._expert_poll_seen:
            self._next_expert_poll = now + self.config.expert_dump_every_s
            self._expert_poll_seen = seen
            self._experts.poll(engine, self._engine.epoch)
