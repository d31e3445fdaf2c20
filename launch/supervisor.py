"""Supervising one engine: start it, follow its phases, prove it ready, stop it, explain why it died.

One watcher thread per run does everything on a tick: drain the log file into the ring buffer and the
phase tracker, poll the process, and (once the log says the HTTP server is up) probe `/health` +
`/v1/models` until ready, within an overall start-up timeout. "Attach" mode supervises no process and
only probes an external endpoint. The state file (launch/run_state.py) lets a restarted app re-attach
to, or clean up, an engine it left running (launch/recovery.py). With an opt-in restart policy
(launch/restart_policy.py), an engine that died is relaunched after a back-off with the last settings that
reached ready (`restart_source`), within a limit of attempts.
"""

from __future__ import annotations

import atexit
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from enum import Enum
from pathlib import Path
from typing import Literal

from launch.command import Command, Engine, build_command, key_in_config_file
from launch.config_file import secret_config_path, write_secret_config
from launch.diagnosis import Diagnosis, FailureCause, SizingContext, diagnose, timeout_diagnosis
from launch.engine_log import LogFollower
from launch.health import Readiness, ReadinessProbe, engine_url
from launch.phases import PHASE_ORDER, Phase, PhaseTracker
from launch.private_files import write_private
from launch.process_group import create_time, is_running, spawn, surviving_group, terminate_group
from launch.restart_policy import AutoRestart, RestartPolicy
from launch.run_folder import new_run_folder
from launch.run_state import RunState, clear_run_state, read_run_state, write_run_state
from launch.settings import LaunchSettings

DEFAULT_STARTUP_TIMEOUT_S = 3600.0  # M3 reads ~465 GB of experts into CPU RAM before serving
TICK_S = 0.2
# Once ready a managed engine's death shows at the next tick (its process); the probe refreshes what it
# serves, tells when an attached engine went away, and notices a hung engine (alive, but not answering).
READY_PROBE_INTERVAL_S = 5.0
UNRESPONSIVE_PROBE_INTERVAL_S = 1.0  # a ready engine whose last probe failed: noticed again as soon as it answers
WAITING_PROBE_INTERVAL_S = 0.5  # an attached endpoint that is not answering yet
EXIT_CLEANUP_GRACE_S = 3.0
LOG_FILE_NAME = "engine.log"
COMMAND_FILE_NAME = "command.sh"


class EngineState(Enum):
    STOPPED = "stopped"
    STARTING = "starting"
    READY = "ready"
    FAILED = "failed"
    STOPPING = "stopping"


Mode = Literal["idle", "managed", "attached"]
_ACTIVE = (EngineState.STARTING, EngineState.READY, EngineState.STOPPING)


class EngineBusyError(RuntimeError):
    """An engine is already running (here, or left by an earlier app)."""


@dataclass(frozen=True)
class RunInfo:
    run_dir: Path
    log_path: Path
    pid: int
    url: str
    command: Command
    started_at: float  # epoch seconds


@dataclass(frozen=True)
class SupervisorSnapshot:
    state: EngineState
    mode: Mode
    phase: Phase | None
    progress: float  # overall start-up progress, 0..1
    phase_detail: str
    elapsed: float  # seconds since the run started (0 when none)
    pid: int | None
    url: str | None
    run_dir: Path | None
    diagnosis: Diagnosis | None
    log_lines: tuple[str, ...]
    exit_code: int | None
    readiness: Readiness | None  # the last probe that found it ready, once it was
    auto_restart: AutoRestart | None = None
    unresponsive: str | None = None  # ready, but its last probe got no proper answer: why


@dataclass
class _Run:
    """Mutable bookkeeping of one run; guarded by the supervisor's lock."""

    mode: Mode
    url: str
    api_key: str | None
    started_at: float
    tracker: PhaseTracker
    settings: LaunchSettings | None = None
    engine: Engine | None = None
    moe_layers: int | None = None
    sizing: SizingContext | None = None
    info: RunInfo | None = None
    popen: subprocess.Popen[bytes] | None = None  # None for an adopted engine (not our child)
    pid: int | None = None
    pgid: int | None = None
    create_time: float = 0.0
    follower: LogFollower | None = None
    ended_at: float | None = None
    exit_code: int | None = None
    diagnosis: Diagnosis | None = None
    readiness: Readiness | None = None
    unresponsive: str | None = None
    stop_event: threading.Event = field(default_factory=threading.Event)
    thread: threading.Thread | None = None


Launch = tuple[LaunchSettings, Engine]


class Supervisor:
    """Starts and watches at most one engine; every method is safe to call from any thread.

    Hooks (set once, before starting; they must not raise): `on_ready(run_dir, settings, engine)` runs when a
    launched engine first answers ready (to keep it as the last good launch); `restart_source()` names what an
    automatic restart launches (None: the settings that died); `on_auto_restart(settings, engine)` follows one."""

    def __init__(self, run_root: Path, *, startup_timeout_s: float = DEFAULT_STARTUP_TIMEOUT_S,
                 tick_s: float = TICK_S) -> None:
        self.run_root = Path(run_root)
        self.startup_timeout_s = startup_timeout_s
        self.tick_s = tick_s
        self._lock = threading.RLock()  # re-entrant: a signal handler may close() mid-snapshot
        self._changed = threading.Condition(self._lock)
        self._state = EngineState.STOPPED
        self._run: _Run | None = None
        self._closed = False
        self.restart_policy = RestartPolicy()
        self.on_ready: Callable[[Path, LaunchSettings, Engine], object] | None = None
        self.restart_source: Callable[[], Launch | None] | None = None
        self.on_auto_restart: Callable[[LaunchSettings, Engine], None] | None = None
        self._auto: AutoRestart | None = None
        self._auto_attempts: list[float] = []  # epoch seconds of the automatic attempts in the window
        self._auto_cancel = threading.Event()

    # --- starting ------------------------------------------------------------------------------

    def start(self, settings: LaunchSettings, engine: Engine | None = None, *, moe_layers: int | None = None,
              sizing: SizingContext | None = None) -> RunInfo:
        """Launch `settings` on `engine` in a new runs/<timestamp>/ folder. `moe_layers` (or `sizing`)
        turns KT's per-layer load lines into progress; `sizing` lets a diagnosis compute expert counts.
        Someone starting an engine takes over from automatic restarts: their count starts afresh."""
        with self._lock:
            self._cancel_auto_restart()
            return self._launch(settings, engine or Engine(), moe_layers, sizing)

    def _launch(self, settings: LaunchSettings, engine: Engine, moe_layers: int | None,
                sizing: SizingContext | None) -> RunInfo:
        with self._lock:
            self._check_can_start()
            run_dir = self._new_run_dir()
            command = build_command(settings, engine, run_dir)
            write_private(run_dir / COMMAND_FILE_NAME, command.shell_text() + "\n")  # masked, for people
            if settings.api_key and key_in_config_file(settings):
                write_secret_config(run_dir, settings.api_key)
            log_path = run_dir / LOG_FILE_NAME
            if moe_layers is None and sizing is not None:
                moe_layers = sizing.shape.num_moe_layers
            url = engine_url(settings)
            popen = spawn(command, log_path)
            try:
                info = RunInfo(run_dir, log_path, popen.pid, url, command, time.time())
                run = _Run(mode="managed", url=url, api_key=settings.api_key, started_at=info.started_at,
                           tracker=PhaseTracker(moe_layers), settings=settings, engine=engine,
                           moe_layers=moe_layers, sizing=sizing, info=info, popen=popen, pid=popen.pid,
                           pgid=popen.pid, create_time=create_time(popen.pid) or 0.0,
                           follower=LogFollower(log_path, secrets=_secrets(settings)))
                self._begin(run)
            except BaseException:  # e.g. Ctrl-C right here: no engine may outlive a failed start
                terminate_group(popen.pid, 0.0, popen)
                raise
            return info

    def attach(self, url: str, api_key: str | None = None) -> None:
        """Watch an engine someone else runs: no process, only readiness probes of `url`."""
        with self._lock:
            self._check_can_start()
            self._cancel_auto_restart()
            tracker = PhaseTracker()
            tracker.detail = f"waiting for {url}"
            self._begin(_Run(mode="attached", url=url.rstrip("/"), api_key=api_key, started_at=time.time(),
                             tracker=tracker))

    def adopt(self, state: RunState) -> None:
        """Supervise an engine an earlier app started (see launch/recovery.py); its log is replayed to
        rebuild the phases."""
        with self._lock:
            self._check_can_start(ignore_state_file=True)
            log_path = state.run_dir / LOG_FILE_NAME
            command = build_command(state.settings, state.engine, state.run_dir)
            info = RunInfo(state.run_dir, log_path, state.pid, state.url, command, state.create_time)
            run = _Run(mode="managed", url=state.url, api_key=state.settings.api_key, started_at=state.create_time,
                       tracker=PhaseTracker(state.moe_layers), settings=state.settings, engine=state.engine,
                       moe_layers=state.moe_layers, info=info, pid=state.pid, pgid=state.pgid,
                       create_time=state.create_time, follower=LogFollower(log_path, secrets=_secrets(state.settings)))
            self._begin(run)

    def _check_can_start(self, ignore_state_file: bool = False) -> None:
        if self._closed:
            raise RuntimeError("the supervisor is closed")
        if self._state in _ACTIVE:
            raise EngineBusyError(f"an engine is already {self._state.value}; stop it first")
        if ignore_state_file:
            return
        previous = read_run_state(self.run_root)
        if previous is not None and surviving_group(previous.pgid, previous.create_time):
            raise EngineBusyError(
                f"the engine an earlier run started (pid {previous.pid}, {previous.run_dir}) is still running; "
                "launch.recovery.recover() it first")
        clear_run_state(self.run_root)

    def _new_run_dir(self) -> Path:
        return new_run_folder(self.run_root / "runs")  # run folders hold the key's config file and the log

    def _begin(self, run: _Run) -> None:
        self._run = run
        self._state = EngineState.STARTING
        if run.mode == "managed":
            self._write_state_file(run)
        run.thread = threading.Thread(target=self._watch, args=(run,), name="engine-watcher", daemon=True)
        run.thread.start()
        self._changed.notify_all()

    def _write_state_file(self, run: _Run) -> None:
        assert run.info and run.settings and run.engine and run.pid and run.pgid
        me = os.getpid()
        write_run_state(self.run_root, RunState(
            run.pid, run.pgid, run.create_time, me, create_time(me) or 0.0, run.info.run_dir, run.url,
            run.settings, run.engine, run.moe_layers))

    # --- watching ------------------------------------------------------------------------------

    def _watch(self, run: _Run) -> None:
        try:
            self._watch_loop(run)
        except Exception as exc:  # a bug here must show as a failure, not as "starting" forever
            if run.pgid is not None:
                terminate_group(run.pgid, EXIT_CLEANUP_GRACE_S, run.popen)
            with self._lock:
                if not run.stop_event.is_set():
                    run.diagnosis = Diagnosis(FailureCause.UNKNOWN, f"Supervision failed: {exc!r}",
                                              "The engine was stopped because m3ui lost track of it.", ())
                    self._finish(run, EngineState.FAILED)

    def _watch_loop(self, run: _Run) -> None:
        next_probe = 0.0
        with ReadinessProbe(run.url, run.api_key) as probe:  # one client for the run's whole life
            while not run.stop_event.wait(self.tick_s):
                if run.mode == "managed":
                    self._drain(run)
                    if not self._alive(run):
                        self._on_exit(run)
                        return
                    if time.time() - run.started_at > self.startup_timeout_s and self._state is EngineState.STARTING:
                        self._on_timeout(run)
                        return
                if time.monotonic() >= next_probe and self._probe_due(run):
                    self._on_probe(run, probe.check())
                    next_probe = time.monotonic() + self._probe_interval(run)

    def _drain(self, run: _Run, final: bool = False) -> None:
        assert run.follower is not None
        with self._lock:
            for line in run.follower.read_new(final):
                run.tracker.feed(line)

    def _alive(self, run: _Run) -> bool:
        if run.popen is not None:
            return run.popen.poll() is None
        return run.pid is not None and is_running(run.pid, run.create_time)

    def _probe_due(self, run: _Run) -> bool:
        """sglang serves HTTP only after warm-up begins; probing earlier could find another server on a
        busy port and call it ready."""
        warm = PHASE_ORDER.index(run.tracker.phase) >= PHASE_ORDER.index(Phase.WARMUP)
        return run.mode == "attached" or warm

    def _probe_interval(self, run: _Run) -> float:
        if self._state is EngineState.READY:
            return UNRESPONSIVE_PROBE_INTERVAL_S if run.unresponsive else READY_PROBE_INTERVAL_S
        return WAITING_PROBE_INTERVAL_S if run.mode == "attached" else 0.0  # our own engine: every tick

    def _on_probe(self, run: _Run, result: Readiness) -> None:
        with self._lock:
            if run is not self._run or run.stop_event.is_set():
                return
            if self._state is EngineState.READY and not result.ready and (run.mode == "managed" or result.timed_out):
                # Alive (a managed engine's death shows by its process) but not answering: a hang, or overload.
                # It stays ready, with what it last served; an attached engine that refuses went away instead.
                run.unresponsive = result.error or "its health check failed"
                self._changed.notify_all()
                return
            run.readiness, run.unresponsive = result, None
            if result.ready and self._state is EngineState.STARTING:
                if run.mode == "managed":
                    _remove_secret_config(run)
                if run.mode == "managed" and self.on_ready is not None:  # first, so READY implies it was kept
                    assert run.info is not None and run.settings is not None and run.engine is not None
                    self.on_ready(run.info.run_dir, run.settings, run.engine)
                self._state = EngineState.READY
                run.tracker.mark_ready()
            elif run.mode == "attached" and not result.ready:
                self._state = EngineState.STARTING
                run.tracker.detail = f"waiting for {run.url}: {result.error}"
            self._changed.notify_all()

    def _on_exit(self, run: _Run) -> None:
        with self._lock:
            if run.stop_event.is_set():
                return
        assert run.pgid is not None
        terminate_group(run.pgid, EXIT_CLEANUP_GRACE_S, run.popen)  # its children must not outlive it
        self._drain(run, final=True)
        with self._lock:
            if run.stop_event.is_set():
                return
            run.exit_code = run.popen.returncode if run.popen is not None else None
            assert run.follower is not None and run.settings is not None
            run.diagnosis = diagnose(list(run.follower.lines), run.settings, phase=run.tracker.phase,
                                     exit_code=run.exit_code, sizing=run.sizing)
            self._finish(run, EngineState.FAILED)

    def _on_timeout(self, run: _Run) -> None:
        assert run.pgid is not None and run.follower is not None
        terminate_group(run.pgid, EXIT_CLEANUP_GRACE_S, run.popen)
        self._drain(run, final=True)
        with self._lock:
            if run.stop_event.is_set():
                return
            run.diagnosis = timeout_diagnosis(list(run.follower.lines), run.tracker.phase,
                                              time.time() - run.started_at)
            self._finish(run, EngineState.FAILED)

    def _finish(self, run: _Run, state: EngineState) -> None:
        run.ended_at = time.time()
        self._state = state
        if run.mode == "managed":
            clear_run_state(self.run_root)
            _remove_secret_config(run)
            if state is EngineState.FAILED:
                self._schedule_auto_restart(run)
        self._changed.notify_all()

    # --- automatic restarts --------------------------------------------------------------------------

    def _schedule_auto_restart(self, run: _Run) -> None:
        policy = self.restart_policy
        if not policy.enabled or self._closed:
            return
        now = time.time()
        self._auto_attempts = [t for t in self._auto_attempts if now - t < policy.window_s]
        made = len(self._auto_attempts)
        if made >= policy.max_attempts:
            self._auto = AutoRestart(made, policy.max_attempts, None, gave_up=True)
            return
        delay = policy.delay(made + 1)
        self._auto = AutoRestart(made + 1, policy.max_attempts, now + delay)
        self._auto_cancel = cancel = threading.Event()
        threading.Thread(target=self._auto_restart_after, args=(run, delay, cancel), name="engine-auto-restart",
                         daemon=True).start()

    def _auto_restart_after(self, run: _Run, delay: float, cancel: threading.Event) -> None:
        if cancel.wait(delay):
            return
        with self._lock:
            if cancel.is_set() or self._run is not run or self._state is not EngineState.FAILED:
                return
            assert run.settings is not None and run.engine is not None
            good = self.restart_source() if self.restart_source is not None else None
            settings, engine = good or (run.settings, run.engine)
            same_model = settings.model_path == run.settings.model_path
            self._auto_attempts.append(time.time())
            assert self._auto is not None
            self._auto = replace(self._auto, due_at=None)
            try:
                self._launch(settings, engine, run.moe_layers if same_model else None,
                             run.sizing if same_model else None)
            except (OSError, RuntimeError) as exc:  # e.g. the engine's Python vanished; EngineBusyError
                self._auto = replace(self._auto, gave_up=True, problem=str(exc))
                return
        if self.on_auto_restart is not None:
            self.on_auto_restart(settings, engine)

    def _cancel_auto_restart(self) -> None:
        """Someone took over (start, stop, attach): drop a pending automatic restart and start counting afresh."""
        self._auto_cancel.set()
        self._auto, self._auto_attempts = None, []

    # --- stopping ------------------------------------------------------------------------------

    def stop(self, grace: float = 10.0) -> None:
        """Stop the engine (SIGTERM to its group, SIGKILL after `grace` s), or detach from an attached one.
        A pending automatic restart is called off."""
        with self._lock:
            self._cancel_auto_restart()
            run = self._run
            if run is None or self._state not in (EngineState.STARTING, EngineState.READY):
                return
            self._state = EngineState.STOPPING
            run.stop_event.set()
            self._changed.notify_all()
        if run.mode == "managed":
            assert run.pgid is not None
            terminate_group(run.pgid, grace, run.popen)
        if run.thread is not None and run.thread is not threading.current_thread():
            run.thread.join(timeout=grace + 10)
        if run.mode == "managed":
            self._drain(run, final=True)
        with self._lock:
            run.exit_code = run.popen.returncode if run.popen is not None else None
            self._finish(run, EngineState.STOPPED)

    def restart(self, grace: float = 10.0) -> RunInfo:
        """Stop, then start again with the same settings."""
        with self._lock:
            run = self._run
            if run is None or run.settings is None or run.engine is None:
                raise RuntimeError("no engine was started here, so there is nothing to restart")
        self.stop(grace)
        return self.start(run.settings, run.engine, moe_layers=run.moe_layers, sizing=run.sizing)

    def set_restart_policy(self, policy: RestartPolicy) -> None:
        """Takes effect at the next death; turning it off calls off a pending restart."""
        with self._lock:
            self.restart_policy = policy
            if not policy.enabled and self._auto is not None and self._auto.due_at is not None:
                self._cancel_auto_restart()

    def close(self, grace: float = 10.0) -> None:
        """At app exit: stop the engine (or detach) and refuse further starts. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self.stop(grace)

    # --- observing -----------------------------------------------------------------------------

    def snapshot(self, log_lines: int = 50) -> SupervisorSnapshot:
        with self._lock:
            run, state = self._run, self._state
            if run is None:
                return SupervisorSnapshot(state, "idle", None, 0.0, "no engine", 0.0, None, None, None, None, (),
                                          None, None)
            detail = run.tracker.detail if state is EngineState.STARTING else state.value
            if state is EngineState.FAILED:  # the tracker may still say "ready": the engine died after that
                detail = run.diagnosis.title if run.diagnosis else "failed"
            return SupervisorSnapshot(
                state, run.mode, run.tracker.phase if run.mode == "managed" else None, run.tracker.progress,
                detail, (run.ended_at or time.time()) - run.started_at, run.pid, run.url,
                run.info.run_dir if run.info else None, run.diagnosis, self.log_tail(log_lines),
                run.exit_code, run.readiness, self._auto, run.unresponsive if state is EngineState.READY else None)

    def log_tail(self, n: int = 200, filter: str | None = None, polling: bool = False) -> tuple[str, ...]:
        """The engine log's last lines; `polling` includes the request lines of m3ui's own polls."""
        with self._lock:
            run = self._run
            if run is None or run.follower is None:
                return ()
            return run.follower.tail(n, filter, polling)

    def running_settings(self) -> LaunchSettings | None:
        """The settings of the engine that is ready now (None when none is, or it is attached)."""
        with self._lock:
            run = self._run
            return run.settings if run is not None and self._state is EngineState.READY else None

    @property
    def state(self) -> EngineState:
        with self._lock:  # a state and what comes with it (a failure's planned restart) are seen together
            return self._state

    def wait_ready(self, timeout: float) -> bool:
        """Block until ready (True), or failed/stopped/timed out (False)."""
        with self._changed:
            self._changed.wait_for(lambda: self._state not in (EngineState.STARTING,), timeout)
            return self._state is EngineState.READY


def _remove_secret_config(run: _Run) -> None:
    """The engine read its key file when it parsed its arguments, long before it serves: once it is ready or
    gone, the key need not stay on disk."""
    if run.info is not None:
        secret_config_path(run.info.run_dir).unlink(missing_ok=True)


def _secrets(settings: LaunchSettings) -> tuple[str, ...]:
    """What the log view must never show: sglang logs its server_args, API key included."""
    return (settings.api_key,) if settings.api_key else ()


def install_signal_handlers(supervisor: Supervisor) -> None:
    """For an app's or CLI's main thread: SIGINT/SIGTERM and normal exit stop the engine first, then the
    previous handler runs (SIGINT still raises KeyboardInterrupt)."""
    for sig in (signal.SIGINT, signal.SIGTERM):
        previous = signal.getsignal(sig)

        def handler(signum: int, frame: object, previous: object = previous) -> None:
            supervisor.close()
            if callable(previous):
                previous(signum, frame)
            elif previous != signal.SIG_IGN:
                raise SystemExit(128 + signum)

        signal.signal(sig, handler)
    atexit.register(supervisor.close)
