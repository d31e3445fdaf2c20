"""The last launch that reached ready, kept on disk so that a bad change can be rolled back and an engine that
died is restarted with settings known to work. The supervisor records it the moment an engine gets ready."""

from __future__ import annotations

import threading
from pathlib import Path

from launch.command import Engine
from launch.profile import Profile, ProfileError, load_profile, save_profile
from launch.settings import LaunchSettings

LAST_GOOD_NAME = "last good"
FILE_NAME = "last-good.json"


class LastGood:
    def __init__(self, data_dir: Path) -> None:
        self.path = data_dir / FILE_NAME
        self._lock = threading.Lock()
        self._recorded_run: Path | None = None

    def record(self, run_dir: Path, settings: LaunchSettings, engine: Engine) -> bool:
        """Keep these settings as the last good ones (once per run); True when this call wrote them. Never
        raises (the supervisor calls it as the engine gets ready): a full disk only loses the record."""
        with self._lock:
            if run_dir == self._recorded_run:
                return False
            try:
                save_profile(Profile(LAST_GOOD_NAME, settings, engine), self.path)
            except OSError:
                return False
            self._recorded_run = run_dir
            return True

    def launch(self) -> tuple[LaunchSettings, Engine] | None:
        """What an automatic restart relaunches."""
        good = self.load()
        return (good.settings, good.engine) if good is not None else None

    def load(self) -> Profile | None:
        """The last good launch, or None when no launch reached ready (or the file is unreadable)."""
        try:
            return load_profile(self.path) if self.path.is_file() else None
        except ProfileError:
            return None
