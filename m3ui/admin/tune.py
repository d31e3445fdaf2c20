"""The admin's Tune tab, without Gradio: the roofline of the running launch on this host, and the tuner
(launch/tune.py) run on the app's own supervisor in a background thread, one at a time, cancellable.

The tuner relaunches the app's engine for every trial and leaves the best settings it measured running; the
EngineLink follows each relaunch, so chat and the monitor talk to whatever runs. Cancel rolls back exactly as
Ctrl-C does on the command line.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Literal

from launch.host_file import HostFigures, HostFileError, sim_host
from launch.model_config import ModelConfigError, load_shape_or_bundled
from launch.roofline import Roofline, roofline
from launch.settings import LaunchSettings
from launch.tune import TuneError, Tuner, TuneRequest, TuneResult, check_knobs
from m3ui.services import AppServices

TuneState = Literal["idle", "running", "done", "failed"]
MAX_LINES = 200
MAX_BUDGET_MIN = 24 * 60


@dataclass
class TuneCard:
    state: TuneState
    detail: str
    lines: list[str] = field(default_factory=list)
    result: dict[str, Any] | None = None
    started_at: float | None = None


class TuneDesk:
    def __init__(self, services: AppServices) -> None:
        self.services = services
        self._lock = threading.Lock()
        self._state: TuneState = "idle"
        self._detail = "No tune has run since the app started."
        self._lines: deque[str] = deque(maxlen=MAX_LINES)
        self._result: TuneResult | None = None
        self._cancel = threading.Event()
        self._thread: threading.Thread | None = None
        self._host: HostFigures | None = None
        self._started_at: float | None = None

    # --- what the tab shows -------------------------------------------------------------------------

    def host(self) -> HostFigures:
        """The host the simulated engine plays (M3UI_SIM_HOST), else this one, probed once (a few seconds)."""
        if self._host is None:
            played = sim_host()
            if played is None:
                from launch.host_probe import probe_host

                played = probe_host(quick=True)
            self._host = played
        return self._host

    def launch(self) -> tuple[LaunchSettings, Any] | None:
        link = self.services.link
        return (link.settings, link.engine) if link.settings is not None and link.engine is not None else None

    def roofline(self) -> tuple[Roofline, LaunchSettings] | str:
        """The roofline of the running launch, or why there is none."""
        launch = self.launch()
        if launch is None:
            return "No engine launched by this app: the roofline needs its settings."
        try:
            settings = launch[0]
            return roofline(load_shape_or_bundled(settings.model_path), settings, self.host()), settings
        except (HostFileError, ModelConfigError, ValueError) as exc:
            return f"No roofline: {exc}"

    def card(self) -> TuneCard:
        with self._lock:
            return TuneCard(self._state, self._detail, list(self._lines),
                            self._result.to_json() if self._result is not None else None, self._started_at)

    # --- actions ------------------------------------------------------------------------------------

    def start(self, budget_min: float | None, knobs: list[str] | None) -> tuple[bool, str]:
        """(started, message). Refused, with nothing relaunched, while a tune runs, without a launched engine,
        or with a budget or knobs the tuner would refuse."""
        with self._lock:
            if self._state == "running":
                return False, "A tune is already running: wait for it or cancel it."
            launch = self.launch()
            if launch is None:
                return False, "Tune relaunches the engine this app launched; start one first (an attached engine " \
                              "cannot be relaunched from here)."
            if budget_min is None or not 0 < budget_min <= MAX_BUDGET_MIN:
                return False, f"The budget must be between 0 and {MAX_BUDGET_MIN} minutes."
            try:
                chosen = check_knobs(tuple(knobs or ()))
                settings, engine = launch
                request = TuneRequest(settings, engine, load_shape_or_bundled(settings.model_path), self.host(),
                                      chosen, budget_min * 60, "app")
            except (TuneError, HostFileError, ModelConfigError, ValueError) as exc:
                return False, str(exc)
            self._state, self._detail, self._result = "running", "Tuning: the engine relaunches for each trial.", None
            self._lines.clear()
            self._cancel.clear()
            self._started_at = time.time()
            tuner = Tuner(request, self.services.supervisor, self.services.profiles, self.services.data_dir,
                          self._progress, self._cancel, self.services.link.adopted)
            self._thread = threading.Thread(target=self._run, args=(tuner,), name="tune", daemon=True)
            self._thread.start()
        return True, "Tune started: each trial relaunches the engine; the table fills in as they finish."

    def cancel(self) -> str:
        with self._lock:
            if self._state != "running":
                return "No tune is running."
            self._cancel.set()
        return "Cancelling: the best settings measured so far are relaunched and left running."

    def _progress(self, line: str) -> None:
        with self._lock:
            self._lines.append(line)

    def _run(self, tuner: Tuner) -> None:
        supervisor = self.services.supervisor
        # A trial that got ready is not the app's last good launch: only what the tune leaves running is.
        record, supervisor.on_ready = supervisor.on_ready, None
        try:
            self._tune(tuner)
        finally:
            supervisor.on_ready = record
            running, run_dir, engine = supervisor.running_settings(), supervisor.snapshot().run_dir, \
                self.services.link.engine
            if record is not None and running is not None and run_dir is not None and engine is not None:
                record(run_dir, running, engine)

    def _tune(self, tuner: Tuner) -> None:
        try:
            result = tuner.run()
        except TuneError as exc:
            self._finish("failed", str(exc), None)
        except Exception as exc:  # a bug must show on the tab, not leave it "running" forever
            self._finish("failed", f"The tune stopped: {exc!r}", None)
        else:
            how = "Cancelled" if result.interrupted else "Done"
            saved = f"; saved as profile {result.profile!r}" if result.profile else "; the start settings stay best"
            self._finish("done", f"{how}: decode {result.gain:+.1%} in {result.relaunches} relaunches{saved}.", result)

    def _finish(self, state: TuneState, detail: str, result: TuneResult | None) -> None:
        with self._lock:
            self._state, self._detail, self._result = state, detail, result
