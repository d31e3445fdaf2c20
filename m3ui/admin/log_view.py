"""The engine log as the admin panel shows it: a filtered tail, and a copy of the whole file to download."""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Sequence
from pathlib import Path

from launch.engine_log import mask_secrets
from launch.private_files import PRIVATE_FILE_MODE, private_dir

# What an operator scans for first: sglang's level names, Python tracebacks and exception lines.
PROBLEM_LINE = re.compile(r"\b(ERROR|CRITICAL|WARNING|FATAL|Traceback)\b|[A-Za-z]+(Error|Exception):|"
                          r"out of memory|Killed|scheduler is dead", re.IGNORECASE)
EXPORT_DIR_NAME = "m3ui-logs"


def filter_log(lines: Sequence[str], contains: str = "", problems_only: bool = False,
               limit: int = 200) -> tuple[str, ...]:
    """The last `limit` lines that contain `contains` (case-insensitive) and, if asked, look like problems."""
    needle = contains.strip().lower()
    kept = [line for line in lines
            if (not needle or needle in line.lower()) and (not problems_only or PROBLEM_LINE.search(line))]
    return tuple(kept[-limit:]) if limit > 0 else ()


def export_log(log_path: Path, run_name: str, into: Path | None = None, secrets: tuple[str, ...] = ()) -> Path:
    """A copy of the whole log, named after its run (one file per run, replaced on each download), in an
    owner-only folder the web server may hand out (the temp dir); `secrets` (the API key, which sglang logs with
    its server args) are masked, and the rest of the log stays private to this user all the same."""
    folder = private_dir((into or Path(tempfile.gettempdir())) / f"{EXPORT_DIR_NAME}-{os.getuid()}")
    target = folder / f"m3ui-engine-{run_name}.log"
    exact = {"encoding": "utf-8", "errors": "surrogateescape", "newline": ""}  # every other byte as it was
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, PRIVATE_FILE_MODE)
    os.fchmod(fd, PRIVATE_FILE_MODE)
    with open(log_path, **exact) as src, open(fd, "w", **exact) as out:  # type: ignore[call-overload]  # open()'s text-mode keywords, all str
        for line in src:
            out.write(mask_secrets(line, secrets))
    return target
