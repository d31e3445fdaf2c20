"""A .zip of a source tree as one text: each kept file under a header with its path.

Members are chosen by include/exclude patterns, then streamed one chunk at a time: the declared sizes and
ratios are checked before inflating, and the bytes actually inflated are counted against the cap as they come
(zipfile stops a member at its declared size, and its CRC check then fails: a directory that lies about sizes
gets that member skipped as unreadable, never inflated past them). Binary and non-UTF-8 members are skipped
and listed."""

from __future__ import annotations

import zipfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import IO

from m3ui.documents.limits import Limits, human_size
from m3ui.documents.refusal import DocumentRefused
from m3ui.documents.sniff import Kind, sniff
from m3ui.documents.text_file import decode_text

# Folders and files a source tree carries that are never worth the model's context.
DEFAULT_EXCLUDE = (".git/*", "*/.git/*", "node_modules/*", "*/node_modules/*", "__pycache__/*", "*/__pycache__/*",
                   ".venv/*", "*/.venv/*", "*.pyc", "*.lock", "*.min.js", "*.map")


@dataclass(frozen=True)
class TreePatterns:
    include: tuple[str, ...] = ("*",)
    exclude: tuple[str, ...] = DEFAULT_EXCLUDE

    @classmethod
    def parse(cls, include: str, exclude: str) -> TreePatterns:
        """Comma- or space-separated globs, as typed; empty include means everything."""
        def split(text: str) -> tuple[str, ...]:
            return tuple(p for p in text.replace(",", " ").split() if p)
        return cls(split(include) or ("*",), DEFAULT_EXCLUDE + split(exclude))

    def keeps(self, path: str) -> bool:
        name = path.rsplit("/", 1)[-1]
        def hit(patterns: Iterable[str]) -> bool:
            return any(fnmatchcase(path, p) or fnmatchcase(name, p) for p in patterns)
        return hit(self.include) and not hit(self.exclude)


@dataclass
class TreeText:
    text: str
    files: int
    skipped: list[str] = field(default_factory=list)  # "path: why", for the chip's note


def _inflate(archive: zipfile.ZipFile, info: zipfile.ZipInfo, budget: int, limits: Limits) -> bytes:
    """The member's bytes, or DocumentRefused once more than `budget` bytes (or its declared size) came out."""
    cap = min(budget, info.file_size)
    parts, total = [], 0
    with archive.open(info) as member:
        while chunk := member.read(limits.chunk_bytes):
            total += len(chunk)
            if total > cap:
                raise DocumentRefused(f"zip bomb: {info.filename} inflates past its declared "
                                      f"{human_size(info.file_size)} or the {human_size(limits.max_zip_inflated)} cap")
            parts.append(chunk)
    return b"".join(parts)


def _check_directory(members: list[zipfile.ZipInfo], limits: Limits) -> None:
    declared = sum(m.file_size for m in members)
    if declared > limits.max_zip_inflated:
        raise DocumentRefused(f"zip bomb or too large: its files inflate to {human_size(declared)}; "
                              f"the cap is {human_size(limits.max_zip_inflated)} (narrow it with include patterns)")
    for m in members:
        if m.file_size > limits.max_zip_ratio * max(m.compress_size, 1) and m.file_size > limits.chunk_bytes:
            raise DocumentRefused(f"zip bomb: {m.filename} inflates {m.file_size // max(m.compress_size, 1):,}x")


def zip_text(source: IO[bytes], patterns: TreePatterns, limits: Limits) -> TreeText:
    try:
        archive = zipfile.ZipFile(source)
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise DocumentRefused(f"not a readable zip: {exc}") from None
    with archive:
        listed = archive.infolist()
        if len(listed) > limits.max_zip_members:  # before filtering: the directory itself is the cost
            raise DocumentRefused(f"the zip lists {len(listed):,} entries; at most {limits.max_zip_members:,}")
        members = [m for m in listed if not m.is_dir() and patterns.keeps(m.filename)]
        if len(members) > limits.max_zip_files:
            raise DocumentRefused(f"{len(members):,} files match the patterns; at most {limits.max_zip_files:,} "
                                  "(narrow them with include/exclude patterns)")
        _check_directory(members, limits)
        parts, skipped, budget = [], [], limits.max_zip_inflated
        for info in members:
            if info.flag_bits & 0x1:
                raise DocumentRefused(f"encrypted zip member {info.filename}: unzip it with its password first")
            try:
                data = _inflate(archive, info, budget, limits)
            except (zipfile.BadZipFile, NotImplementedError, EOFError, OSError) as exc:  # bad CRC, method
                skipped.append(f"{info.filename}: unreadable ({exc})")
                continue
            budget -= len(data)
            if sniff(data) is not Kind.TEXT:
                skipped.append(f"{info.filename}: not text")
                continue
            try:
                parts.append(f"--- {info.filename} ---\n{decode_text(data)}")
            except DocumentRefused as exc:
                skipped.append(f"{info.filename}: {exc}")
    if not parts:
        raise DocumentRefused("no text files in the zip match the patterns"
                              + (f"; skipped {len(skipped)}: " + "; ".join(skipped[:3]) if skipped else ""))
    return TreeText("\n\n".join(parts), len(parts), skipped)
