"""Run folders: two runs started in the same second never share one (a fleet's workers keep state files there)."""

from __future__ import annotations

import stat
from pathlib import Path

from launch.run_folder import new_run_folder


def test_runs_started_in_the_same_second_get_their_own_private_folders(tmp_path: Path) -> None:
    folders = [new_run_folder(tmp_path) for _ in range(3)]
    assert len(set(folders)) == 3
    assert folders[1].name.startswith(folders[0].name) and folders[1].name.endswith("-1")
    assert all(stat.S_IMODE(f.stat().st_mode) == 0o700 for f in folders)
