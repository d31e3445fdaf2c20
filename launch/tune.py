"""`python -m launch tune`: relaunch the engine over a short, ordered search of the KT knobs, measure each trial
with the benchmark, and keep the best as a profile with its evidence.

The order comes from the roofline (launch/tune_search.py): first the start settings (the baseline), then the
point the speed model expects to be fastest, then single-knob changes of the best so far, most promising
first. A trial whose optimistic prediction (prediction x measured/predicted of the best, plus the model's
error: MODEL_ERROR, or less once the trials show the model tracks this host) cannot beat the best by more than
NOISE is not run, so the search stops early. Where the engine's Python has kt-kernel (the real engine, or
`microbench=True`), `kt_cpuinfer` and the thread pools are first chosen by timing kt-kernel's own MoE layer for
each candidate (launch/microbench.py, seconds a setting): the relaunches then only confirm that choice.
Every trial is a real relaunch through the supervisor; at most MAX_RELAUNCHES in all, within the time budget
(the expected total is printed before anything starts; a budget too small for one trial is refused first).

The box is never left without a working engine: a trial that fails is marked failed with its reason and the
search goes on; at the end, and on Ctrl-C or cancel, the best settings measured so far (known to work: the
start settings until something beats them) are relaunched and left running for `serve` or the app to adopt.
Profiles are never overwritten: the best is saved under a new name, with the trial table and the command
beside it in `<data dir>/tune/`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from launch.bench import BenchError, BenchPlan, run_bench
from launch.command import Engine, build_command
from launch.findings import has_errors
from launch.health import engine_url
from launch.host_file import HostFigures
from launch.microbench import KernelShape, MicrobenchError, PoolSetting, run_microbench
from launch.model_config import ModelShape
from launch.preflight import plan_launch
from launch.private_files import write_private
from launch.profile import Profile, ProfileStore
from launch.recovery import RecoveryAction, recover
from launch.settings import LaunchSettings
from launch.sim.config import STARTUP_ENV, UNTHROTTLED_ENV
from launch.supervisor import EngineState, Supervisor
from launch.tune_search import (
    DECODE_KNOBS,
    TRIAL_PROMPTS,
    TUNABLE,
    Candidate,
    Prediction,
    knob_values,
    model_optimum,
    pool_candidates,
    predict,
    variations,
)

MAX_RELAUNCHES = 12
NOISE = 0.02  # a gain smaller than this is not a gain
MODEL_ERROR = 0.10  # how far a measurement may beat the speed model's prediction
TRIAL_DECODE_TOKENS = 32
SGLANG_STARTUP_GUESS_S = 900.0  # M3 reads ~465 GB of experts; replaced by the baseline's own time
SIM_STARTUP_OVERHEAD_S = 3.0  # the simulated engine's imports and sizing
BENCH_OVERHEAD_S = 2.0
POOL_KNOBS = ("kt_cpuinfer", "kt_threadpool_count")  # what the kernel microbenchmark chooses
MICROBENCH_SETTING_S = 15.0  # one child: M3's layer of random weights (~10 s on 16 AMX cores), then timing
Progress = Callable[[str], None]


class TuneError(RuntimeError):
    """The tune cannot start (bad knobs, a budget too small, an engine another app supervises, ...)."""


@dataclass
class Trial:
    settings: dict[str, Any]  # the tuned knobs' values
    decode_tok_s: float | None = None
    prefill_tok_s: float | None = None
    ok: bool = False
    reason: str = ""
    predicted_decode_tok_s: float | None = None
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass
class TuneResult:
    start: Trial
    trials: list[Trial] = field(default_factory=list)
    best: Trial | None = None
    best_settings: LaunchSettings | None = None
    profile: str | None = None
    evidence: Path | None = None
    relaunches: int = 0
    interrupted: bool = False
    expected_s: float = 0.0
    elapsed_s: float = 0.0
    microbench: dict[str, Any] | None = None  # kt-kernel's timings that chose kt_cpuinfer and the pools

    @property
    def gain(self) -> float:
        if self.best is None or not self.start.decode_tok_s or not self.best.decode_tok_s:
            return 0.0
        return self.best.decode_tok_s / self.start.decode_tok_s - 1

    def to_json(self) -> dict[str, Any]:
        best = self.best or self.start
        return {
            "start": {"settings": self.start.settings, "decode_tok_s": self.start.decode_tok_s,
                      "prefill_tok_s": self.start.prefill_tok_s},
            "trials": [t.to_json() for t in self.trials],
            "best": {"settings": best.settings, "decode_tok_s": best.decode_tok_s,
                     "prefill_tok_s": best.prefill_tok_s, "gain": self.gain},
            "profile": self.profile, "evidence": str(self.evidence) if self.evidence else None,
            "relaunches": self.relaunches, "interrupted": self.interrupted,
            "expected_s": self.expected_s, "elapsed_s": self.elapsed_s, "microbench": self.microbench,
        }


@dataclass(frozen=True)
class TuneRequest:
    settings: LaunchSettings
    engine: Engine
    shape: ModelShape
    host: HostFigures
    knobs: tuple[str, ...] = TUNABLE
    budget_s: float = 1800.0
    start_name: str = "start"  # the profile or preset tuned from: the saved profile is named after it
    microbench: bool | None = None  # time kt-kernel's MoE layer first; None: only for the real engine
    kernel: KernelShape | None = None  # the layer it times; None: the model's (fewer experts if RAM is short)
    microbench_s: float = 1.0  # its timing per setting, for decode and again for prefill


def check_knobs(knobs: tuple[str, ...]) -> tuple[str, ...]:
    unknown = [k for k in knobs if k not in TUNABLE]
    if unknown or not knobs:
        raise TuneError(f"unknown knob(s) {', '.join(unknown) or '(none given)'}; choose from {', '.join(TUNABLE)}")
    return knobs


def engine_clock(engine: Engine) -> str:
    """The simulated engine without pacing reports simulated time: measure with its own clock."""
    unthrottled = os.environ.get(UNTHROTTLED_ENV, "").strip().lower() in ("1", "true", "yes", "on")
    return "engine" if engine.kind == "sim" and unthrottled else "wall"


class Tuner:
    def __init__(self, request: TuneRequest, supervisor: Supervisor, profiles: ProfileStore, data_dir: Path,
                 progress: Progress = print, cancel: threading.Event | None = None,
                 on_launch: Callable[[LaunchSettings, Engine], None] | None = None) -> None:
        """`on_launch` hears of every engine started (the app's EngineLink follows the relaunches)."""
        self.request = request
        self.on_launch = on_launch
        self.supervisor = supervisor
        self.profiles = profiles
        self.data_dir = data_dir
        self.progress = progress
        self.cancel = cancel or threading.Event()
        self.clock = engine_clock(request.engine)
        self._startup_s = self._startup_guess()
        self._began = 0.0
        self.search_knobs = request.knobs  # less the pool knobs once the kernel microbenchmark chose them
        self._timings: dict[str, Any] | None = None  # that microbenchmark's figures

    # --- estimates -------------------------------------------------------------------------------

    def _startup_guess(self) -> float:
        if self.request.engine.kind == "sim":
            raw = os.environ.get(STARTUP_ENV, "").strip()
            try:
                return float(raw or 4.0) + SIM_STARTUP_OVERHEAD_S
            except ValueError:
                return 4.0 + SIM_STARTUP_OVERHEAD_S
        return SGLANG_STARTUP_GUESS_S

    def _bench_guess(self, predicted: Prediction) -> float:
        if self.clock == "engine":
            return BENCH_OVERHEAD_S
        return BENCH_OVERHEAD_S + TRIAL_DECODE_TOKENS / predicted.decode + sum(TRIAL_PROMPTS) / predicted.prefill

    def trial_seconds(self, predicted: Prediction) -> float:
        return self._startup_s + self._bench_guess(predicted)

    def _left(self) -> float:
        return self.request.budget_s - (time.monotonic() - self._began)

    # --- one trial -------------------------------------------------------------------------------

    def _launch_ready(self, settings: LaunchSettings) -> str | None:
        """Relaunch with `settings`; None when ready, else why not."""
        with contextlib.suppress(Exception):
            self.supervisor.stop()
        plan = plan_launch(settings, self.request.engine)
        if has_errors(plan.findings):
            return "preflight: " + "; ".join(f.message for f in plan.findings if f.is_error)
        began = time.monotonic()
        self.supervisor.start(self._measured(settings), self.request.engine,
                              moe_layers=plan.shape.num_moe_layers if plan.shape else None)
        self.result.relaunches += 1
        if self.on_launch is not None:
            self.on_launch(self._measured(settings), self.request.engine)
        deadline = began + max(60.0, 3 * self._startup_s)
        while self.supervisor.state is EngineState.STARTING:
            if time.monotonic() > deadline:
                self.supervisor.stop()
                return f"not ready within {deadline - began:.0f} s"
            self.supervisor.wait_ready(0.5)
        if self.supervisor.state is not EngineState.READY:
            snap = self.supervisor.snapshot()
            return f"the engine died: {snap.diagnosis.title if snap.diagnosis else snap.phase_detail}"
        self._startup_s = max(self._startup_s * 0.5, time.monotonic() - began)  # what this host really takes
        return None

    def _measured(self, settings: LaunchSettings) -> LaunchSettings:
        return settings.replace(enable_metrics=True) if self.clock == "engine" else settings

    def _measure(self, settings: LaunchSettings, predicted: Prediction, launch: bool) -> Trial:
        began = time.monotonic()
        trial = Trial(knob_values(settings, self.request.knobs), predicted_decode_tok_s=predicted.decode)
        why = self._launch_ready(settings) if launch else None
        if why is None:
            try:
                bench = run_bench(engine_url(settings), BenchPlan((1,), TRIAL_PROMPTS, TRIAL_DECODE_TOKENS,
                                                                  self.clock), settings.api_key, lambda _: None)
                trial.decode_tok_s = bench.decode_tok_s.get("1")
                values = [v for v in bench.prefill_tok_s.values() if v]
                trial.prefill_tok_s = math.prod(values) ** (1 / len(values)) if values else None
                trial.ok = trial.decode_tok_s is not None
                why = None if trial.ok else "no decode figure (the engine streamed no tokens)"
            except BenchError as exc:
                why = f"benchmark failed: {exc}"
        trial.reason = why or ""
        trial.seconds = time.monotonic() - began
        return trial

    # --- the search ------------------------------------------------------------------------------

    def _better(self, trial: Trial, best: Trial, candidate: Candidate) -> bool:
        if not trial.ok or trial.decode_tok_s is None or best.decode_tok_s is None:
            return False
        if trial.decode_tok_s > best.decode_tok_s * (1 + NOISE):
            return True
        decode_knob = any(k in DECODE_KNOBS for k, _ in candidate.changes)
        return (not decode_knob and trial.prefill_tok_s is not None and best.prefill_tok_s is not None
                and trial.prefill_tok_s > best.prefill_tok_s * (1 + NOISE)
                and trial.decode_tok_s >= best.decode_tok_s * (1 - NOISE))

    def model_error(self) -> float:
        """How far a measurement may beat the model's relative prediction: MODEL_ERROR until two trials ran, then
        the spread of measured/predicted seen so far (plus noise), never more than MODEL_ERROR."""
        ratios = [t.decode_tok_s / t.predicted_decode_tok_s for t in (self.result.start, *self.result.trials)
                  if t.ok and t.decode_tok_s and t.predicted_decode_tok_s]
        if len(ratios) < 2:
            return MODEL_ERROR
        return min(MODEL_ERROR, max(ratios) / min(ratios) - 1 + NOISE)

    def _worth_it(self, candidate: Candidate, best: Trial, best_prediction: Prediction) -> bool:
        """Could this trial beat the best by more than noise, even if the model is that far off?"""
        error = self.model_error()
        measured_over_model = (best.decode_tok_s or best_prediction.decode) / best_prediction.decode
        optimistic = candidate.predicted.decode * measured_over_model * (1 + error)
        if optimistic > (best.decode_tok_s or 0) * (1 + NOISE):
            return True
        if any(k in DECODE_KNOBS for k, _ in candidate.changes) or best.prefill_tok_s is None:
            return False
        return candidate.predicted.prefill * (1 + error) > best_prediction.prefill * (1 + NOISE)

    def _show(self, label: str, trial: Trial) -> None:
        if trial.ok:
            figures = f"decode {trial.decode_tok_s:.2f} tok/s, prefill {trial.prefill_tok_s or 0:.0f} tok/s"
        else:
            figures = f"FAILED: {trial.reason}"
        self.progress(f"[{time.monotonic() - self._began:6.0f}s] {label}: {figures} "
                      f"(predicted decode {trial.predicted_decode_tok_s or 0:.2f})")

    def run(self) -> TuneResult:
        request = self.request
        check_knobs(request.knobs)
        self._began = time.monotonic()
        start_prediction = predict(request.shape, request.settings, request.host)
        running = self._adopt_running()
        trial_s = self.trial_seconds(start_prediction)
        baseline_s = self._bench_guess(start_prediction) + (0 if running else self._startup_s)
        needed = baseline_s + trial_s + self._startup_s  # the baseline, one trial, the final relaunch
        if request.budget_s < needed:
            raise TuneError(f"a budget of {request.budget_s / 60:.1f} min is too small for one trial: the baseline, "
                            f"one trial and the relaunch of the best take about {needed / 60:.1f} min here")
        timed = self._microbench()
        self.search_knobs = tuple(k for k in request.knobs if timed is None or k not in POOL_KNOBS)
        found = model_optimum(request.shape, timed or request.settings, request.host, self.search_knobs)
        optimum = Candidate(found.settings, tuple((k, getattr(found.settings, k)) for k in request.knobs
                                                  if getattr(found.settings, k) != getattr(request.settings, k)),
                            found.predicted)
        planned = min(MAX_RELAUNCHES - 2, 1 + len(variations(request.shape, optimum.settings, request.host,
                                                                self.search_knobs)))
        expected = baseline_s + planned * trial_s + self._startup_s
        self.result = TuneResult(Trial({}), expected_s=min(expected, request.budget_s), microbench=self._timings)
        self.progress(f"tuning {', '.join(request.knobs)} on the {request.engine.kind} engine: up to {planned} "
                      f"trials of ~{trial_s:.0f} s; expected total {self.result.expected_s / 60:.1f} min (budget "
                      f"{request.budget_s / 60:.1f} min, clock: {self.clock})")
        try:
            with _sigint_as_interrupt():
                self._search(optimum, running)
        except KeyboardInterrupt:
            self.result.interrupted = True
            self.progress("interrupted: relaunching the best settings measured so far")
        finally:
            if self.result.best_settings is not None:  # None: the start settings failed, nothing is known good
                self._leave_running(self.result.best_settings)
        self.result.elapsed_s = time.monotonic() - self._began
        self._save()
        return self.result

    def _microbench(self) -> LaunchSettings | None:
        """The start settings with the kt_cpuinfer and pools that kt-kernel's own kernel ran fastest; None when
        not wanted, neither knob is tuned, or kt-kernel is not in the engine's Python (relaunches choose them)."""
        request = self.request
        wanted = request.engine.kind == "sglang" if request.microbench is None else request.microbench
        if not wanted or not any(k in POOL_KNOBS for k in request.knobs):
            return None
        (threads0, pools0), threads, pools = pool_candidates(request.shape, request.settings, request.host)
        threads = threads if "kt_cpuinfer" in request.knobs else []
        pools = pools if "kt_threadpool_count" in request.knobs else []
        self.progress(f"timing kt-kernel's MoE layer first: up to {len(threads) + len(pools) + 1} settings of "
                      f"~{MICROBENCH_SETTING_S:.0f} s each, no relaunch")
        try:
            timed = run_microbench(request.engine.python, request.kernel or KernelShape.of_model(request.shape),
                                   threads, pools, PoolSetting(threads0, pools0), request.settings.kt_method,
                                   seconds=request.microbench_s, progress=self.progress,
                                   numa_nodes=request.settings.kt_numa_nodes)
        except MicrobenchError as exc:
            self.progress(f"no microbenchmark ({exc}): relaunches choose kt_cpuinfer and the pools")
            return None
        self._timings = timed.to_json()
        best = timed.best
        assert best is not None  # run_microbench raises when no setting ran
        self.progress(f"kt-kernel ran fastest at kt_cpuinfer={best.setting.kt_cpuinfer}, kt_threadpool_count="
                      f"{best.setting.kt_threadpool_count}: the relaunches confirm it instead of searching")
        return request.settings.replace(kt_cpuinfer=best.setting.kt_cpuinfer,
                                        kt_threadpool_count=best.setting.kt_threadpool_count)

    def _adopt_running(self) -> bool:
        """Take over an engine left running by an earlier `serve` or `tune`; True when it runs the start settings
        (then the baseline needs no relaunch)."""
        if self.supervisor.state in (EngineState.READY, EngineState.STARTING):
            return self._runs(self.request.settings)
        found = recover(self.supervisor.run_root, adopt_into=self.supervisor)
        if found.action is RecoveryAction.IN_USE:
            raise TuneError(f"another m3ui process supervises the engine ({found.message}): tune from that app's "
                            "admin Tune tab, or stop that app or `serve` first")
        if found.action is RecoveryAction.ATTACHED:
            self.supervisor.wait_ready(30.0)
            return self._runs(self.request.settings)
        return False

    def _search(self, optimum: Candidate, running: bool) -> None:
        request, result = self.request, self.result
        start_prediction = predict(request.shape, request.settings, request.host)
        result.start = self._measure(request.settings, start_prediction, launch=not running)
        self._show("start", result.start)
        if not result.start.ok:
            raise TuneError(f"the start settings do not run: {result.start.reason}")
        best, best_settings, best_prediction = result.start, request.settings, start_prediction
        result.best, result.best_settings = best, best_settings
        tried = {json.dumps(result.start.settings, sort_keys=True)}
        queue = [optimum] if optimum.changes else []
        while True:
            if self.cancel.is_set():
                raise KeyboardInterrupt
            if not queue:
                queue = [c for c in variations(request.shape, best_settings, request.host, self.search_knobs)
                         if json.dumps(knob_values(c.settings, request.knobs), sort_keys=True) not in tried]
                queue = [c for c in queue if self._worth_it(c, best, best_prediction)]
                if not queue:
                    self.progress("stopping: no remaining trial can beat the best by more than noise")
                    break
            candidate = queue.pop(0)
            key = json.dumps(knob_values(candidate.settings, request.knobs), sort_keys=True)
            if key in tried:
                continue
            if result.relaunches >= MAX_RELAUNCHES - 1:  # keep one for the final relaunch
                self.progress(f"stopping: {MAX_RELAUNCHES} relaunches")
                break
            if self._left() < self.trial_seconds(candidate.predicted) + self._startup_s:
                self.progress("stopping: the budget left cannot hold another trial and the final relaunch")
                break
            tried.add(key)
            trial = self._measure(candidate.settings, candidate.predicted, launch=True)
            result.trials.append(trial)
            label = ", ".join(f"{k}={v}" for k, v in candidate.changes)
            self._show(label, trial)
            if self._better(trial, best, candidate):
                best, best_settings, best_prediction = trial, candidate.settings, candidate.predicted
                result.best, result.best_settings = best, best_settings
                queue = []  # re-plan around the new best

    def _leave_running(self, settings: LaunchSettings) -> None:
        """The last-good engine runs when the tuner returns, whatever happened; Ctrl-C cannot stop this."""
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN) if _main_thread() else None
        try:
            if self._runs(settings):
                return
            why = self._launch_ready(settings)
            self.progress(f"left running: {'the best settings' if why is None else 'NOTHING: ' + why}")
        finally:
            if previous is not None:
                signal.signal(signal.SIGINT, previous)

    def _runs(self, settings: LaunchSettings) -> bool:
        return self.supervisor.running_settings() == self._measured(settings)

    def _save(self) -> None:
        result = self.result
        settings = result.best_settings
        if settings is None or result.best is None or result.best is result.start:
            self.progress("the start settings stay the best: no profile saved")
            return
        name = _free_name(self.profiles, f"tuned-{self.request.start_name}")
        self.profiles.save(Profile(name, settings, self.request.engine))
        result.profile = name
        evidence = self.data_dir / "tune" / f"{name}.json"
        write_private(evidence, json.dumps({
            **result.to_json(), "profile": name,
            "command": build_command(settings, self.request.engine).shell_text(),
            "host": json.loads(self.request.host.to_json()),
        }, indent=2) + "\n")
        result.evidence = evidence
        self.progress(f"saved profile {name!r} (decode {result.gain:+.1%}); evidence in {evidence}")


def _free_name(profiles: ProfileStore, base: str) -> str:
    """A profile name not taken yet: a saved profile is never overwritten."""
    base = base[:56]
    taken = set(profiles.names())
    if base not in taken:
        return base
    return next(f"{base}-{i}" for i in range(2, 10_000) if f"{base}-{i}" not in taken)


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


@contextlib.contextmanager
def _sigint_as_interrupt() -> Iterator[None]:
    """SIGINT raises KeyboardInterrupt in the main thread, whatever handler was installed before."""
    if not _main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
