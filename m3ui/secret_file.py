"""Reads a secret (the admin password) from a file, so that it never appears on a command line (`ps`)."""

from __future__ import annotations

import stat
from pathlib import Path

MAX_SECRET_BYTES = 4096


class SecretFileError(ValueError):
    """The file cannot serve as a secret: missing, unreadable, empty or too large."""


def read_secret_file(path: Path) -> tuple[str, str | None]:
    """The secret (its first line) and a warning when others than the owner may read the file."""
    try:
        mode = path.stat().st_mode
        if not stat.S_ISREG(mode):
            raise SecretFileError(f"{path}: not a regular file")
        if path.stat().st_size > MAX_SECRET_BYTES:
            raise SecretFileError(f"{path}: over {MAX_SECRET_BYTES} bytes, not a password file")
        secret = path.read_text(encoding="utf-8").splitlines()[0] if path.stat().st_size else ""
    except (OSError, UnicodeDecodeError) as exc:
        raise SecretFileError(f"{path}: {exc}") from exc
    if not secret.strip():
        raise SecretFileError(f"{path}: the first line is empty")
    loose = mode & (stat.S_IRWXG | stat.S_IRWXO)
    warning = (f"{path} can be read by other users (mode {stat.S_IMODE(mode):o}): chmod 600 {path}" if loose
               else None)
    return secret, warning
