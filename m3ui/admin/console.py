"""The admin actions, each one call: review the form, preflight, start, stop, restart, attach, apply a
diagnosis' change and relaunch, roll back to the last good launch, save / load / delete profiles.

Results are values (`Outcome`) the view shows; nothing here raises for an operator's mistake. Who may call
these is decided before: every admin handler checks the user first (m3ui/ui/admin/guard.py).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal
from urllib.parse import urlsplit

from launch.command import Engine
from launch.diagnosis import Diagnosis
from launch.findings import Finding
from launch.health import engine_url
from launch.preflight import LaunchPlan, plan_launch
from launch.profile import Profile, ProfileError
from launch.restart_policy import RestartPolicy
from launch.settings import LaunchSettings, SettingsError, coerce
from launch.supervisor import EngineBusyError, EngineState, SupervisorSnapshot
from m3ui.admin.form import FormReading, FormValue, read_engine, read_form
from m3ui.admin.host import HostSurvey
from m3ui.admin.model_info import ModelShapes
from m3ui.admin.review import Change, Review, review_form
from m3ui.services import AppServices, simulated_settings

Level = Literal["ok", "info", "warning", "error"]
# The sizing estimate is a model of the engine's memory use: the operator may try a launch it advises against.
OVERRIDABLE_CHECKS = frozenset({"memory"})
_RUNNING = (EngineState.STARTING, EngineState.READY, EngineState.STOPPING)


@dataclass(frozen=True)
class Outcome:
    level: Level
    message: str
    findings: tuple[Finding, ...] = ()
    # Settings and engine the form should now hold (after applying a fix, a rollback, a loaded profile).
    settings: LaunchSettings | None = None
    engine: Engine | None = None
    restart: RestartPolicy | None = None  # the auto-restart controls should now show (a loaded profile's)

    @property
    def ok(self) -> bool:
        return self.level in ("ok", "info", "warning")


class AdminConsole:
    def __init__(self, services: AppServices, survey: HostSurvey | None = None) -> None:
        self.services = services
        self.survey = survey or HostSurvey()
        self.shapes = ModelShapes()
        self.last_good = services.last_good
        self._launch_lock = threading.Lock()  # one start/stop sequence at a time, whoever clicks

    # --- the form ---------------------------------------------------------------------------------

    def review(self, values: Sequence[FormValue], engine_kind: str, engine_python: str) -> Review:
        return review_form(read_form(values), read_engine(engine_kind, engine_python), self.survey, self.shapes)

    def initial(self) -> tuple[LaunchSettings, Engine]:
        """What the form shows first: the engine that runs (or ran) last, else the last good launch, else the
        simulated preset the app starts with."""
        link = self.services.link
        if link.settings is not None and link.engine is not None:
            return link.settings, link.engine
        good = self.last_good.load()
        if good is not None:
            return good.settings, good.engine
        return simulated_settings(), Engine("sim")

    # --- engine control ---------------------------------------------------------------------------

    def preflight(self, settings: LaunchSettings, engine: Engine) -> Outcome:
        report = self.survey.report(engine.python, refresh=True) if engine.kind == "sglang" else None
        findings = self._own_port_allowed(plan_launch(settings, engine, report=report).findings, settings)
        errors = sum(f.is_error for f in findings)
        if errors:
            return Outcome("error", f"Preflight found {errors} error(s): the engine would not start", findings)
        warnings = sum(f.level == "warning" for f in findings)
        return Outcome("ok" if not warnings else "warning",
                       "Preflight passed" + (f" with {warnings} warning(s)" if warnings else ""), findings)

    def _own_port_allowed(self, findings: tuple[Finding, ...], settings: LaunchSettings) -> tuple[Finding, ...]:
        """A port held by the engine running now is no error for a Restart, which stops that engine first."""
        snap = self.services.supervisor.snapshot(log_lines=0)
        if snap.mode != "managed" or snap.state not in _RUNNING or snap.url != engine_url(settings):
            return findings
        return tuple(Finding("warning", f.field, f"{settings.port} is held by the engine running now: Restart stops "
                             "it first (Start refuses while it runs)", check="port")
                     if f.check == "port" and f.is_error else f for f in findings)

    def start(self, settings: LaunchSettings, engine: Engine, *, override_estimate: bool = False) -> Outcome:
        if (refused := self._fleet_refusal()) is not None:
            return refused
        with self._launch_lock:
            if self.services.supervisor.state in _RUNNING:
                return Outcome("error", "An engine is already running: stop it first, or use Restart to relaunch "
                                        "it with these settings.")
            return self._launch(settings, engine, override_estimate)

    def restart(self, settings: LaunchSettings, engine: Engine, *, override_estimate: bool = False) -> Outcome:
        """Stop whatever runs, then start these settings; settings with errors stop nothing."""
        if (refused := self._fleet_refusal()) is not None:
            return refused
        with self._launch_lock:
            blocking = [f for f in review_form(FormReading(settings, ()), engine, self.survey, self.shapes).findings
                        if f.is_error and not (override_estimate and f.check in OVERRIDABLE_CHECKS)]
            if blocking:
                return Outcome("error", "Not restarted: fix these first (the running engine was left alone)",
                               tuple(blocking))
            self.services.link.stop()
            return self._launch(settings, engine, override_estimate)

    def _launch(self, settings: LaunchSettings, engine: Engine, override_estimate: bool) -> Outcome:
        overrides = OVERRIDABLE_CHECKS if override_estimate else frozenset()
        try:
            plan = self.services.link.launch(settings, engine, overrides=overrides)
        except (EngineBusyError, OSError, RuntimeError) as exc:
            return Outcome("error", f"Not started: {exc}")
        return _launch_outcome(plan, engine)

    def stop(self) -> Outcome:
        if (refused := self._fleet_refusal()) is not None:
            return refused
        with self._launch_lock:
            snap = self.services.supervisor.snapshot(log_lines=0)
            if snap.auto_restart is not None and snap.auto_restart.due_at is not None:
                self.services.link.stop()  # calls the pending restart off
                return Outcome("ok", "The automatic restart was called off: the engine stays down.")
            if snap.state not in (EngineState.STARTING, EngineState.READY):
                return Outcome("info", f"Nothing to stop: the engine is {snap.state.value}.")
            self.services.link.stop()
            return Outcome("ok", "Engine stopped." if self.services.link.status().mode != "attached"
                           else "Detached from the external engine.")

    def attach(self, url: str, api_key: str) -> Outcome:
        if (refused := self._fleet_refusal()) is not None:
            return refused
        problem = url_problem(url)
        if problem:
            return Outcome("error", problem)
        with self._launch_lock:
            if self.services.supervisor.state in _RUNNING:
                return Outcome("error", "An engine is running: stop it before attaching to another one.")
            base = url.strip().rstrip("/").removesuffix("/v1")
            try:
                self.services.link.attach(base, api_key.strip() or None)
            except (EngineBusyError, RuntimeError) as exc:
                return Outcome("error", f"Not attached: {exc}")
            return Outcome("ok", f"Attached to {base}: waiting for /health and /v1/models to answer.")

    def _fleet_refusal(self) -> Outcome | None:
        """On a fleet the chat is attached to the router: starting, stopping or attaching one engine here would
        cut it off from every worker. Workers are launched, attached and removed in the Fleet tab."""
        if self.services.fleet is None:
            return None
        return Outcome("error", f"This app runs a fleet behind the router at {self.services.fleet.fleet.router.url}: "
                                "start, stop and attach act on its workers in the Fleet tab (stopping here would cut "
                                "the chat off from every worker).")

    def set_restart_policy(self, policy: RestartPolicy) -> Outcome:
        self.services.supervisor.set_restart_policy(policy)
        if not policy.enabled:
            return Outcome("ok", "Auto-restart is off: an engine that dies stays down until someone starts it.")
        return Outcome("ok", f"Auto-restart is on: up to {policy.max_attempts} attempt(s) within "
                             f"{policy.window_s / 60:g} min, the first after {policy.first_delay_s:g} s (then twice as "
                             "long each time), with the last good launch.")

    # --- after a failure --------------------------------------------------------------------------

    def apply_and_relaunch(self, change: Change) -> Outcome:
        """Apply one of the diagnosis' suggested changes to the launch that failed, and launch again."""
        link = self.services.link
        if link.settings is None or link.engine is None:
            return Outcome("error", "No launched engine to fix (an attached engine is configured elsewhere).")
        name, value = change
        try:
            settings = link.settings.replace(**{name: coerce(name, value)})
        except (SettingsError, TypeError) as exc:
            return Outcome("error", f"Cannot apply {name}={value!r}: {exc}")
        outcome = self.start(settings, link.engine)
        return _with_form(outcome, settings, link.engine)

    def roll_back(self) -> Outcome:
        """Launch the last settings that reached ready (stopping what runs)."""
        good = self.last_good.load()
        if good is None:
            return Outcome("error", "No launch has reached ready yet, so there is nothing to roll back to.")
        return _with_form(self.restart(good.settings, good.engine), good.settings, good.engine)

    # --- observing --------------------------------------------------------------------------------

    def snapshot(self, log_lines: int = 0) -> SupervisorSnapshot:
        """The supervisor's in-memory state (it keeps a launch that gets ready as the last good one)."""
        return self.services.supervisor.snapshot(log_lines=log_lines)

    def diagnosis(self) -> Diagnosis | None:
        snap = self.services.supervisor.snapshot(log_lines=0)
        return snap.diagnosis if snap.state is EngineState.FAILED else None

    # --- profiles ---------------------------------------------------------------------------------

    def save_profile(self, name: str, settings: LaunchSettings, engine: Engine, start_with_app: bool,
                     restart: RestartPolicy | None = None) -> Outcome:
        store = self.services.profiles
        try:
            store.save(Profile(name.strip(), settings, engine, start_with_app, restart or RestartPolicy()))
        except (ProfileError, OSError) as exc:
            return Outcome("error", f"Not saved: {exc}")
        extra = " It starts with the app." if start_with_app else ""
        return Outcome("ok", f"Saved profile {name.strip()!r} to {store.path_for(name.strip())}.{extra}")

    def load_profile(self, name: str) -> Outcome:
        try:
            profile = self.services.profiles.load(name)
        except ProfileError as exc:
            return Outcome("error", f"Not loaded: {exc}")
        return Outcome("ok", f"Loaded profile {name!r} into the form (and its auto-restart policy into its "
                             "controls: Apply now to use it).", settings=profile.settings, engine=profile.engine,
                       restart=profile.restart)

    def delete_profile(self, name: str) -> Outcome:
        try:
            path = self.services.profiles.path_for(name)
        except ProfileError as exc:
            return Outcome("error", str(exc))
        if not path.exists():
            return Outcome("error", f"No profile named {name!r}.")
        self.services.profiles.delete(name)
        return Outcome("ok", f"Deleted profile {name!r}.")

    def set_startup_profile(self, name: str | None) -> Outcome:
        """Mark one profile to start with the app (None: start the simulated engine, as without profiles)."""
        store = self.services.profiles
        try:
            if name:
                profile = store.load(name)
                store.save(replace(profile, start_with_app=True))
                return Outcome("ok", f"{name!r} starts with the app from now on.")
            for other in store.names():
                profile = store.load(other)
                if profile.start_with_app:
                    store.save(replace(profile, start_with_app=False))
        except ProfileError as exc:
            return Outcome("error", str(exc))
        return Outcome("ok", "No profile starts with the app: it starts the simulated engine.")


def only_overridable_errors(findings: Sequence[Finding]) -> bool:
    """There are errors, and all of them are ones the operator may override ('Start anyway' applies)."""
    errors = [f for f in findings if f.is_error]
    return bool(errors) and all(f.check in OVERRIDABLE_CHECKS for f in errors)


def url_problem(url: str) -> str | None:
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return "Enter the engine's base URL, e.g. http://gpu-box:30000 (http or https)."
    if parts.query or parts.fragment or any(c.isspace() for c in url.strip()):
        return "The URL must be a plain base URL without spaces, query or fragment."
    return None


def _launch_outcome(plan: LaunchPlan, engine: Engine) -> Outcome:
    if not plan.ok:
        errors = sum(f.is_error for f in plan.findings)
        hint = " The only errors are the memory estimate: use 'Start anyway' to let the engine decide." \
            if only_overridable_errors(plan.findings) else ""
        return Outcome("error", f"Not started: preflight found {errors} error(s).{hint}", plan.findings)
    what = "simulated engine" if engine.kind == "sim" else "sglang-kt"
    warnings = [f for f in plan.findings if f.level == "warning"]
    return Outcome("warning" if warnings else "ok", f"Starting the {what}: follow the phases above."
                   + (f" Preflight: {len(warnings)} warning(s)." if warnings else ""), plan.findings)


def _with_form(outcome: Outcome, settings: LaunchSettings, engine: Engine) -> Outcome:
    return Outcome(outcome.level, outcome.message, outcome.findings, settings, engine)

