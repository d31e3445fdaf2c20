"""sglang's log line format, so that a supervisor reading the sim's output reads what the real engine writes.

sglang logs to stderr as `[%Y-%m-%d %H:%M:%S] message` (utils/common.py configure_logger); scheduler
processes add their rank (` TP3`) when --tp-size > 1 (scheduler.py run_scheduler_process). kt-kernel's
per-layer lines are plain `print`s on stdout. Uvicorn's own lines go through sglang's
set_uvicorn_logging_configs format: `[time] INFO:     message`.
"""

from __future__ import annotations

import copy
import logging
import sys
from typing import Any

DATE_FORMAT = "%Y-%m-%d %H:%M:%S"
_LOGGER_NAME = "sglang"
_MODULE_LOGGERS = "launch.sim"  # the sim's own modules (the expert recorder) log in the same format


class _RankFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        record.rank_prefix = getattr(record, "rank_prefix", "")
        return super().format(record)


def configure_engine_logging() -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_RankFormatter("[%(asctime)s%(rank_prefix)s] %(message)s", DATE_FORMAT))
    for name in (_LOGGER_NAME, _MODULE_LOGGERS):
        logger = logging.getLogger(name)
        logger.handlers[:] = [handler]
        logger.setLevel(logging.INFO)
        logger.propagate = False


class EngineLog:
    """The engine's log; `rank` is the TP rank of a scheduler line (None: the main process)."""

    def __init__(self, tp_size: int) -> None:
        self._tp_size = tp_size
        self._logger = logging.getLogger(_LOGGER_NAME)

    def _extra(self, rank: int | None) -> dict[str, str]:
        return {"rank_prefix": f" TP{rank}" if rank is not None and self._tp_size > 1 else ""}

    def info(self, message: str, rank: int | None = None) -> None:
        self._logger.info(message, extra=self._extra(rank))

    def warning(self, message: str, rank: int | None = None) -> None:
        self._logger.warning(message, extra=self._extra(rank))

    def error(self, message: str, rank: int | None = None) -> None:
        self._logger.error(message, extra=self._extra(rank))

    def each_rank(self, message: str) -> None:
        """A line every TP rank's scheduler writes (the real log repeats it once per rank)."""
        for rank in range(self._tp_size):
            self.info(message, rank)

    @staticmethod
    def stdout(line: str) -> None:
        print(line, flush=True)


def uvicorn_log_config() -> dict[str, Any]:
    """uvicorn's LOGGING_CONFIG with sglang's formats (set_uvicorn_logging_configs)."""
    from uvicorn.config import LOGGING_CONFIG

    config = copy.deepcopy(LOGGING_CONFIG)
    config["formatters"]["default"]["fmt"] = "[%(asctime)s] %(levelprefix)s %(message)s"
    config["formatters"]["default"]["datefmt"] = DATE_FORMAT
    config["formatters"]["default"]["use_colors"] = False
    config["formatters"]["access"]["fmt"] = (
        '[%(asctime)s] %(levelprefix)s %(client_addr)s - "%(request_line)s" %(status_code)s')
    config["formatters"]["access"]["datefmt"] = DATE_FORMAT
    config["formatters"]["access"]["use_colors"] = False
    return config
