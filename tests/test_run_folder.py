"""Run folders: two runs started in the same second never share one (a fleet's workers keep state files there),
and only the newest few are kept."""

from __future__ import annotations

import stat
from pathlib import Path

from launch.run_folder import new_run_folder, prune_runs


def test_runs_started_in_the_same_second_get_their_own_private_folders(tmp_path: Path) -> None:
    folders = [new_run_folder(tmp_path) for _ in range(3)]
    assert len(set(folders)) == 3
    assert folders[1].name.startswith(folders[0].name) and folders[1].name.endswith("-1")
    assert all(stat.S_IMODE(f.stat().st_mode) == 0o700 for f in folders)


def test_only_the_newest_runs_are_kept_and_other_files_are_left_alone(tmp_path):
    names = ["20261130-235959", "20261201-000000", "20261201-000000-2", "20261201-000000-10", "20261201-000001"]
    for name in names:
        (tmp_path / name).mkdir()
        (tmp_path / name / "engine.log").write_text("x")
    (tmp_path / "notes").mkdir()
    (tmp_path / "state.json").write_text("{}")
    removed = prune_runs(tmp_path, 2)
    assert sorted(p.name for p in removed) == ["20261130-235959", "20261201-000000", "20261201-000000-2"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["20261201-000000-10", "20261201-000001", "notes",
                                                          "state.json"]


def test_a_new_run_folder_is_private_and_makes_room(tmp_path):
    for n in range(5):
        (tmp_path / f"20200101-00000{n}").mkdir()
    made = new_run_folder(tmp_path, keep=3)
    runs = sorted(p.name for p in tmp_path.iterdir())
    assert runs == ["20200101-000003", "20200101-000004", made.name]
    assert stat.S_IMODE(made.stat().st_mode) == 0o700
