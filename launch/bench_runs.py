"""Benchmark runs kept per profile (`<data dir>/bench/<profile>/<time>.json`), so a run can be compared with the
ones before it. At most KEEP_RUNS per profile: the oldest go first."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from launch.private_files import write_private
from launch.profile import validate_name

KEEP_RUNS = 20
ENDPOINT_ONLY = "endpoint"  # runs with no profile or preset behind them


class BenchRuns:
    def __init__(self, data_dir: Path) -> None:
        self.folder = data_dir / "bench"

    def _dir(self, name: str) -> Path:
        return self.folder / validate_name(name)

    def save(self, name: str, run: dict[str, Any]) -> Path:
        folder = self._dir(name)
        path = folder / f"{time.strftime('%Y%m%d-%H%M%S')}-{time.time_ns() % 10**9:09d}.json"
        write_private(path, json.dumps({"saved_at": time.time(), **run}, indent=2) + "\n")
        for old in sorted(folder.glob("*.json"))[:-KEEP_RUNS]:
            old.unlink(missing_ok=True)
        return path

    def runs(self, name: str) -> list[dict[str, Any]]:
        """Oldest first; a file that does not parse is skipped."""
        out = []
        for path in sorted(self._dir(name).glob("*.json")):
            try:
                out.append(json.loads(path.read_text(encoding="utf-8")))
            except (OSError, ValueError):
                continue
        return out
