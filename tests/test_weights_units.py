"""The pure parts of the weights feature: safe paths, hashes, rate and ETA, folder verification edge cases."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from huggingface_hub.utils.sha import git_hash

from launch.weights import DestinationError, DownloadProgress, DownloadRequest, RepoFile, UnsafeFileName, verify_folder
from launch.weights.paths import file_path, safe_repo_path
from launch.weights.progress import RateMeter
from launch.weights.units import format_bytes, format_duration


@pytest.mark.parametrize("name", ["config.json", "model-00001-of-00062.safetensors", "tokenizer/vocab.json",
                                  ".gitattributes", "a..b/c.json"])
def test_ordinary_repo_names_are_accepted(name: str) -> None:
    assert str(safe_repo_path(name)) == name


@pytest.mark.parametrize("name", ["", "/etc/passwd", "../x", "a/../../x", "a//b", "./x", "a\\b", "x\0y",
                                  ".m3ui-download/parts/p.part", ".m3ui-download-complete.json"])
def test_names_that_leave_the_folder_or_touch_our_bookkeeping_are_refused(name: str) -> None:
    with pytest.raises(UnsafeFileName):
        safe_repo_path(name)


def test_a_symlink_inside_the_folder_cannot_lead_writes_outside(tmp_path: Path) -> None:
    (tmp_path / "outside").mkdir()
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "sub").symlink_to(tmp_path / "outside")
    with pytest.raises(UnsafeFileName, match="symlink"):
        file_path(tmp_path / "model", "sub/weights.safetensors")


def test_destination_is_made_absolute_and_must_be_a_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert DownloadRequest("o/r", "models/m3").dest_dir == tmp_path / "models" / "m3"  # type: ignore[arg-type]
    (tmp_path / "a-file").write_text("x")
    with pytest.raises(DestinationError, match="not a folder"):
        DownloadRequest("o/r", tmp_path / "a-file")
    with pytest.raises(DestinationError):
        DownloadRequest("o/r", " ")  # type: ignore[arg-type]
    with pytest.raises(DestinationError, match="no such user"):
        DownloadRequest("o/r", "~no-such-user-m3ui/m3")  # type: ignore[arg-type]


def test_file_hashes_follow_git_for_regular_files_and_sha256_for_lfs() -> None:
    data = b'{"model_type": "minimax_m3"}\n'
    regular = RepoFile("config.json", len(data), None, git_hash(data))
    lfs = RepoFile("w.safetensors", len(data), hashlib.sha256(data).hexdigest(), "0" * 40)
    for file in (regular, lfs):
        hasher = file.new_hasher()
        hasher.update(data)
        assert file.digest.endswith(":" + hasher.hexdigest())


def test_rate_is_measured_over_the_recent_window_and_falls_to_zero_when_stalled() -> None:
    meter = RateMeter(window_s=10)
    for i in range(101):  # 1 MB/s for 20 s in 0.2 s steps
        meter.add(i * 0.2, i * 200_000)
    assert meter.rate(20.0) == pytest.approx(1_000_000, rel=0.05)
    meter.add(31.0, 100 * 200_000)  # nothing more for 11 s
    assert meter.rate(31.0) == 0.0


def test_progress_summary_reads_like_a_progress_bar_label() -> None:
    progress = DownloadProgress("downloading", 1_200_000_000, 230_000_000_000, 85e6, 2690.0, ("a",), 1, 60, "")
    assert progress.summary() == "1.2 GB of 230.0 GB (0.5%) · 85.0 MB/s · 44 min 50 s left"
    assert (format_bytes(999), format_bytes(1000), format_duration(7260)) == ("999 B", "1.0 kB", "2 h 01 min")


def test_verify_tells_a_plain_or_missing_folder_from_an_m3ui_download(tmp_path: Path) -> None:
    assert verify_folder(tmp_path).status == "not_m3ui"
    assert "does not exist" in verify_folder(tmp_path / "nope").message


@pytest.mark.parametrize("listing, expected", [
    ("{not json", "damaged"),
    ('{"repo_id": "o/r", "revision": "main", "commit": "c", "files": '
     '[{"name": "../../evil", "size": 1, "sha256": null, "git_oid": "0"}]}', "outside the model folder"),
])
def test_a_tampered_bookkeeping_file_is_reported_not_raised(tmp_path: Path, listing: str, expected: str) -> None:
    (tmp_path / ".m3ui-download").mkdir()
    (tmp_path / ".m3ui-download" / "listing.json").write_text(listing)
    result = verify_folder(tmp_path)
    assert result.status == "incomplete" and expected in result.message
