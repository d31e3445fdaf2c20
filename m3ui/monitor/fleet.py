"""The Monitor on a fleet: every worker behind sglang-router read directly, and the fleet's totals.

The router serves no /v1/loads, so the app's one sampler, pointed at the router, sees nothing there. This source
finds the workers (from the app's FleetSupervisor when the app runs the fleet, `app.py --fleet`; else from the
router's GET /workers when the app is attached to a router, `--endpoint`) and reads each one as the sampler reads
one engine (m3ui/monitor/engine.py and experts.py: /v1/loads every tick, /server_info now and then, /metrics when
enabled, the expert recorder every few seconds where its dump folder is local), all on one thread. Totals are
sums: the fleet's GPU hit rate is all GPU hits over all routed activations, never a mean of the workers' rates.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from launch.fleet.router_api import RouterApiError, list_workers
from m3ui.engine_link import EngineLink
from m3ui.monitor.engine import EngineSnapshot, EngineSource
from m3ui.monitor.engine_parse import EngineLoad, EngineRates
from m3ui.monitor.experts import ExpertSnapshot, ExpertSource
from m3ui.monitor.sampler import SamplerConfig
from m3ui.monitor.service import WatchedEngine, target_for
from m3ui.monitor.target import MonitorTarget

if TYPE_CHECKING:
    from launch.fleet.supervisor import FleetSupervisor

log = logging.getLogger(__name__)

ROUTER_POLL_S = 5.0  # the router logs every request it serves: its worker list is read this often
NOT_A_ROUTER_RECHECK_S = 60.0  # an attached plain engine answers GET /workers 404: asked again this much later


@dataclass(frozen=True)
class WatchedWorker:
    """A worker to read, and what the fleet knows of it."""

    url: str
    state: str  # a launched worker's engine state ("ready", "starting", "failed", ...); else the router's view
    in_router: bool
    engine: WatchedEngine


@dataclass(frozen=True)
class WorkerView:
    url: str
    state: str
    in_router: bool
    engine: EngineSnapshot
    experts: ExpertSnapshot


@dataclass(frozen=True)
class FleetView:
    time: float
    router_url: str | None = None  # None: the app is not on a fleet
    workers: tuple[WorkerView, ...] = ()
    total: EngineSnapshot | None = None  # the workers' figures summed
    experts: ExpertSnapshot | None = None  # the workers' activations and GPU hits summed (no heatmap)

    @property
    def active(self) -> bool:
        return self.router_url is not None

    @property
    def answering(self) -> int:
        return sum(1 for w in self.workers if w.engine.load is not None)


# ------------------------------------------------------------ totals


def _sum(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def total_load(loads: Sequence[EngineLoad]) -> EngineLoad | None:
    """The workers' loads as one: counts and rates summed, KV use over the pooled KV cache, shares averaged."""
    if not loads:
        return None
    used, total = sum(x.used_tokens for x in loads), sum(x.max_total_tokens for x in loads)
    return EngineLoad(
        running_requests=sum(x.running_requests for x in loads), queued_requests=sum(x.queued_requests for x in loads),
        used_tokens=used, max_total_tokens=total,
        token_usage=used / total if total else sum(x.token_usage for x in loads) / len(loads),
        gen_throughput=sum(x.gen_throughput for x in loads),
        cache_hit_rate=sum(x.cache_hit_rate for x in loads) / len(loads),
        utilization=sum(x.utilization for x in loads) / len(loads),
        max_running_requests=sum(x.max_running_requests for x in loads),
        dp_ranks=max(x.dp_ranks for x in loads),  # ranks per engine: the workers are not one engine's ranks
    )


def total_rates(rates: Sequence[EngineRates]) -> EngineRates | None:
    """Per-second rates summed; the mean time to first token is left out (the rates do not carry its counts)."""
    if not rates:
        return None
    return EngineRates(
        prompt_tokens_per_s=_sum([r.prompt_tokens_per_s for r in rates]),
        generation_tokens_per_s=_sum([r.generation_tokens_per_s for r in rates]),
        requests_per_s=_sum([r.requests_per_s for r in rates]), aborted_per_s=_sum([r.aborted_per_s for r in rates]),
        mean_ttft_s=None,
    )


def total_engine(now: float, engines: Sequence[EngineSnapshot]) -> EngineSnapshot:
    """One snapshot for the fleet: "ok" while any worker answers, with the answering workers' figures summed."""
    answering = [e for e in engines if e.load is not None]
    if not answering:
        why = "no worker answers" if engines else "the router lists no worker"
        return EngineSnapshot(now, "unreachable", why)
    rates = [e.rates for e in answering if e.rates is not None]
    return EngineSnapshot(now, "ok", load=total_load([e.load for e in answering if e.load is not None]),
                          rates=total_rates(rates) if len(rates) == len(answering) else None, info=answering[0].info)


def total_experts(experts: Sequence[ExpertSnapshot]) -> ExpertSnapshot:
    """The workers' expert figures as one: activations summed, and the hit rate as the GPU hits of every worker
    that knows its GPU residency over those workers' activations. Its time is the newest worker's, so a new dump
    on any worker shows as a new snapshot."""
    now = max((e.time for e in experts), default=time.time())
    recording = [e for e in experts if e.status == "recording"]
    if not recording:
        first = experts[0] if experts else None
        return ExpertSnapshot(now, first.status if first else "no_engine", first.reason if first else None)
    rates = [e.hit_rate for e in recording if e.hit_rate is not None]
    sources = {e.residency_source for e in recording if e.hit_rate is not None}
    return ExpertSnapshot(
        now, "recording", window_s=max(e.window_s for e in recording),
        activations=sum(e.activations for e in recording),
        hit_rate=sum(rates[1:], rates[0]) if rates else None,
        residency_source="assumed" if "assumed" in sources else "recorded" if sources else "unknown",
        last_dump=max((e.last_dump for e in recording if e.last_dump is not None), default=None),
    )


# ------------------------------------------------------------ which workers


def supervised_workers(fleet: FleetSupervisor, api_key: str | None = None) -> tuple[WatchedWorker, ...]:
    """Every worker of the fleet this app runs, in or out of the router: a launched one with its process, its
    recorder folder and its settings (as the single-engine monitor watches an engine it launched)."""
    snapshot = fleet.fleet
    specs = {w.url.rstrip("/"): w for w in snapshot.workers}
    simulated = snapshot.engine.kind == "sim"
    watched = []
    for status in fleet.snapshot().workers:
        engine = fleet.worker_engine(status.url) if status.launched else None
        spec = specs.get(status.url)
        settings = getattr(spec, "settings", None)
        if engine is None or settings is None:
            target = WatchedEngine(url=status.url, api_key=api_key)
        else:
            run = engine.snapshot(log_lines=0)
            target = WatchedEngine(url=status.url, api_key=settings.api_key, pid=run.pid, settings=settings,
                                   recorder_dir=run.run_dir / "recorder" if run.run_dir else None, simulated=simulated)
        watched.append(WatchedWorker(status.url, status.state, status.in_router, target))
    return tuple(watched)


def router_workers(router_url: str, api_key: str | None) -> tuple[WatchedWorker, ...]:
    """The workers the router lists (raises RouterApiError when `router_url` is no router)."""
    return tuple(WatchedWorker(w.url, "healthy" if w.healthy else "unhealthy", True,
                               WatchedEngine(url=w.url, api_key=api_key)) for w in list_workers(router_url))


# ------------------------------------------------------------ reading them


class _WorkerReader:
    """One worker's engine and expert sources, polled as the sampler's engine thread polls its engine."""

    def __init__(self, watched: WatchedEngine, config: SamplerConfig) -> None:
        self.watched = watched
        target: MonitorTarget = target_for(watched)
        self._dump_every_s = config.expert_dump_every_s
        self.engine = EngineSource(config.request_timeout_s, config.slow_after_s, config.server_info_every_s)
        self.experts = ExpertSource(config.history_s, config.expert_dump_every_s, config.recorder_timeout_s)
        self.engine.set_target(target)
        self.experts.set_target(target)
        self._next_dump = 0.0
        self._seen: tuple[int, bool] | None = None

    def sample(self) -> tuple[EngineSnapshot, ExpertSnapshot]:
        engine = self.engine.sample()
        seen = (self.engine.epoch, engine.reachable)  # at once when the worker appears, comes back or goes away
        if time.monotonic() >= self._next_dump or seen != self._seen:
            self._next_dump, self._seen = time.monotonic() + self._dump_every_s, seen
            self.experts.poll(engine, self.engine.epoch)
        return engine, self.experts.latest()

    def close(self) -> None:
        self.engine.close()
        self.experts.close()


class FleetMonitor:
    """Start once with the app; `stop()` at exit. Idle (one look at the link per tick) unless the app's engine is a
    router. Readers take `latest()` and `history()`, which only copy."""

    def __init__(self, link: EngineLink, fleet: Callable[[], FleetSupervisor | None] = lambda: None,
                 config: SamplerConfig | None = None) -> None:
        """`fleet`: the fleet this app runs, if any (its workers are read whether or not the router lists them)."""
        self.link = link
        self.config = config or SamplerConfig()
        self._fleet = fleet
        self._readers: dict[str, _WorkerReader] = {}
        self._lock = threading.Lock()
        self._latest = FleetView(time.time())
        self._history: deque[EngineSnapshot] = deque(maxlen=int(self.config.history_s / self.config.interval_s) + 1)
        self._router: tuple[str, tuple[WatchedWorker, ...]] | None = None  # the attached router's last list
        self._next_router_poll = 0.0
        self._expert_statuses: tuple[tuple[str, str], ...] = ()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self._thread is None:
            self._stopping.clear()
            self._thread = threading.Thread(target=self._loop, name="monitor-fleet", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(10.0)
            self._thread = None
        for reader in self._readers.values():
            reader.close()
        self._readers = {}

    def latest(self) -> FleetView:
        return self._latest

    def history(self, since: float | None = None) -> tuple[EngineSnapshot, ...]:
        """The fleet's totals, one per tick (the last `history_s`, or those after `since`)."""
        with self._lock:
            return tuple(s for s in self._history if since is None or s.time > since)

    def sample_once(self) -> FleetView:
        """One tick on the calling thread (tests; not while the thread runs)."""
        self._tick()
        return self._latest

    def _loop(self) -> None:
        while not self._stopping.wait(self.config.interval_s):
            try:
                self._tick()
            except Exception:  # the panel keeps its last view rather than stop for good
                log.exception("fleet monitor tick failed")

    def _watched(self) -> tuple[str | None, tuple[WatchedWorker, ...]]:
        fleet = self._fleet()
        if fleet is not None:
            return fleet.fleet.router.url, supervised_workers(fleet, self.link.api_key)
        status = self.link.status()
        if status.mode != "attached" or not status.url:
            self._router = None
            return None, ()
        known = self._router if self._router is not None and self._router[0] == status.url else None
        if time.monotonic() < self._next_router_poll:
            return known if known is not None else (None, ())
        try:
            self._router = (status.url, router_workers(status.url, self.link.api_key))
            self._next_router_poll = time.monotonic() + ROUTER_POLL_S
        except RouterApiError:
            if known is None:  # a plain engine, not a router
                self._next_router_poll = time.monotonic() + NOT_A_ROUTER_RECHECK_S
                return None, ()
            self._next_router_poll = time.monotonic() + ROUTER_POLL_S  # the router is down: keep its last list
        return self._router  # type: ignore[return-value]  # set in the try, or kept from before (known)

    def _tick(self) -> None:
        router, watched = self._watched()
        now = time.time()
        wanted = {w.url: w.engine for w in watched}
        for url in [u for u, reader in self._readers.items() if wanted.get(u) != reader.watched]:
            self._readers.pop(url).close()  # gone, or another engine at that URL (restarted)
        if router is None:
            if self._latest.active:
                self._latest = FleetView(now)
                with self._lock:
                    self._history.clear()
            return
        views = []
        for worker in watched:
            reader = self._readers.get(worker.url)
            if reader is None:
                reader = self._readers[worker.url] = _WorkerReader(worker.engine, self.config)
            engine, experts = reader.sample()
            views.append(WorkerView(worker.url, worker.state, worker.in_router, engine, experts))
        total = total_engine(now, [v.engine for v in views])
        self._latest = FleetView(now, router, tuple(views), total, self._experts_total(views))
        with self._lock:
            self._history.append(total)

    def _experts_total(self, views: list[WorkerView]) -> ExpertSnapshot:
        """The workers' expert total. Each worker dumps every `expert_dump_every_s`, at its own moment: its time
        (which makes the Monitor send every worker's heatmap again) moves on at most that often, or at once when
        a worker's expert status changed, so that N workers do not cost N times the heatmap traffic."""
        experts = total_experts([v.experts for v in views])
        statuses = tuple((v.url, v.experts.status) for v in views)
        last = self._latest.experts
        if last is not None and statuses == self._expert_statuses \
                and experts.time - last.time < self.config.expert_dump_every_s:
            experts = replace(experts, time=last.time)
        self._expert_statuses = statuses
        return experts

