"""Text, code, Markdown, CSV/JSON and logs: UTF-8 only, decoded strictly (a wrong guess at an encoding would put
mojibake in the model's context without anyone noticing)."""

from __future__ import annotations

import codecs

from m3ui.documents.refusal import DocumentRefused

_UTF16_BOMS = (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)


def decode_text(data: bytes) -> str:
    """UTF-8 bytes (a BOM allowed) -> str; anything else is refused with where it went wrong."""
    if data.startswith(_UTF16_BOMS):
        raise DocumentRefused("UTF-16 text: save it as UTF-8 and attach it again")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DocumentRefused(f"not UTF-8 text (byte {exc.start:,} is 0x{data[exc.start]:02x}): "
                              "save it as UTF-8 and attach it again") from None
