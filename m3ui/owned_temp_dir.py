"""Temp folders named after the process that owns them: removed at exit, and the next start removes those a
killed app (SIGKILL, OOM) could not, so no folder is left behind for good."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import psutil


def owned_temp_dir(prefix: str) -> tempfile.TemporaryDirectory[str]:
    """A fresh 0700 folder `<prefix><pid>-<random>` in the temp dir; deleted when the object is (or at exit)."""
    sweep_orphans(prefix)
    return tempfile.TemporaryDirectory(prefix=f"{prefix}{os.getpid()}-")


def sweep_orphans(prefix: str, into: Path | None = None) -> list[Path]:
    """Remove the folders of `prefix` whose owner process is gone; returns what was removed."""
    removed = []
    for path in (into or Path(tempfile.gettempdir())).glob(f"{prefix}*-*"):
        owner = path.name[len(prefix):].split("-", 1)[0]
        if path.is_dir() and owner.isdigit() and not psutil.pid_exists(int(owner)):
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed
