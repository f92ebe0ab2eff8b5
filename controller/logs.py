"""Logging: structured fields to journald through systemd-python when present, stderr otherwise."""

from __future__ import annotations

import logging
import sys

try:
    from systemd.journal import JournalHandler  # type: ignore[import-not-found]
except ImportError:  # pragma: no cover - depends on the machine
    JournalHandler = None


class _Fields(logging.Formatter):
    """stderr format: the message, then the structured fields as key=value."""

    def format(self, record: logging.LogRecord) -> str:
        base = super().format(record)
        fields = getattr(record, "TABLECTL_FIELDS", None)
        if fields:
            base += " " + " ".join(f"{k}={v}" for k, v in fields.items())
        return base


def setup(level: int = logging.INFO, journald: bool | None = None) -> logging.Logger:
    """Configure the `tablectl` logger once. journald when available and under systemd."""
    log = logging.getLogger("tablectl")
    log.setLevel(level)
    log.handlers.clear()
    use_journal = JournalHandler is not None if journald is None else journald
    if use_journal and JournalHandler is not None:
        log.addHandler(JournalHandler(SYSLOG_IDENTIFIER="tablectld"))
    else:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(_Fields("%(asctime)s %(levelname)s %(message)s"))
        log.addHandler(handler)
    log.propagate = False
    return log


def event(log: logging.Logger, level: int, message: str, **fields: object) -> None:
    """Log with structured fields (journald: upper-case fields; stderr: key=value)."""
    extra = {k.upper(): v for k, v in fields.items()}
    extra["TABLECTL_FIELDS"] = fields  # a valid journald field name; stderr prints it
    log.log(level, message, extra=extra)
