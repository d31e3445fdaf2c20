"""Reading uploads: each file streamed from where the web server stored it, under the caps of `Limits`.

The size is the file's own on disk (a 2 GB upload is refused before a byte of it is read), the kind is sniffed
from its first bytes, and every failure becomes a refused Attachment whose error its chip shows."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import BinaryIO

from m3ui.documents.attachment import Attachment, refused
from m3ui.documents.limits import DEFAULT_LIMITS, Limits, human_size
from m3ui.documents.pdf_file import pdf_text
from m3ui.documents.refusal import DocumentRefused
from m3ui.documents.sniff import Kind, sniff
from m3ui.documents.text_file import decode_text
from m3ui.documents.token_count import TokenCounter
from m3ui.documents.zip_tree import TreePatterns, zip_text


def _bounded_read(stream: BinaryIO, limit: int, chunk: int) -> bytes:
    parts, total = [], 0
    while data := stream.read(chunk):
        total += len(data)
        if total > limit:  # the file grew since it was measured, or has no size to measure
            raise DocumentRefused(f"larger than the {human_size(limit)} cap for one file")
        parts.append(data)
    return b"".join(parts)


def read_upload(path: str | Path, name: str, counter: TokenCounter, *, limits: Limits = DEFAULT_LIMITS,
                patterns: TreePatterns | None = None) -> Attachment:
    """One stored upload -> an Attachment (refused ones carry their reason); never raises for bad content."""
    name = os.path.basename(name or str(path))[:200] or "file"
    size = 0
    try:
        with open(path, "rb") as stream:
            size = os.fstat(stream.fileno()).st_size
            if size > limits.max_file_bytes:
                raise DocumentRefused(f"{human_size(size)}: larger than the {human_size(limits.max_file_bytes)} "
                                      "cap for one file")
            kind = sniff(stream.read(8192))
            stream.seek(0)
            if kind is Kind.BINARY:
                raise DocumentRefused("a binary file: attach text, code, Markdown, CSV/JSON, logs, PDF or a .zip")
            note = ""
            if kind is Kind.ZIP:
                tree = zip_text(stream, patterns or TreePatterns(), limits)
                text = tree.text
                note = f"{tree.files} files" + (f"; skipped {len(tree.skipped)}: " + "; ".join(tree.skipped[:5])
                                                 + (" …" if len(tree.skipped) > 5 else "") if tree.skipped else "")
            else:
                data = _bounded_read(stream, limits.max_file_bytes, limits.chunk_bytes)
                text = pdf_text(data) if kind is Kind.PDF else decode_text(data)
    except DocumentRefused as exc:
        return refused(name, size, str(exc))
    except OSError as exc:
        return refused(name, size, f"cannot read the upload: {exc.strerror or exc}")
    return Attachment(name=name, size=size, kind=kind.value, text=text, tokens=counter.count(text), note=note)


def read_uploads(paths: Sequence[tuple[str | Path, str]], counter: TokenCounter, *, limits: Limits = DEFAULT_LIMITS,
                 patterns: TreePatterns | None = None, already: int = 0) -> list[Attachment]:
    """Several uploads for one message (`already` attached before): past `limits.max_files`, one refused entry
    says how many were not read, so nothing is dropped without a word."""
    room = max(0, limits.max_files - already)
    out = [read_upload(path, name, counter, limits=limits, patterns=patterns) for path, name in paths[:room]]
    if len(paths) > room:
        extra = len(paths) - room
        out.append(refused(f"{extra} more file{'s' * (extra != 1)}", 0,
                           f"not read: at most {limits.max_files} files per message ({len(paths) + already} given)"))
    return out
