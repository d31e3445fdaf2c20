"""What a file is, from its first bytes (the name and the browser's MIME type are only hints)."""

from __future__ import annotations

from enum import Enum

SNIFF_BYTES = 8192
_PDF = b"%PDF-"
_ZIP = (b"PK\x03\x04", b"PK\x05\x06")  # a zip with members; an empty zip
_UTF16 = (b"\xff\xfe", b"\xfe\xff")
# Control bytes that never occur in text (tab, newline, carriage return and form feed do).
_CONTROL = bytes(range(0, 32)).translate(None, b"\t\n\r\f\x1b")


class Kind(Enum):
    TEXT = "text"
    PDF = "pdf"
    ZIP = "zip"
    BINARY = "binary"


def sniff(head: bytes) -> Kind:
    """The kind of a file whose first bytes are `head` (at least SNIFF_BYTES of it, or the whole file)."""
    if head.startswith(_PDF):
        return Kind.PDF
    if head.startswith(_ZIP):
        return Kind.ZIP
    if head.startswith(_UTF16):  # text, but not UTF-8: decode_text says so rather than "binary"
        return Kind.TEXT
    sample = head[:SNIFF_BYTES]
    if b"\x00" in sample:
        return Kind.BINARY
    controls = sum(sample.count(bytes([b])) for b in _CONTROL) if sample else 0
    return Kind.BINARY if controls > len(sample) // 100 else Kind.TEXT
