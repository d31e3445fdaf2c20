"""Supervising a fleet: its launched workers, the router in front, and the router's worker list kept true.

Each worker launched here is an engine run by its own `Supervisor` (launch/supervisor.py: process group,
phases, readiness, diagnosis) in its own folder, with automatic restarts and back-off. Once every one is ready,
the router starts with the whole fleet's URLs. Then one watcher thread reconciles on every tick: a launched
worker that is not ready (dead, restarting) is removed from the router at once, so new requests only go to
healthy workers, and is added back when its restart is ready. The fleet is ready when the router answers
/health and lists every worker healthy; a router that dies fails the fleet, and everything is stopped. What a
killed supervisor leaves running is stopped by the next one (launch/fleet/recovery.py).

No worker gets a prompt before it proved to be an engine serving the fleet's model (launch/fleet/worker_proof.py:
its /v1/models and /server_info parse, and name the model of the first worker proven, a launched one first). A
prover thread asks every worker again every few seconds: one whose answers stop parsing is taken out of the router
and shown untrusted, with what it sent, until it proves itself again.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from enum import Enum
from pathlib import Path

from launch.findings import Finding
from launch.fleet.commands import router_command
from launch.fleet.recovery import FLEETS_DIR, clear_router_state, write_router_state
from launch.fleet.router_api import (
    RouterApiError,
    RouterWorker,
    add_worker,
    list_workers,
    remove_worker,
    router_healthy,
)
from launch.fleet.router_process import RouterProcess
from launch.fleet.spec import AttachedWorker, Fleet, LaunchedWorker, Worker
from launch.fleet.validation import validate_fleet
from launch.fleet.worker_proof import Proof, prove_worker
from launch.private_files import private_dir
from launch.restart_policy import RestartPolicy
from launch.run_folder import new_run_folder
from launch.supervisor import EngineState, Supervisor

TICK_S = 0.2
ROUTER_POLL_S = 5.0
ADD_PATIENCE_S = 10.0  # a worker added to the router and not yet listed is added again after this
STOP_GRACE_S = 5.0
PROOF_EVERY_S = 5.0  # each worker proves itself again this often
PROOF_RETRY_S = 0.5  # while some worker has not proved itself yet, or did not answer (it may be restarting)
# Workers are restarted soon and often: the others carry the load meanwhile.
HEALING = RestartPolicy(enabled=True, max_attempts=5, window_s=600.0, first_delay_s=1.0, max_delay_s=30.0)


class FleetState(Enum):
    STARTING = "starting"
    READY = "ready"  # the router and every worker serve
    DEGRADED = "degraded"  # the router serves, some worker is down or restarting
    FAILED = "failed"
    STOPPING = "stopping"
    STOPPED = "stopped"


@dataclass(frozen=True)
class WorkerStatus:
    url: str
    launched: bool
    state: str  # the engine's state for a launched worker; "attached" otherwise
    detail: str
    in_router: bool
    healthy: bool  # as the router sees it
    load: int  # the router's count of its requests in flight there; -1: not in the router
    outages: int  # times it was taken out of the router (died, restarting, or its answers stopped parsing)
    restarts: int = 0  # automatic restarts of a launched worker's engine
    untrusted: str | None = None  # why it gets no prompts: it has not proved to be an engine serving the model


@dataclass(frozen=True)
class FleetSnapshot:
    state: FleetState
    detail: str
    router_url: str
    router_pid: int | None
    workers: tuple[WorkerStatus, ...]
    run_dir: Path | None


class FleetSupervisor:
    def __init__(self, fleet: Fleet, run_root: Path, *, policy: RestartPolicy = HEALING,
                 startup_timeout_s: float = 3600.0) -> None:
        self.fleet = fleet
        self.run_root = Path(run_root)
        self.policy = policy
        self.startup_timeout_s = startup_timeout_s
        self._lock = threading.RLock()
        self._changed = threading.Condition(self._lock)
        self._state = FleetState.STOPPED
        self._detail = "not started"
        self._run_dir: Path | None = None
        self._engines: dict[str, Supervisor] = {}  # a launched worker's URL -> its engine's supervisor
        self._launched = 0  # worker folders made so far (worker-1, worker-2, ...)
        self._router: RouterProcess | None = None
        self._listed: dict[str, RouterWorker] = {}
        self._outages: dict[str, int] = {}
        self._restarts: dict[str, int] = {}  # a launched worker's URL -> its engine's automatic restarts
        self._ready_seen: dict[str, bool] = {}  # each launched worker's readiness at the last look at the router
        self._next_poll = 0.0
        self._adding: dict[str, float] = {}  # worker URL -> when an addition still unlisted may be repeated
        self._proofs: dict[str, Proof] = {}  # worker URL -> its last conclusive proof
        self._silent: set[str] = set()  # workers that did not answer their last proof: never added to the router
        self._model: str | None = None  # the model the fleet serves: that of the first worker proven
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._prover: threading.Thread | None = None

    # --- starting and stopping ---------------------------------------------------------------------

    def start(self) -> Path:
        """Launch every local worker; the watcher starts the router once they are ready. Returns the run folder."""
        with self._lock:
            if self._state not in (FleetState.STOPPED, FleetState.FAILED):
                raise RuntimeError(f"the fleet is already {self._state.value}")
            self._run_dir = run_dir = new_run_folder(private_dir(self.run_root / FLEETS_DIR))
            self._state, self._detail, self._stop = FleetState.STARTING, "starting workers", threading.Event()
            self._engines, self._router, self._listed, self._launched = {}, None, {}, 0
            self._ready_seen, self._next_poll, self._adding = {}, 0.0, {}
            self._proofs, self._model, self._silent = {}, None, set()
            try:
                for worker in self.fleet.local_workers:
                    self._launch(worker)
            except BaseException:
                self._stop_all()
                self._state = FleetState.FAILED
                raise
            self._outages, self._restarts = {}, {}
            self._thread = threading.Thread(target=self._watch, name="fleet-watcher", daemon=True)
            self._prover = threading.Thread(target=self._prove, args=(self._stop,), name="fleet-prover", daemon=True)
            self._thread.start()
            self._prover.start()
            return run_dir

    def stop(self) -> None:
        """Stop the router first (no new requests), then every worker. Idempotent."""
        with self._lock:
            if self._state in (FleetState.STOPPED, FleetState.STOPPING):
                return
            self._state, self._detail = FleetState.STOPPING, "stopping"
            self._stop.set()
            self._changed.notify_all()
        for thread in (self._thread, self._prover):
            if thread is not None and thread is not threading.current_thread():
                thread.join(timeout=10)
        self._stop_all()
        with self._lock:
            self._state, self._detail = FleetState.STOPPED, "stopped"
            self._changed.notify_all()

    def _stop_all(self) -> None:
        if self._router is not None:
            self._router.stop(STOP_GRACE_S)
            assert self._run_dir is not None
            clear_router_state(self._run_dir)
        closers = [threading.Thread(target=e.close, args=(STOP_GRACE_S,)) for e in list(self._engines.values())]
        for closer in closers:  # side by side: each may wait out its grace period
            closer.start()
        for closer in closers:
            closer.join()

    # --- watching ----------------------------------------------------------------------------------

    def _watch(self) -> None:
        started = time.monotonic()
        while not self._stop.wait(TICK_S):
            try:
                if self._router is None:
                    if self._tick_workers_starting(time.monotonic() - started):
                        continue
                    return
                if not self._tick_serving():
                    return
            except Exception as exc:  # a bug here must show as a failure, never as "starting" forever
                self._fail(f"fleet supervision failed: {exc!r}")
                return

    def _prove(self, stop: threading.Event) -> None:
        """Every worker proves itself, side by side, every PROOF_EVERY_S (every PROOF_RETRY_S while one has not)."""
        with ThreadPoolExecutor(8, thread_name_prefix="fleet-proof") as pool:
            while not stop.is_set():
                with self._lock:
                    keys = {url: self._api_key(url) for url in self.fleet.worker_urls}
                proofs = dict(zip(keys, pool.map(prove_worker, keys, keys.values()), strict=True))
                with self._lock:
                    self._record_proofs(proofs)
                    settled = not self._silent and all(self._trusted(url) for url in self.fleet.worker_urls)
                stop.wait(PROOF_EVERY_S if settled else PROOF_RETRY_S)

    def _api_key(self, url: str) -> str | None:
        """The key a worker expects: a launched one's own; for an attached one, the launched workers'."""
        launched = [w for w in self.fleet.workers if isinstance(w, LaunchedWorker)]
        own = next((w for w in launched if w.url.rstrip("/") == url), None)
        return own.settings.api_key if own is not None else next((w.settings.api_key for w in launched), None)

    def _record_proofs(self, proofs: dict[str, Proof]) -> None:
        """Keep each conclusive proof (a worker that did not answer keeps its last one); the first worker proven,
        a launched one first, names the fleet's model. Under the lock."""
        current = set(self.fleet.worker_urls)
        self._proofs.update({url: proof for url, proof in proofs.items() if proof.conclusive and url in current})
        self._silent = {url for url, proof in proofs.items() if not proof.conclusive}
        if self._model is None:
            order = sorted(self.fleet.worker_urls, key=lambda url: url not in self._engines)
            self._model = next((self._proofs[u].model for u in order if u in self._proofs and self._proofs[u].proven),
                               None)

    def _trusted(self, url: str) -> bool:
        return self._untrusted(url) is None

    def _untrusted(self, url: str) -> str | None:
        """Why `url` gets no prompts (None: it proved to be an engine serving the fleet's model)."""
        proof = self._proofs.get(url)
        if proof is None:
            return "it has not yet proved to be an engine (its /v1/models and /server_info)"
        return proof.for_model(self._model).problem

    def _tick_workers_starting(self, elapsed: float) -> bool:
        """Before the router: wait for every launched worker. False when the fleet has failed."""
        states = [engine.snapshot() for engine in list(self._engines.values())]
        for i, snap in enumerate(states, 1):
            if snap.state is EngineState.FAILED and (snap.auto_restart is None or snap.auto_restart.gave_up):
                self._fail(f"worker {i} failed: {snap.phase_detail}")
                return False
        ready = sum(s.state is EngineState.READY for s in states)
        if ready < len(states):
            if elapsed > self.startup_timeout_s:
                self._fail(f"only {ready} of {len(states)} workers were ready after {self.startup_timeout_s:.0f} s")
                return False
            self._set_detail(f"starting workers: {ready} of {len(states)} ready")
            return True
        with self._lock:
            untrusted = {i: (url, self._untrusted(url), url in self._proofs)
                         for i, url in enumerate(self.fleet.worker_urls, 1) if not self._trusted(url)}
        refused = next(((i, url, why) for i, (url, why, answered) in untrusted.items() if answered), None)
        if refused is not None:  # it answered, and not as an engine serving the fleet's model
            self._fail(f"worker {refused[0]} ({refused[1]}) cannot serve the fleet: {refused[2]}")
            return False
        if untrusted:
            if elapsed > self.startup_timeout_s:
                self._fail(f"{len(untrusted)} worker(s) did not prove to be engines within "
                           f"{self.startup_timeout_s:.0f} s")
                return False
            i, (url, why, _) = next(iter(untrusted.items()))
            self._set_detail(f"waiting for worker {i} ({url}) to prove it is an engine: {why}")
            return True
        assert self._run_dir is not None
        with self._lock:
            if self._stop.is_set():
                return False
            self._router = RouterProcess(router_command(self.fleet), self._run_dir)
            write_router_state(self._run_dir, self._router)
        self._set_detail(f"starting the router (pid {self._router.pid})")
        return True

    def _tick_serving(self) -> bool:
        """With the router: keep its worker list true and the fleet's state current. False once failed.
        The router logs every request it serves, so it is asked only when a worker's readiness changed, while
        a change is under way, or every ROUTER_POLL_S."""
        assert self._router is not None
        if not self._router.alive():
            tail = " | ".join(self._router.log_tail(3))
            self._fail(f"the router exited with status {self._router.exit_code}: {tail}")
            return False
        self._router.follow_log()  # bounds its log (a line per request)
        with self._lock:  # a worker gets prompts once its engine is ready (a launched one) and it proved itself
            ready = {url: self._trusted(url) and (url not in self._engines or self._engines[url].state is
                                                   EngineState.READY) for url in self.fleet.worker_urls}
        now = time.monotonic()
        serving = self._state in (FleetState.READY, FleetState.DEGRADED)
        if serving and ready == self._ready_seen and now < self._next_poll:
            return True
        self._ready_seen, self._next_poll = ready, now + ROUTER_POLL_S
        url = self.fleet.router.url
        if not serving and not router_healthy(url):
            self._set_detail("waiting for the router's /health")
            return True
        try:
            listed = {w.url: w for w in list_workers(url)}
            if self._reconcile(url, listed, ready):
                self._next_poll = now  # the router queues additions and removals: see them land
        except RouterApiError as exc:
            self._set_detail(f"router API: {exc}")
            self._next_poll = now
            return True
        with self._lock:
            self._listed = listed
            healthy = sum(1 for u in self.fleet.worker_urls if u in listed and listed[u].healthy)
            total = len(self.fleet.worker_urls)
            if self._state is FleetState.STARTING and healthy < total:
                self._detail = f"router up; {healthy} of {total} workers registered and healthy"
                self._next_poll = now
            elif self._state not in (FleetState.STOPPING, FleetState.STOPPED):
                self._state = FleetState.READY if healthy == total else FleetState.DEGRADED
                self._detail = f"serving on {url} with {healthy} of {total} workers"
            self._changed.notify_all()
        return True

    def _reconcile(self, router_url: str, listed: dict[str, RouterWorker], ready: dict[str, bool]) -> bool:
        """Only a ready, proven engine is in the router; one that died or whose answers stopped parsing is taken
        out at once and put back once ready and proven. True while a change is under way."""
        busy = False
        now = time.monotonic()
        for url, is_ready in ready.items():
            entry = listed.get(url)
            if entry is not None:
                self._adding.pop(url, None)
            if entry is not None and not is_ready:
                remove_worker(router_url, entry)
                listed.pop(url)
                with self._lock:
                    self._outages[url] = self._outages.get(url, 0) + 1
            elif entry is None and is_ready and self._state is not FleetState.STARTING:
                busy = True
                # Checked again (remove() may have just dropped it); and an addition in the router's queue is not
                # repeated until it had time to land.
                if url in self.fleet.worker_urls and url not in self._silent and now >= self._adding.get(url, 0.0):
                    add_worker(router_url, url)
                    self._adding[url] = now + ADD_PATIENCE_S
        return busy

    def _fail(self, why: str) -> None:
        with self._lock:
            if self._stop.is_set():
                return
            self._stop.set()
        self._stop_all()
        with self._lock:
            self._state, self._detail = FleetState.FAILED, why
            self._changed.notify_all()

    def _set_detail(self, detail: str) -> None:
        with self._lock:
            self._detail = detail

    # --- observing ---------------------------------------------------------------------------------

    @property
    def state(self) -> FleetState:
        return self._state

    @property
    def model(self) -> str | None:
        """The model the fleet serves (None until a worker proved which)."""
        return self._model

    def wait_ready(self, timeout: float) -> bool:
        with self._changed:
            self._changed.wait_for(lambda: self._state is not FleetState.STARTING, timeout)
            return self._state is FleetState.READY

    def snapshot(self) -> FleetSnapshot:
        with self._lock:
            engines = dict(self._engines)
            workers = []
            for url in self.fleet.worker_urls:
                entry = self._listed.get(url)
                engine = engines.get(url)
                snap = engine.snapshot(log_lines=0) if engine is not None else None
                detail = snap.phase_detail if snap else "started elsewhere"
                if snap and snap.state is EngineState.FAILED and snap.auto_restart is not None:
                    detail += f"; {snap.auto_restart.describe(time.time())}"
                untrusted = self._untrusted(url)
                workers.append(WorkerStatus(
                    url, engine is not None, snap.state.value if snap else "attached",
                    f"{detail}; no prompts: {untrusted}" if untrusted else detail, entry is not None,
                    bool(entry and entry.healthy) and untrusted is None, entry.load if entry else -1,
                    self._outages.get(url, 0), self._restarts.get(url, 0), untrusted))
            return FleetSnapshot(self._state, self._detail, self.fleet.router.url,
                                 self._router.pid if self._router else None, tuple(workers), self._run_dir)

    def worker_engine(self, url: str) -> Supervisor | None:
        """The engine supervisor of the launched worker at `url` (None: an attached worker, or none at that URL)."""
        with self._lock:
            return self._engines.get(url.rstrip("/"))

    def worker_supervisor(self, index: int) -> Supervisor:
        """The engine supervisor of the `index`-th launched worker (0-based): its log, phases and pid."""
        return list(self._engines.values())[index]

    def worker_log(self, url: str, lines: int) -> tuple[str, ...] | None:
        """The last lines of a launched worker's engine log (its own lines, not the polls); None for a URL that is
        not a worker launched here."""
        engine = self._engines.get(url.rstrip("/"))
        return engine.log_tail(lines) if engine is not None else None

    def router_log(self, lines: int) -> tuple[str, ...]:
        router = self._router
        return tuple(router.log_tail(lines)) if router is not None else ()

    # --- changing the fleet while it serves ---------------------------------------------------------

    def _launch(self, worker: LaunchedWorker) -> None:
        assert self._run_dir is not None
        self._launched += 1
        engine = Supervisor(self._run_dir / f"worker-{self._launched}", startup_timeout_s=self.startup_timeout_s)
        engine.restart_policy = self.policy
        engine.on_auto_restart = lambda *_: self._count_restart(worker.url)
        self._engines[worker.url] = engine
        engine.start(worker.settings, worker.engine(self.fleet.engine))

    def _count_restart(self, url: str) -> None:
        with self._lock:
            self._restarts[url] = self._restarts.get(url, 0) + 1

    def add(self, worker: Worker) -> None:
        """Add a worker while the fleet serves: an attached one joins the router now, once it proved to be an engine
        serving the fleet's model, a launched one (on this host) once it is ready and proved it. Refused with the
        reason when the fleet with it would not pass validation, or an attached one does not prove itself."""
        self._grown_by(worker)
        if isinstance(worker, AttachedWorker):  # asked outside the lock: it may wait on the worker for seconds
            url = worker.url.rstrip("/")
            proof = prove_worker(url, self._api_key(url)).for_model(self._model)
            if not proof.proven:
                raise ValueError(f"{proof.problem}: only an engine serving the fleet's model is attached")
        with self._lock:
            self.fleet = self._grown_by(worker)  # checked again: the fleet may have changed meanwhile
            self._next_poll = 0.0  # the fleet's state counts it from the next look at the router
            if isinstance(worker, LaunchedWorker):
                self._launch(worker)
                return
            self._proofs[url] = proof
            add_worker(self.fleet.router.url, url)

    def _grown_by(self, worker: Worker) -> Fleet:
        """The fleet with `worker` added; RuntimeError unless it serves, ValueError with every reason when the
        grown fleet would not pass validation."""
        with self._lock:
            if self._state not in (FleetState.READY, FleetState.DEGRADED) or self._router is None:
                raise RuntimeError(f"workers are added to a serving fleet; this one is {self._state.value}")
            grown = replace(self.fleet, workers=(*self.fleet.workers, worker))
            errors = [f for f in validate_fleet(grown) if f.is_error]
            if isinstance(worker, LaunchedWorker) and not worker.local:
                errors.append(Finding("error", "workers", "a worker on another host is started there, then attached",
                                      check="remote_launch"))
            if errors:
                raise ValueError("; ".join(f.message for f in errors))
            return grown

    def remove(self, url: str) -> None:
        """Take a worker out of the router and the fleet; a launched one is stopped."""
        url = url.rstrip("/")
        with self._lock:
            kept = tuple(w for w in self.fleet.workers if w.url.rstrip("/") != url)
            if len(kept) == len(self.fleet.workers):
                raise ValueError(f"{url} is not a worker of this fleet")
            if not kept:
                raise ValueError("the last worker cannot be removed: stop the fleet instead")
            self.fleet = replace(self.fleet, workers=kept)
            self._next_poll = 0.0
            engine = self._engines.pop(url, None)
            self._restarts.pop(url, None)  # a worker added again later on this URL starts counting afresh
            self._outages.pop(url, None)
            self._proofs.pop(url, None)
            entry = self._listed.pop(url, None)
        if entry is not None and self._router is not None:
            remove_worker(self.fleet.router.url, entry)
        if engine is not None:
            engine.close(STOP_GRACE_S)

