"""A new run folder named by its start time, never shared with another run; only the newest few are kept."""

from __future__ import annotations

import re
import shutil
import time
from pathlib import Path

from launch.private_files import PRIVATE_DIR_MODE, private_dir

# Each run keeps its engine log (bounded by launch.engine_log.LOG_ROTATE_BYTES), its command and its recorder
# folder: the oldest go when a new run starts, so a host that restarts its engine for months keeps a bounded disk.
KEEP_RUNS = 30
_RUN_NAME = re.compile(r"\d{8}-\d{6}(-\d+)?")


def new_run_folder(parent: Path, keep: int = KEEP_RUNS) -> Path:
    """parent/<time>, or <time>-n when another run started in the same second; 0700 (runs hold secrets).
    Run folders beyond the newest `keep` (this one included) are removed first: only a run that is over can be
    that old, since a new run starts only when no engine of this folder runs."""
    private_dir(parent)
    prune_runs(parent, keep - 1)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    for n in range(1000):
        path = parent / (stamp if n == 0 else f"{stamp}-{n}")
        try:
            path.mkdir(mode=PRIVATE_DIR_MODE)
            return path
        except FileExistsError:
            continue
    raise RuntimeError(f"cannot create a run folder under {parent}")


def prune_runs(parent: Path, keep: int) -> list[Path]:
    """Remove all but the newest `keep` run folders of `parent` (their names sort by start time); returns them."""
    runs = sorted((p for p in parent.iterdir() if p.is_dir() and not p.is_symlink() and _RUN_NAME.fullmatch(p.name)),
                  key=_start_order)
    old = runs[:max(0, len(runs) - keep)]
    for path in old:
        shutil.rmtree(path, ignore_errors=True)
    return old


def _start_order(path: Path) -> tuple[str, int]:
    """<date>-<time>[-n]: by the stamp, then n as a number (…-10 after …-9)."""
    return path.name[:15], int(path.name[16:] or 0)
