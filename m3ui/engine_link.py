"""The one engine the app talks to: launched by the supervisor (real or simulated) or attached by URL.

Views ask it two things: how the engine is doing (`status()`), and where to send chat requests
(`endpoint()`), which exists only while the engine is ready.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from launch.command import Engine, build_command
from launch.diagnosis import Diagnosis, SizingContext
from launch.findings import has_errors
from launch.preflight import LaunchPlan, plan_launch
from launch.restart_policy import AutoRestart
from launch.settings import LaunchSettings
from launch.supervisor import EngineState, Supervisor
from m3ui.client import EndpointConfig

LinkMode = Literal["none", "simulated", "launched", "attached"]
FLEET_ROUTER = "Fleet router"  # `attached_as` of the router of a fleet this app runs (app.py --fleet)
_MODE_NAMES: dict[LinkMode, str] = {"simulated": "Simulated engine", "launched": "sglang-kt",
                                    "attached": "External engine", "none": "No engine"}


@dataclass(frozen=True)
class EngineStatus:
    mode: LinkMode
    state: EngineState
    ready: bool
    simulated: bool
    phase_detail: str
    progress: float
    url: str | None
    model: str | None
    # One plain line for chat users when the engine died or failed to start (None otherwise).
    failure: str | None = None
    restart_in_s: float | None = None  # a dead engine's automatic restart is due in this many seconds
    attached_as: str | None = None  # what an attached URL is, when the app knows better (a fleet's router)
    unresponsive: str | None = None  # ready, but its health probe gets no answer (a hung engine): why

    @property
    def kind(self) -> str:
        """What runs, in words."""
        return self.attached_as if self.mode == "attached" and self.attached_as else _MODE_NAMES[self.mode]

    @property
    def label(self) -> str:
        """One line for the header: what runs, and how far it is."""
        kind = self.kind
        if self.ready and self.unresponsive:
            return f"{kind} not responding — {self.model or '?'} at {self.url}: {self.unresponsive}"
        if self.ready:
            return f"{kind} ready — {self.model or '?'} at {self.url}"
        if self.state is EngineState.FAILED:  # the diagnosis' title, never a stale phase
            restart = f"; restarting in {self.restart_in_s:.0f} s" if self.restart_in_s is not None else ""
            return f"{kind} failed — {self.phase_detail}{restart}"
        if self.state is EngineState.STARTING:
            return f"{kind} starting ({self.progress:.0%}) — {self.phase_detail}"
        return f"{kind} {self.state.value}"


class EngineLink:
    def __init__(self, supervisor: Supervisor) -> None:
        self.supervisor = supervisor
        self._lock = threading.Lock()
        self._mode: LinkMode = "none"
        self._api_key: str | None = None
        self._settings: LaunchSettings | None = None
        self._engine: Engine | None = None
        self._attached_as: str | None = None
        self._attached_simulated = False  # an attached URL known to front simulated engines (a sim fleet's router)
        supervisor.on_auto_restart = self.adopted  # it may relaunch the last good settings, not the ones that died

    @property
    def settings(self) -> LaunchSettings | None:
        """The settings of the engine launched last (None when attached or never launched)."""
        return self._settings

    @property
    def engine(self) -> Engine | None:
        return self._engine

    @property
    def api_key(self) -> str | None:
        """The key the engine expects (launched or attached), for clients other than chat (the monitor)."""
        return self._api_key

    def launch(self, settings: LaunchSettings, engine: Engine, *,
               overrides: frozenset[str] = frozenset()) -> LaunchPlan:
        """Preflight, then start in the background; a plan with errors starts nothing. Errors of the checks
        named in `overrides` (e.g. "memory": the sizing estimate) are ones the operator chose to try anyway."""
        plan = plan_launch(settings, engine, run_dir=None)
        if overrides:
            plan = _overridden(plan, settings, engine, overrides)
        if not plan.ok:
            return plan
        sizing = (SizingContext(plan.shape, plan.host.gpu_bytes)
                  if plan.shape is not None and plan.host.gpu_bytes else None)
        self.supervisor.start(settings, engine, moe_layers=plan.shape.num_moe_layers if plan.shape else None,
                              sizing=sizing)
        self.adopted(settings, engine)
        return plan

    def adopted(self, settings: LaunchSettings, engine: Engine) -> None:
        """The supervisor runs an engine with these settings: just launched, or re-attached from an earlier
        app run."""
        with self._lock:
            self._mode = "simulated" if engine.kind == "sim" else "launched"
            self._api_key, self._settings, self._engine = settings.api_key, settings, engine

    def attach(self, url: str, api_key: str | None, attached_as: str | None = None, simulated: bool = False) -> None:
        """`attached_as`: what the URL is, in words, when the app knows (e.g. "Fleet router"); `simulated`: the
        app knows that simulated engines answer behind it (a router does not pass on their `m3ui_simulated`)."""
        self.supervisor.attach(url, api_key)
        with self._lock:
            self._mode, self._api_key, self._settings, self._engine = "attached", api_key, None, None
            self._attached_as, self._attached_simulated = attached_as, simulated

    @property
    def fronts_a_fleet(self) -> bool:
        """Attached to the router of a fleet this app runs: no one engine's figures (/v1/loads) are behind it."""
        return self._attached_as == FLEET_ROUTER

    def stop(self) -> None:
        self.supervisor.stop()

    def status(self) -> EngineStatus:
        snap = self.supervisor.snapshot(log_lines=0)
        ready = snap.state is EngineState.READY
        models = snap.readiness.model_ids if snap.readiness else ()
        return EngineStatus(
            mode=self._mode,
            state=snap.state, ready=ready, phase_detail=snap.phase_detail,
            simulated=(self._mode == "simulated" or (self._mode == "attached" and self._attached_simulated)
                       or bool(snap.readiness and snap.readiness.simulated)),
            progress=snap.progress, url=snap.url, model=models[0] if models else None,
            failure=(_failure_line(snap.diagnosis, snap.auto_restart, self._mode == "simulated")
                     if snap.state is EngineState.FAILED else None),
            restart_in_s=_restart_in(snap.auto_restart) if snap.state is EngineState.FAILED else None,
            attached_as=self._attached_as, unresponsive=snap.unresponsive,
        )

    def endpoint(self) -> EndpointConfig | None:
        """Where chat requests go, or None while the engine is not ready."""
        status = self.status()
        if not status.ready or not status.url:
            return None
        return EndpointConfig(base_url=f"{status.url}/v1", model=status.model or "default",
                              api_key=self._api_key or "EMPTY")

    def recorder_dir(self) -> Path | None:
        """The local folder the launched engine dumps expert statistics into (None when attached)."""
        snap = self.supervisor.snapshot(log_lines=0)
        if self._mode in ("simulated", "launched") and snap.run_dir is not None:
            return snap.run_dir / "recorder"
        return None


def _restart_in(auto: AutoRestart | None) -> float | None:
    return max(0.0, auto.due_at - time.time()) if auto is not None and auto.due_at is not None else None


def _failure_line(diagnosis: Diagnosis | None, auto: AutoRestart | None, simulated: bool) -> str:
    what = diagnosis.plain if diagnosis is not None else "The engine stopped unexpectedly"
    if simulated and diagnosis is not None and (note := diagnosis.simulated_note()):
        what = f"{what}. {note.rstrip('.')}"
    wait = _restart_in(auto)
    if auto is not None and wait is not None:
        return f"{what}; it restarts by itself in {wait:.0f} s (attempt {auto.attempt} of {auto.max_attempts})."
    return f"{what}; an admin can restart it from the admin panel."


def _overridden(plan: LaunchPlan, settings: LaunchSettings, engine: Engine, checks: frozenset[str]) -> LaunchPlan:
    """The plan with the errors of `checks` turned into accepted warnings; any other error still blocks."""
    findings = tuple(replace(f, level="warning", message=f"{f.message} (overridden by the operator)")
                     if f.is_error and f.check in checks else f for f in plan.findings)
    if has_errors(findings) or plan.ok:
        return replace(plan, findings=findings)
    return replace(plan, findings=findings, command=build_command(settings, engine))
