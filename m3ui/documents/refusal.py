"""Why a file was not attached, in words for its chip."""

from __future__ import annotations


class DocumentRefused(ValueError):
    """The file cannot be attached; str(exc) is the message its chip shows."""
