"""The caps every upload is read under. Sizes are measured from the bytes themselves, never from what the browser
said; each cap keeps memory bounded whatever the file claims to be."""

from __future__ import annotations

from dataclasses import dataclass

MIB = 1024 * 1024


@dataclass(frozen=True)
class Limits:
    max_file_bytes: int = 64 * MIB  # one upload as stored (a 2 GB file is refused from its size on disk)
    max_files: int = 100  # attachments read for one message; more are refused with one message
    max_zip_members: int = 20_000  # entries listed in a zip's directory
    max_zip_files: int = 2_000  # files kept from one zip after the include/exclude patterns
    max_zip_inflated: int = 64 * MIB  # bytes inflated from one zip, counted while streaming
    max_zip_ratio: int = 200  # a member inflating more than this per compressed byte is a bomb
    chunk_bytes: int = 1 * MIB


DEFAULT_LIMITS = Limits()


def human_size(size: int) -> str:
    """1536 -> '1.5 KB': the size shown on a chip."""
    value = float(size)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{int(value)} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")
