"""How the web server stops on Ctrl-C or SIGTERM.

uvicorn first waits for the responses still open, and only then hands the signal on to the handler that stops
the engine (app.py). An answer still streaming, or a page's open event stream, kept that wait going
indefinitely: the app and its engine stayed up. Past GRACEFUL_SHUTDOWN_S uvicorn cancels what is left, and each
cancelled response is expected then, not an error worth a traceback in the log.
"""

from __future__ import annotations

import asyncio
import logging

GRACEFUL_SHUTDOWN_S = 3.0
SERVER_LOGGER = "uvicorn.error"  # where uvicorn logs a response that ended with an exception


class _CancelledResponses(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.exc_info and isinstance(record.exc_info[1], asyncio.CancelledError))


def quiet_cancelled_responses(logger: logging.Logger | None = None) -> None:
    """Keep the responses cut at shutdown out of the server's log (idempotent)."""
    logger = logger or logging.getLogger(SERVER_LOGGER)
    if not any(isinstance(f, _CancelledResponses) for f in logger.filters):
        logger.addFilter(_CancelledResponses())
