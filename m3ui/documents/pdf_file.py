"""A PDF's text through pypdf, page by page, with the page count in the result."""

from __future__ import annotations

import io
import logging

from pypdf import PdfReader
from pypdf.errors import PdfReadError

from m3ui.documents.refusal import DocumentRefused

# pypdf logs every recoverable flaw of a damaged file; the chip says what matters.
logging.getLogger("pypdf").setLevel(logging.ERROR)


def pdf_text(data: bytes) -> str:
    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            raise DocumentRefused("encrypted PDF: remove its password and attach it again")
        pages = [page.extract_text() or "" for page in reader.pages]
    except DocumentRefused:
        raise
    except (PdfReadError, ValueError, KeyError, TypeError, OSError, RecursionError) as exc:
        raise DocumentRefused(f"unreadable PDF: {exc}") from None
    text = "\n\n".join(f"[page {i}]\n{body.strip()}" for i, body in enumerate(pages, 1))
    if not any(body.strip() for body in pages):
        raise DocumentRefused(f"the PDF's {len(pages)} page(s) hold no text (a scan needs OCR first)")
    return text
