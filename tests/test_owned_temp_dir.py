"""Temp folders named after their owner process: a killed app's folder is removed by the next start, a live
one's is kept, and the folder goes when its object does (issue 9 #3: no folders left behind)."""

import os
import subprocess
import sys

from m3ui.owned_temp_dir import owned_temp_dir, sweep_orphans

PREFIX = "m3ui-test-owned-"


def dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_a_dead_owners_folder_is_swept_and_a_live_ones_kept(tmp_path):
    orphan = tmp_path / f"{PREFIX}{dead_pid()}-abc"
    live = tmp_path / f"{PREFIX}{os.getpid()}-def"
    unrelated = tmp_path / f"{PREFIX}notapid-ghi"
    for folder in (orphan, live, unrelated):
        (folder / "sub").mkdir(parents=True)
    assert sweep_orphans(PREFIX, tmp_path) == [orphan]
    assert not orphan.exists() and live.exists() and unrelated.exists()


def test_the_folder_is_private_and_goes_with_its_object():
    folder = owned_temp_dir(PREFIX)
    path = folder.name
    assert os.path.basename(path).startswith(f"{PREFIX}{os.getpid()}-")
    assert os.stat(path).st_mode & 0o777 == 0o700
    folder.cleanup()
    assert not os.path.exists(path)
