"""Python logging into lens's log records, correlated with the active span (its trace and span
ids). Records flow when telemetry exports logs (``logs_enabled`` / ``<PREFIX>_LOGS_ENABLED=1``
on an exporting rank)."""

from __future__ import annotations

import logging
from typing import Any

from . import _lens

__all__ = ["LensLoggingHandler", "setup_logging_bridge"]


class LensLoggingHandler(logging.Handler):
    """A logging.Handler whose records become lens log records (severity, body, logger name,
    code location, and the current span's ids). emit() never raises."""

    def __init__(self, level: int = logging.INFO) -> None:
        super().__init__(level)
        _lens.setup_logging_bridge(level)

    def setLevel(self, level: Any) -> None:  # noqa: N802 (logging's name)
        super().setLevel(level)
        _lens.setup_logging_bridge(self.level)

    def emit(self, record: logging.LogRecord) -> None:
        try:
            _lens.emit_log(record.levelno, self.format(record), record.name, record.pathname,
                           record.lineno, record.funcName or "")
        except Exception:  # never into the caller's code
            pass


_bridges: dict = {}


def setup_logging_bridge(logger_name: str = "", level: int = logging.INFO) -> None:
    """Adds a LensLoggingHandler at `level` to the logger `logger_name` (the root logger for
    ""), once per logger (a second call sets the handler's level). The logger's own level is
    left as the application set it: records it lets through at `level` and above are bridged.
    Does nothing when no log pipeline exports; never raises."""
    try:
        if not _lens.setup_logging_bridge(level):
            return
        logger = logging.getLogger(logger_name)
        handler = _bridges.get(logger_name)
        if handler is None or handler not in logger.handlers:
            handler = LensLoggingHandler(level)
            _bridges[logger_name] = handler
            logger.addHandler(handler)
        else:
            handler.setLevel(level)
    except Exception:
        logging.getLogger(__name__).debug("lens: the logging bridge was not set up",
                                          exc_info=True)
