"""Before anything big moves: what the repo holds, what the folder already has, and whether the disk can take
the rest. Planning writes nothing."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from launch.weights.folder import DownloadFolder, FileRecord
from launch.weights.listing import RepoFile, RepoListing, fetch_listing
from launch.weights.paths import nearest_existing, resolve_destination
from launch.weights.units import format_bytes

DEFAULT_REPO_ID = "MiniMaxAI/MiniMax-M3-MXFP8"
# Left free after the download: room for logs, the engine's caches and the OS.
DEFAULT_DISK_MARGIN_BYTES = 2 * 10**9
DEFAULT_WORKERS = 4  # files fetched at once: one HTTP stream rarely fills a datacenter link
DEFAULT_RETRIES = 3

# verified: hash checked before (recorded, unchanged since); present: right size, hash to check;
# partial: an interrupted download to resume; missing: nothing yet (or the wrong size).
FileState = Literal["verified", "present", "partial", "missing"]


@dataclass(frozen=True)
class DownloadRequest:
    """What to fetch and where. `dest_dir` may be given as a str; it is resolved to an absolute Path."""

    repo_id: str
    dest_dir: Path
    revision: str = "main"
    endpoint: str | None = None  # None: HF_ENDPOINT, else huggingface.co
    token: str | None = field(default=None, repr=False)  # None: huggingface_hub's stored token / HF_TOKEN
    workers: int = DEFAULT_WORKERS
    retries: int = DEFAULT_RETRIES
    disk_margin_bytes: int = DEFAULT_DISK_MARGIN_BYTES

    def __post_init__(self) -> None:
        object.__setattr__(self, "dest_dir", resolve_destination(self.dest_dir))
        if self.workers < 1 or self.retries < 0 or self.disk_margin_bytes < 0:
            raise ValueError("workers must be >= 1, retries and disk_margin_bytes >= 0")


@dataclass(frozen=True)
class PlannedFile:
    file: RepoFile
    state: FileState
    bytes_on_disk: int

    @property
    def remaining_bytes(self) -> int:
        return 0 if self.state in ("verified", "present") else self.file.size - self.bytes_on_disk


@dataclass(frozen=True)
class DownloadPlan:
    request: DownloadRequest
    listing: RepoListing
    files: tuple[PlannedFile, ...]
    free_bytes: int | None  # at the destination (or its nearest existing parent); None when unknown
    refusal: str | None  # why the download must not start; None when it may

    def _bytes(self, *states: FileState) -> int:
        return sum(p.bytes_on_disk for p in self.files if p.state in states)

    @property
    def total_bytes(self) -> int:
        return self.listing.total_bytes

    @property
    def verified_bytes(self) -> int:
        return self._bytes("verified")

    @property
    def present_bytes(self) -> int:
        """Files already there with the right size whose hash the download checks first."""
        return self._bytes("present")

    @property
    def partial_bytes(self) -> int:
        return self._bytes("partial")

    @property
    def remaining_bytes(self) -> int:
        return sum(p.remaining_bytes for p in self.files)

    def summary(self) -> str:
        head = (f"{self.listing.repo_id} @ {self.listing.commit[:10]}: {len(self.files)} files, "
                f"{format_bytes(self.total_bytes)}; {format_bytes(self.verified_bytes)} verified, "
                f"{format_bytes(self.present_bytes)} to check, {format_bytes(self.remaining_bytes)} to download")
        free = "unknown" if self.free_bytes is None else format_bytes(self.free_bytes)
        return f"{head}; {free} free" + (f". Refused: {self.refusal}" if self.refusal else "")


def free_bytes_at(path: Path) -> int:
    """Free bytes on the filesystem that holds (or will hold) `path`."""
    return shutil.disk_usage(nearest_existing(path)).free


def plan_files(folder: DownloadFolder, listing: RepoListing) -> tuple[PlannedFile, ...]:
    records = folder.records()
    return tuple(_plan_file(folder, f, records.get(f.name)) for f in listing.files)


def _plan_file(folder: DownloadFolder, file: RepoFile, record: FileRecord | None) -> PlannedFile:
    target = folder.target(file)
    if target.is_file() and target.stat().st_size == file.size:
        verified = record is not None and record.matches(file, target)
        return PlannedFile(file, "verified" if verified else "present", file.size)
    part = folder.part_path(file)
    part_size = part.stat().st_size if part.is_file() else 0
    if 0 < part_size <= file.size:
        return PlannedFile(file, "partial", part_size)
    return PlannedFile(file, "missing", 0)


def plan_download(request: DownloadRequest, *,
                  free_space: Callable[[Path], int] = free_bytes_at) -> DownloadPlan:
    """Fetch the listing and compare it with the folder; raises WeightsError when the Hub cannot answer."""
    listing = fetch_listing(request.repo_id, request.revision, request.endpoint, request.token)
    files = plan_files(DownloadFolder(request.dest_dir), listing)
    remaining = sum(p.remaining_bytes for p in files)
    where = nearest_existing(request.dest_dir)
    try:
        free = free_space(request.dest_dir)
    except OSError as err:
        return DownloadPlan(request, listing, files, None, f"cannot tell the free space at {where}: {err}")
    return DownloadPlan(request, listing, files, free, _refusal(request, where, remaining, free))


def _refusal(request: DownloadRequest, where: Path, remaining: int, free: int) -> str | None:
    if not os.access(where, os.W_OK):
        return f"cannot write to {where}; choose another folder or fix its permissions"
    needed = remaining + request.disk_margin_bytes
    if remaining and free < needed:
        return (f"not enough disk space at {where}: {format_bytes(remaining)} still to download plus a "
                f"{format_bytes(request.disk_margin_bytes)} margin, but {format_bytes(free)} is free; "
                "free some space or choose another folder")
    return None
