"""Where a download may write: the destination folder, and repo file names made safe inside it.

File names come from the Hub's listing, which we do not trust: a name that climbs out of the folder
(`..`, absolute, backslashes), hides control characters or touches our own bookkeeping is refused
before anything is written.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from launch.weights.errors import DestinationError, UnsafeFileName

# Our bookkeeping inside the model folder: in-progress state, and the marker written only after verification.
STATE_DIR_NAME = ".m3ui-download"
MARKER_NAME = ".m3ui-download-complete.json"
_RESERVED = frozenset({STATE_DIR_NAME, MARKER_NAME})


def resolve_destination(dest_dir: str | Path) -> Path:
    """The destination as an absolute path (`~` expanded, relative paths taken from the current folder)."""
    text = str(dest_dir).strip()
    if not text:
        raise DestinationError("no destination folder given")
    try:
        path = Path(text).expanduser().resolve()
    except RuntimeError:  # `~nosuchuser`
        raise DestinationError(f"{text}: no such user's home folder") from None
    if path.exists() and not path.is_dir():
        raise DestinationError(f"{path} exists and is not a folder")
    return path


def safe_repo_path(name: str) -> PurePosixPath:
    """`name` from a repo listing as a relative path that stays inside the folder, or UnsafeFileName."""
    parts = name.split("/")
    hostile = (
        not name
        or name.startswith("/")
        or "\\" in name
        or any(ord(ch) < 32 for ch in name)
        or any(part in ("", ".", "..") for part in parts)
        or parts[0] in _RESERVED
    )
    if hostile:
        raise UnsafeFileName(f"the repo listing names a file {name!r} that would write outside the model folder; "
                             "refusing to download from it")
    return PurePosixPath(name)


def file_path(dest: Path, name: str) -> Path:
    """Where repo file `name` lives under `dest`; a symlink inside the folder must not lead out of it either."""
    path = dest.joinpath(*safe_repo_path(name).parts)
    if not path.resolve().is_relative_to(dest.resolve()):
        raise UnsafeFileName(f"{path} leads outside {dest} (through a symlink); refusing to write there")
    return path


def nearest_existing(path: Path) -> Path:
    """`path` or its closest existing parent: where free space and write access are asked for a folder to be."""
    while not path.exists() and path != path.parent:
        path = path.parent
    return path
