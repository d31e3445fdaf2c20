"""Files that may hold secrets (the engine API key): 0600, written atomically, inside 0700 folders."""

from __future__ import annotations

import os
from pathlib import Path

PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600


def private_dir(path: Path) -> Path:
    """Create `path` (and missing parents) and make it owner-only, tightening a folder that already exists."""
    path.mkdir(parents=True, exist_ok=True, mode=PRIVATE_DIR_MODE)
    os.chmod(path, PRIVATE_DIR_MODE)
    return path


def tighten(data_dir: Path) -> None:
    """Make what an older m3ui left readable owner-only: the files directly in `data_dir` and its profiles
    (0600), the profile and run folders (0700: run logs hold sglang's printed server args, API key included)."""
    private_dir(data_dir)
    runs = data_dir / "runs"
    for path in [*data_dir.iterdir(), *(data_dir / "profiles").glob("*"), *(runs.iterdir() if runs.is_dir() else ())]:
        if path.is_symlink():
            continue
        if path.is_file():
            os.chmod(path, PRIVATE_FILE_MODE)
        elif path.is_dir() and (path.parent == runs or path in (runs, data_dir / "profiles")):
            os.chmod(path, PRIVATE_DIR_MODE)


def write_private(path: Path, text: str) -> None:
    """Write + rename, so a crash never leaves half a file; the file is 0600 from its first byte."""
    private_dir(path.parent)
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, PRIVATE_FILE_MODE)
    os.fchmod(fd, PRIVATE_FILE_MODE)  # an older tmp file keeps its mode through O_CREAT
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(text)
    os.replace(tmp, path)


def open_private_append(path: Path) -> int:
    """A 0600 file descriptor appending to `path` (the engine log: sglang prints its server args, key included)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, PRIVATE_FILE_MODE)
    os.fchmod(fd, PRIVATE_FILE_MODE)
    return fd
