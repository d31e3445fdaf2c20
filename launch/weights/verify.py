"""Is this folder a complete model? Preflight and the admin panel ask before launching the engine.

A folder is complete only when our marker is there and every file of its listing is present with the right
size and unchanged since its hash was checked; `deep=True` re-hashes every file instead (minutes for
hundreds of GB), which also catches a file altered without touching its size or mtime.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from launch.weights.errors import WeightsError
from launch.weights.folder import DownloadFolder, FileRecord
from launch.weights.listing import RepoFile, RepoListing
from launch.weights.paths import MARKER_NAME, resolve_destination
from launch.weights.transfer import Cancellation, hashes_match
from launch.weights.units import format_bytes

VerifyStatus = Literal["complete", "incomplete", "not_m3ui"]
# missing: absent (partial: an interrupted download of it is kept); wrong_size: present, other size;
# changed: right size, but modified (or never checked) since its hash was verified; corrupt: hash differs.
ProblemKind = Literal["missing", "partial", "wrong_size", "changed", "corrupt"]
_NAMES_SHOWN = 5


@dataclass(frozen=True)
class FileProblem:
    name: str
    kind: ProblemKind


@dataclass(frozen=True)
class VerifyResult:
    status: VerifyStatus
    dest_dir: Path
    repo_id: str | None
    commit: str | None
    files_total: int
    problems: tuple[FileProblem, ...]
    message: str

    @property
    def complete(self) -> bool:
        return self.status == "complete"


def verify_folder(dest_dir: str | Path, *, deep: bool = False) -> VerifyResult:
    """Tell "complete", "incomplete (which files, why)" or "not an m3ui download"; never raises WeightsError."""
    try:
        dest = resolve_destination(dest_dir)
        folder = DownloadFolder(dest)
        marker = folder.read_marker()
        listing = marker.listing if marker else folder.read_listing()
        if listing is None:
            why = (f"has no {MARKER_NAME}: it was not downloaded by m3ui, or its download never started"
                   if dest.is_dir() else "does not exist")
            return _result("not_m3ui", dest, None, (), f"{dest} {why}")
        records = marker.records if marker else folder.records()
        problems = tuple(p for f in listing.files if (p := _check(folder, f, records.get(f.name), deep)))
    except WeightsError as err:
        return _result("incomplete", Path(dest_dir), None, (), str(err))
    if marker is None or problems:
        return _result("incomplete", dest, listing, problems, _incomplete_message(listing, problems))
    return _result("complete", dest, listing, (), f"complete: {listing.repo_id} @ {listing.commit[:10]}, "
                   f"{len(listing.files)} files, {format_bytes(listing.total_bytes)}"
                   + (", every hash re-checked" if deep else ""))


def _check(folder: DownloadFolder, file: RepoFile, record: FileRecord | None, deep: bool) -> FileProblem | None:
    target = folder.target(file)
    if not target.is_file():
        return FileProblem(file.name, "partial" if folder.part_path(file).is_file() else "missing")
    if target.stat().st_size != file.size:
        return FileProblem(file.name, "wrong_size")
    if deep:
        return None if hashes_match(file, target, Cancellation()) else FileProblem(file.name, "corrupt")
    return None if record is not None and record.matches(file, target) else FileProblem(file.name, "changed")


def _incomplete_message(listing: RepoListing, problems: tuple[FileProblem, ...]) -> str:
    if not problems:
        return f"incomplete: every file of {listing.repo_id} is there but the download did not finish; run it again"
    counts: dict[str, int] = {}
    for p in problems:
        counts[p.kind] = counts.get(p.kind, 0) + 1
    kinds = ", ".join(f"{n} {kind.replace('_', ' ')}" for kind, n in counts.items())
    names = ", ".join(p.name for p in problems[:_NAMES_SHOWN]) + (" ..." if len(problems) > _NAMES_SHOWN else "")
    return (f"incomplete: {len(problems)} of {len(listing.files)} files of {listing.repo_id} not ready "
            f"({kinds}): {names}; resume the download to fix them")


def _result(status: VerifyStatus, dest: Path, listing: RepoListing | None, problems: tuple[FileProblem, ...],
            message: str) -> VerifyResult:
    return VerifyResult(status, dest, listing.repo_id if listing else None, listing.commit if listing else None,
                        len(listing.files) if listing else 0, problems, message)
