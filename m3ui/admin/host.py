"""What the engine will run on, as validation needs it: simulated hardware, or this machine's, detected once.

Detecting this machine costs NVML calls and a subprocess of the engine's Python, so a report is kept per
engine Python until the operator asks for a fresh one; the simulated engine's hardware is read from the
environment on every call (cheap, and the sim reads the very same variables).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from launch.command import Engine
from launch.hardware import HardwareReport, detect_hardware
from launch.preflight import host_facts, simulated_host
from launch.settings import LaunchSettings
from launch.validation import HostFacts


class HostSurvey:
    def __init__(self, detect: Callable[[str | None], HardwareReport] = detect_hardware) -> None:
        self._detect = detect
        self._lock = threading.Lock()
        self._reports: dict[str, HardwareReport] = {}

    def report(self, python: str, refresh: bool = False) -> HardwareReport:
        """This machine's hardware report with the engine packages of `python` (cached per Python)."""
        with self._lock:
            if refresh or python not in self._reports:
                self._reports[python] = self._detect(python)
            return self._reports[python]

    def facts(self, settings: LaunchSettings, engine: Engine) -> HostFacts:
        if engine.kind == "sim":
            return simulated_host(settings)
        return host_facts(self.report(engine.python))
