"""Model weights against a stand-in Hub on 127.0.0.1: config first, progress, resume, cancel, refusals."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from huggingface_hub import constants as hf_constants
from huggingface_hub import hf_hub_download

from launch.model_config import load_model_shape
from launch.preflight import free_port
from launch.weights import (
    MARKER_NAME,
    Downloader,
    DownloadProgress,
    DownloadRequest,
    GatedRepo,
    HubOffline,
    HubUnreachable,
    RepoNotFound,
    RevisionNotFound,
    UnsafeFileName,
    fetch_config,
    plan_download,
    verify_folder,
)
from tests.hub_standin import COMMIT, REPO_ID, StandInHub

ROOT = Path(__file__).resolve().parent.parent
SHARD1 = "model-00001-of-00002.safetensors"
SHARD2 = "model-00002-of-00002.safetensors"
RUN_TIMEOUT_S = 30.0


@pytest.fixture
def hub(monkeypatch: pytest.MonkeyPatch) -> Iterator[StandInHub]:
    """A stand-in Hub reached through HF_ENDPOINT; only these tests go online, and only to 127.0.0.1."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    # huggingface_hub reads HF_HUB_OFFLINE once at import (conftest set it to 1 before): the env alone is too late.
    monkeypatch.setattr(hf_constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
    with StandInHub() as standin:
        monkeypatch.setenv("HF_ENDPOINT", standin.endpoint)
        yield standin


def _run(request: DownloadRequest, **kwargs: Callable[[Path], int]) -> DownloadProgress:
    downloader = Downloader(request, **kwargs)
    downloader.start()
    progress = downloader.wait(RUN_TIMEOUT_S)
    assert progress.finished, progress
    return progress


def _until(condition: Callable[[], bool], timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.02)


def _part_files(dest: Path) -> list[Path]:
    return sorted((dest / ".m3ui-download" / "parts").glob("*.part"))


def _same_files(hub: StandInHub, dest: Path) -> bool:
    return all((dest / name).read_bytes() == f.data for name, f in hub.files.items())


def test_config_is_fetched_alone_and_sizing_reads_it(hub: StandInHub, tmp_path: Path) -> None:
    path = fetch_config(REPO_ID, tmp_path / "m3", endpoint=hub.endpoint)

    assert path == tmp_path / "m3" / "config.json"
    assert path.read_bytes() == hub.files["config.json"].data
    assert load_model_shape(path.parent).num_routed_experts > 0
    assert [r.path.rsplit("/", 1)[1] for r in hub.requests if "/resolve/" in r.path] == ["config.json"]
    result = verify_folder(tmp_path / "m3")
    assert result.status == "incomplete"
    assert {p.name for p in result.problems} == set(hub.files) - {"config.json"}
    # Asked again, a verified config.json is not fetched again.
    fetch_config(REPO_ID, tmp_path / "m3", endpoint=hub.endpoint)
    assert len(hub.file_gets("config.json")) == 1


def test_full_download_reports_real_progress_and_ends_verified(hub: StandInHub, tmp_path: Path) -> None:
    hub.knobs.throttle_bps = 3_000_000  # ~0.7 s, so progress can be watched mid-way
    downloader = Downloader(DownloadRequest(REPO_ID, tmp_path / "m3", workers=2))
    downloader.start()
    seen: list[DownloadProgress] = []
    while not (progress := downloader.wait(0.02)).finished:
        seen.append(progress)
    seen.append(progress)

    done = [p.bytes_done for p in seen]
    assert done == sorted(done), "bytes on disk never go backwards"
    midway = [p for p in seen if p.state == "downloading" and 0 < p.bytes_done < hub.total_bytes]
    assert midway and any(p.rate_bps > 0 and p.eta_s is not None and p.current_files for p in midway)
    assert progress.state == "done", progress.message
    assert (progress.bytes_done, progress.bytes_total) == (hub.total_bytes, hub.total_bytes)
    assert (progress.files_done, progress.files_total) == (len(hub.files), len(hub.files))
    assert _same_files(hub, tmp_path / "m3")
    assert (tmp_path / "m3" / MARKER_NAME).is_file()
    assert not (tmp_path / "m3" / ".m3ui-download").exists()
    assert verify_folder(tmp_path / "m3").status == "complete"
    assert verify_folder(tmp_path / "m3", deep=True).status == "complete"
    # Only the listing and the files were asked for: no telemetry, no HEAD per file.
    assert {r.path.split("?")[0].rsplit("/", 1)[0] for r in hub.requests} == {
        f"/api/models/{REPO_ID}/revision", f"/{REPO_ID}/resolve/{COMMIT}"}


def test_cut_connection_fails_then_a_second_run_fetches_only_the_rest(hub: StandInHub, tmp_path: Path) -> None:
    cut = 600_000
    hub.knobs.cut_at[SHARD1] = cut
    request = DownloadRequest(REPO_ID, tmp_path / "m3", retries=0)

    first = _run(request)
    assert first.state == "failed"
    assert SHARD1 in first.message and "resume" in first.message
    assert [p.stat().st_size for p in _part_files(tmp_path / "m3")] == [cut]
    assert not (tmp_path / "m3" / MARKER_NAME).exists()
    assert ("partial", SHARD1) in {(p.kind, p.name) for p in verify_folder(tmp_path / "m3").problems}

    hub.knobs.cut_at.clear()
    gets_before = len(hub.file_gets(SHARD1))
    assert plan_download(request).partial_bytes == cut
    second = _run(request)

    assert second.state == "done", second.message
    resumed = hub.file_gets(SHARD1)[gets_before:]
    assert [r.range for r in resumed] == [f"bytes={cut}-"]
    assert resumed[0].status == 206 and resumed[0].bytes_sent == len(hub.files[SHARD1].data) - cut
    assert _same_files(hub, tmp_path / "m3")
    assert verify_folder(tmp_path / "m3").status == "complete"


def test_killed_download_process_resumes_from_its_partial_file(hub: StandInHub, tmp_path: Path) -> None:
    hub.knobs.throttle_bps = 400_000
    dest = tmp_path / "m3"
    env = {**os.environ, "HF_HUB_OFFLINE": "0", "HF_ENDPOINT": hub.endpoint, "PYTHONPATH": str(ROOT)}
    child = subprocess.Popen([sys.executable, "-m", "launch.weights", "download", str(dest), "--repo", REPO_ID],
                             cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        _until(lambda: any(p.stat().st_size > 200_000 for p in _part_files(dest)), timeout_s=20)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(10)
        child.stderr.close()
    kept = {p.name: p.stat().st_size for p in _part_files(dest)}
    hub.knobs.throttle_bps = None

    progress = _run(DownloadRequest(REPO_ID, dest))

    assert progress.state == "done", progress.message
    resumed = [r for r in hub.requests if r.range]
    assert resumed and sorted(int(r.range[6:-1]) for r in resumed) == sorted(s for s in kept.values() if s)
    assert all(r.status == 206 for r in resumed)
    assert _same_files(hub, dest)
    assert verify_folder(dest).status == "complete"


def test_dropped_connection_is_resumed_within_the_same_run(hub: StandInHub, tmp_path: Path) -> None:
    hub.knobs.drop_once_at[SHARD2] = 300_000

    progress = _run(DownloadRequest(REPO_ID, tmp_path / "m3"))

    assert progress.state == "done", progress.message
    assert [r.range for r in hub.file_gets(SHARD2)] == [None, "bytes=300000-"]
    assert hub.bytes_served(SHARD2) == len(hub.files[SHARD2].data)


def test_a_server_that_ignores_range_gets_the_file_again_from_its_start(hub: StandInHub, tmp_path: Path) -> None:
    hub.knobs.drop_once_at[SHARD2] = 300_000
    hub.knobs.ignore_range = True

    progress = _run(DownloadRequest(REPO_ID, tmp_path / "m3"))

    assert progress.state == "done", progress.message
    assert [(r.range, r.status) for r in hub.file_gets(SHARD2)] == [(None, 200), ("bytes=300000-", 200)]
    assert _same_files(hub, tmp_path / "m3")


def test_cancel_stops_a_stalled_transfer_within_two_seconds(hub: StandInHub, tmp_path: Path) -> None:
    hub.knobs.stall_at[SHARD1] = 400_000
    downloader = Downloader(DownloadRequest(REPO_ID, tmp_path / "m3"))
    downloader.start()
    _until(lambda: downloader.progress().bytes_done >= hub.total_bytes - len(hub.files[SHARD1].data) + 400_000)

    asked = time.monotonic()
    downloader.cancel()
    progress = downloader.wait(5)

    assert time.monotonic() - asked < 2.0
    assert progress.state == "cancelled" and "resume" in progress.message
    assert not (tmp_path / "m3" / MARKER_NAME).exists()
    assert [p.stat().st_size for p in _part_files(tmp_path / "m3")] == [400_000]
    assert verify_folder(tmp_path / "m3").status == "incomplete"


def test_second_download_into_a_busy_folder_is_refused(hub: StandInHub, tmp_path: Path) -> None:
    hub.knobs.stall_at[SHARD1] = 100_000
    first = Downloader(DownloadRequest(REPO_ID, tmp_path / "m3"))
    first.start()
    _until(lambda: first.progress().state == "downloading")
    try:
        second = _run(DownloadRequest(REPO_ID, tmp_path / "m3"))
    finally:
        first.cancel()
        first.wait(5)
    assert second.state == "failed" and "another download" in second.message


def test_not_enough_disk_space_refuses_before_writing_anything(hub: StandInHub, tmp_path: Path) -> None:
    request = DownloadRequest(REPO_ID, tmp_path / "m3")

    plan = plan_download(request, free_space=lambda _path: 1_000_000)
    progress = _run(request, free_space=lambda _path: 1_000_000)

    assert plan.refusal is not None and "not enough disk space" in plan.refusal
    assert plan.remaining_bytes == hub.total_bytes
    assert progress.state == "failed" and "not enough disk space" in progress.message
    assert not (tmp_path / "m3").exists()
    assert not any("/resolve/" in r.path for r in hub.requests)


def test_unreachable_hub_is_a_clear_error_and_writes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(hf_constants, "HF_HUB_OFFLINE", False)
    endpoint = f"http://127.0.0.1:{free_port()}"  # nothing listens there

    with pytest.raises(HubUnreachable, match="cannot reach the Hub at " + endpoint):
        fetch_config(REPO_ID, tmp_path / "m3", endpoint=endpoint)
    progress = _run(DownloadRequest(REPO_ID, tmp_path / "m3", endpoint=endpoint))

    assert progress.state == "failed" and "cannot reach the Hub" in progress.message
    assert not (tmp_path / "m3").exists()


def test_offline_mode_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(hf_constants, "HF_HUB_OFFLINE", True)
    with pytest.raises(HubOffline, match="HF_HUB_OFFLINE"):
        plan_download(DownloadRequest(REPO_ID, tmp_path / "m3", endpoint="http://127.0.0.1:9"))


def test_missing_repo_revision_and_gated_repo_say_what_to_do(hub: StandInHub, tmp_path: Path) -> None:
    with pytest.raises(RepoNotFound, match="m3ui-test/nope was not found"):
        fetch_config("m3ui-test/nope", tmp_path / "m3")
    with pytest.raises(RevisionNotFound):
        fetch_config(REPO_ID, tmp_path / "m3", revision="no-such-branch")
    hub.knobs.gated = True
    with pytest.raises(GatedRepo, match="accept its terms"):
        fetch_config(REPO_ID, tmp_path / "m3")


def test_a_changed_file_is_named_and_a_deep_check_finds_same_size_corruption(hub: StandInHub, tmp_path: Path) -> None:
    dest = tmp_path / "m3"
    assert _run(DownloadRequest(REPO_ID, dest)).state == "done"
    shard = dest / SHARD2
    before = shard.stat()
    data = bytearray(shard.read_bytes())
    data[1000] ^= 0xFF
    shard.write_bytes(bytes(data))

    shallow = verify_folder(dest)
    assert shallow.status == "incomplete" and shallow.problems[0].name == SHARD2 and SHARD2 in shallow.message
    os.utime(shard, ns=(before.st_atime_ns, before.st_mtime_ns))  # a tamper that hides its mtime
    assert verify_folder(dest).status == "complete"
    deep = verify_folder(dest, deep=True)
    assert deep.status == "incomplete" and [(p.name, p.kind) for p in deep.problems] == [(SHARD2, "corrupt")]


def test_corrupted_bytes_from_the_hub_fail_the_download_and_name_the_file(hub: StandInHub, tmp_path: Path) -> None:
    hub.knobs.corrupt.add(SHARD2)

    progress = _run(DownloadRequest(REPO_ID, tmp_path / "m3"))

    assert progress.state == "failed" and SHARD2 in progress.message
    assert not (tmp_path / "m3" / SHARD2).exists()
    assert not (tmp_path / "m3" / MARKER_NAME).exists()


def test_files_already_in_the_folder_are_hash_checked_not_fetched_again(hub: StandInHub, tmp_path: Path) -> None:
    dest = tmp_path / "m3"
    for name in (SHARD1, "config.json"):  # as `hf download --local-dir` would have left them
        hf_hub_download(REPO_ID, name, local_dir=dest, endpoint=hub.endpoint)
    gets_before = {name: len(hub.file_gets(name)) for name in hub.files}

    plan = plan_download(DownloadRequest(REPO_ID, dest))
    progress = _run(DownloadRequest(REPO_ID, dest))

    assert {p.file.name for p in plan.files if p.state == "present"} == {SHARD1, "config.json"}
    assert progress.state == "done", progress.message
    fetched = {name for name in hub.files if len(hub.file_gets(name)) > gets_before[name]}
    assert fetched == set(hub.files) - {SHARD1, "config.json"}


@pytest.mark.parametrize("name", ["../escape.bin", "/tmp/escape.bin", "a/../../escape.bin", "sub\\..\\escape.bin",
                                  MARKER_NAME, ".m3ui-download/listing.json", "new\nline.bin", ""])
def test_hostile_file_names_in_the_listing_are_refused(hub: StandInHub, tmp_path: Path, name: str) -> None:
    hub.knobs.extra_siblings.append({"rfilename": name, "size": 4, "blobId": "0" * 40})
    dest = tmp_path / "inner" / "m3"

    with pytest.raises(UnsafeFileName):
        plan_download(DownloadRequest(REPO_ID, dest))
    progress = _run(DownloadRequest(REPO_ID, dest))

    assert progress.state == "failed" and "outside the model folder" in progress.message
    assert list(tmp_path.rglob("*")) == []
