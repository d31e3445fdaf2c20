"""The model folder's bookkeeping, so a half-done download says what it lacks and a done one proves it.

Inside the destination:
  .m3ui-download/listing.json      the listing being fetched
  .m3ui-download/verified.json     files whose hash was checked: name -> size, mtime_ns, digest
  .m3ui-download/parts/*.part      partial files, named by their expected hash (a new commit never resumes
                                   an old file's bytes)
  .m3ui-download-complete.json     the marker, written only after every file is verified; it carries the
                                   listing and the records, and the state folder is then removed.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, TypeVar

from launch.weights.errors import CorruptDownload, DestinationError
from launch.weights.listing import RepoFile, RepoListing
from launch.weights.paths import MARKER_NAME, STATE_DIR_NAME, file_path

T = TypeVar("T")


@dataclass(frozen=True)
class FileRecord:
    """A file whose hash we checked, and its size and mtime then: unchanged since means still verified."""

    size: int
    mtime_ns: int
    digest: str

    def matches(self, file: RepoFile, path: Path) -> bool:
        try:
            st = path.stat()
        except OSError:
            return False
        return (self.digest, self.size, self.mtime_ns) == (file.digest, st.st_size, st.st_mtime_ns) \
            and st.st_size == file.size


@dataclass(frozen=True)
class Marker:
    listing: RepoListing
    records: dict[str, FileRecord]
    completed_at: float


class DownloadFolder:
    def __init__(self, dest: Path) -> None:
        self.dest = dest
        self.state_dir = dest / STATE_DIR_NAME
        self.parts_dir = self.state_dir / "parts"
        self.marker_path = dest / MARKER_NAME
        self._listing_path = self.state_dir / "listing.json"
        self._records_path = self.state_dir / "verified.json"
        self._lock = threading.Lock()

    def target(self, file: RepoFile) -> Path:
        return file_path(self.dest, file.name)

    def part_path(self, file: RepoFile) -> Path:
        # The name's hash keeps two files with identical content from sharing one partial file.
        name_key = hashlib.sha1(file.name.encode(), usedforsecurity=False).hexdigest()[:12]
        return self.parts_dir / f"{file.digest.split(':', 1)[1]}-{name_key}.part"

    def read_marker(self) -> Marker | None:
        return _load(self.marker_path, lambda data: Marker(
            RepoListing.from_json(data), _records(data["records"]), float(data["completed_at"])))

    def read_listing(self) -> RepoListing | None:
        return _load(self._listing_path, RepoListing.from_json)

    def records(self) -> dict[str, FileRecord]:
        """Verified files: the marker's when the folder was completed, else the in-progress ones."""
        marker = self.read_marker()
        if marker is not None:
            return dict(marker.records)
        return _load(self._records_path, _records) or {}

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        """Hold the folder for one writer; a second download into it is refused rather than interleaved."""
        self.state_dir.mkdir(parents=True, exist_ok=True)
        with (self.state_dir / "lock").open("w") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise DestinationError(f"another download is writing to {self.dest}; wait for it or cancel it") \
                    from None
            yield

    def prepare(self, listing: RepoListing) -> None:
        """Start (or resume) fetching `listing`: the folder is no longer complete until `complete` says so."""
        records = self.records()
        self.parts_dir.mkdir(parents=True, exist_ok=True)
        _write_json(self._records_path, {name: asdict(rec) for name, rec in records.items()})
        _write_json(self._listing_path, listing.to_json())
        self.marker_path.unlink(missing_ok=True)
        wanted = {self.part_path(f).name for f in listing.files}
        for stale in self.parts_dir.glob("*.part"):
            if stale.name not in wanted:
                stale.unlink()

    def record(self, file: RepoFile) -> None:
        """Note that the file at its target now has the listing's hash."""
        st = self.target(file).stat()
        with self._lock:
            records = _load(self._records_path, _records) or {}
            records[file.name] = FileRecord(st.st_size, st.st_mtime_ns, file.digest)
            _write_json(self._records_path, {name: asdict(rec) for name, rec in records.items()})

    def install(self, file: RepoFile, part: Path) -> None:
        """Move a verified partial file to its place (same filesystem: an atomic rename) and record it."""
        target = self.target(file)
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(part, target)
        self.record(file)

    def complete(self, listing: RepoListing) -> None:
        """Check every file against its record, write the marker (listing + records), drop the in-progress state."""
        records = self.records()
        unverified = [f.name for f in listing.files
                      if f.name not in records or not records[f.name].matches(f, self.target(f))]
        if unverified:
            raise CorruptDownload(f"not verified after download: {', '.join(unverified)}; start the download again")
        data = {**listing.to_json(), "completed_at": time.time(),
                "records": {f.name: asdict(records[f.name]) for f in listing.files}}
        _write_json(self.marker_path, data)
        shutil.rmtree(self.state_dir, ignore_errors=True)


def _records(data: dict[str, Any]) -> dict[str, FileRecord]:
    return {str(name): FileRecord(int(rec["size"]), int(rec["mtime_ns"]), str(rec["digest"]))
            for name, rec in data.items()}


def _load(path: Path, parse: Callable[[dict[str, Any]], T]) -> T | None:
    """`parse` of the JSON object in `path`; None when there is no such file, DestinationError when damaged."""
    try:
        return parse(json.loads(path.read_text(encoding="utf-8")))
    except FileNotFoundError:
        return None
    except (ValueError, KeyError, TypeError, AttributeError) as err:
        raise DestinationError(f"{path} is damaged ({type(err).__name__}: {err}); delete it and download again") \
            from None


def _write_json(path: Path, data: dict[str, Any]) -> None:
    """Write through a temporary file and a rename, so a crash never leaves half a JSON file."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=1), encoding="utf-8")
    os.replace(tmp, path)
