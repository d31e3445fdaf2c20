"""A new run folder named by its start time, never shared with another run."""

from __future__ import annotations

import time
from pathlib import Path

from launch.private_files import PRIVATE_DIR_MODE


def new_run_folder(parent: Path) -> Path:
    """parent/<time>, or <time>-n when another run started in the same second; 0700 (runs hold secrets)."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    for n in range(1000):
        path = parent / (stamp if n == 0 else f"{stamp}-{n}")
        try:
            path.mkdir(mode=PRIVATE_DIR_MODE)
            return path
        except FileExistsError:
            continue
    raise RuntimeError(f"cannot create a run folder under {parent}")
