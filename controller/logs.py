"""Logging to journald with priorities and structured fields, or plain stderr.

Three routes, chosen by `setup()` (docs/operations.md "Logs"):
- systemd-python importable and stderr connected to journald: `journal.JournalHandler` (the
  native protocol), each record with its PRIORITY and the event's fields as journal fields
  (ROUND=, KIND=, DEVICE=, CODE=...), so `journalctl -p warning` and `-o json` work;
- stderr connected to journald but no systemd-python: each line prefixed with `<N>`, the
  sd-daemon(3) priority, which journald strips and records as PRIORITY;
- otherwise (a terminal, a test, a simulation): plain `time LEVEL message key=value` lines.

"Connected to journald" is sd_journal_stream_fd's contract: systemd sets JOURNAL_STREAM to
the device and inode of the stream it gave the service, and we compare it to stderr's.
"""

from __future__ import annotations

import logging
import os
import re
import sys
from typing import Any, TextIO

_NOT_LOADED: Any = object()
# systemd.journal's JournalHandler, imported by the first `setup` that logs to journald (a
# daemon under systemd), not at import: 2 MB and ctypes for every CLI command, test and
# simulated table that never uses it (issue 31). None: not installed (the dev tree without the
# `journal` extra; the image has it).
JournalHandler: Any = _NOT_LOADED
_journal_class: Any = None  # _Journal, made on first use over the loaded JournalHandler

IDENTIFIER = "tablectld"
FIELDS_ATTR = "TABLECTL_FIELDS"  # the record attribute holding an event's fields
# journald's field names: upper-case letters, digits, underscores, not leading "_" (trusted
# fields are journald's own), at most 64 characters (systemd.journal-fields(7)).
_FIELD_NAME = re.compile(r"[A-Z0-9][A-Z0-9_]{0,63}")
# Fields every record carries already; an event's field of the same name would overwrite it.
_RESERVED = frozenset(
    {"MESSAGE", "MESSAGE_ID", "PRIORITY", "SYSLOG_IDENTIFIER", "LOGGER", "THREAD_NAME",
     "PROCESS_NAME", "CODE_FILE", "CODE_LINE", "CODE_FUNC", "TABLECTL_FIELDS"}
)
MAX_FIELD_BYTES = 4096  # one field value; a longer one (outside input) is cut, never dropped


def priority(levelno: int) -> int:
    """syslog(3) priority of a logging level: CRITICAL 2, ERROR 3, WARNING 4, INFO 6, DEBUG 7."""
    if levelno >= logging.CRITICAL:
        return 2
    if levelno >= logging.ERROR:
        return 3
    if levelno >= logging.WARNING:
        return 4
    if levelno >= logging.INFO:
        return 6
    return 7


def journal_fields(fields: dict[str, Any]) -> dict[str, str]:
    """An event's fields as journal fields: names upper-cased and checked (an invalid or
    reserved one gets an F_ prefix rather than being lost), values as bounded text."""
    out: dict[str, str] = {}
    for key, value in fields.items():
        name = re.sub(r"[^A-Z0-9_]", "_", str(key).upper())
        if not _FIELD_NAME.fullmatch(name) or name in _RESERVED:
            name = f"F_{name}"[:64]
        text = value if isinstance(value, str) else repr(value) if value is None else str(value)
        out[name] = text[:MAX_FIELD_BYTES]
    return out


def connected_to_journald(stream: TextIO) -> bool:
    """Whether `stream` is the journald stream systemd gave us ($JOURNAL_STREAM = dev:inode)."""
    env = os.environ.get("JOURNAL_STREAM", "")
    dev, sep, ino = env.partition(":")
    if not sep or not dev.isdigit() or not ino.isdigit():
        return False
    try:
        st = os.fstat(stream.fileno())
    except (OSError, ValueError, AttributeError):  # closed, or not a real file
        return False
    return st.st_dev == int(dev) and st.st_ino == int(ino)


class _Fields(logging.Formatter):
    """The message, then the event's fields as key=value."""

    def format(self, record: logging.LogRecord) -> str:
        base = super().format(record)
        fields = getattr(record, FIELDS_ATTR, None)
        if fields:
            base += " " + " ".join(f"{k}={v}" for k, v in fields.items())
        return base


class _Prefixed(_Fields):
    """sd-daemon(3) lines: `<N>` on every line (a traceback or a message with a newline from
    outside stays at its record's priority: no line can claim another). No timestamp:
    journald stamps each line itself."""

    def format(self, record: logging.LogRecord) -> str:
        prefix = f"<{priority(record.levelno)}>"
        return "\n".join(prefix + line for line in super().format(record).split("\n"))


def _journal_handler() -> Any:
    """JournalHandler (imported now if not yet), or None without systemd-python."""
    global JournalHandler
    if JournalHandler is _NOT_LOADED:
        try:
            from systemd.journal import JournalHandler as loaded  # type: ignore[import-not-found]
        except ImportError:
            loaded = None
        JournalHandler = loaded
    return JournalHandler


def _journal(identifier: str) -> logging.Handler:
    global _journal_class
    base = _journal_handler()
    if _journal_class is None or not issubclass(_journal_class, base):
        class _Journal(base):  # type: ignore[misc,valid-type]
            """JournalHandler sending the record's identity and the event's fields only (the
            stock one sends every attribute of the record, most of them invalid field names)."""

            def emit(self, record: logging.LogRecord) -> None:
                try:
                    fields = journal_fields(getattr(record, FIELDS_ATTR, None) or {})
                    if record.exc_info:
                        fields["EXCEPTION_TEXT"] = logging.Formatter().formatException(
                            record.exc_info
                        )
                    self.send(
                        record.getMessage(),
                        PRIORITY=str(priority(record.levelno)),
                        LOGGER=record.name,
                        CODE_FILE=record.pathname,
                        CODE_LINE=record.lineno,
                        CODE_FUNC=record.funcName,
                        **self._extra,
                        **fields,
                    )
                except Exception:
                    self.handleError(record)

        _journal_class = _Journal
    # Explicit: JournalHandler's default is sys.argv[0] (`vm_table.py`, `-c`, a path).
    return _journal_class(SYSLOG_IDENTIFIER=identifier)  # type: ignore[no-any-return]


def setup(
    level: int = logging.INFO,
    journald: bool | None = None,
    *,
    identifier: str = IDENTIFIER,
    stream: TextIO | None = None,
) -> logging.Logger:
    """Configure the `tablectl` logger (and so `tablectl.*`). journald=None: the route by
    where `stream` (stderr) goes, as the module says; False: plain; True: journald even if
    stderr is not its stream (the JournalHandler, else prefixed lines)."""
    stream = stream or sys.stderr
    log = logging.getLogger("tablectl")
    log.setLevel(level)
    for old in log.handlers:
        old.close()
    log.handlers.clear()
    to_journald = connected_to_journald(stream) if journald is None else journald
    handler: logging.Handler
    if to_journald and _journal_handler() is not None:
        handler = _journal(identifier)
    elif to_journald:
        handler = logging.StreamHandler(stream)
        handler.setFormatter(_Prefixed("%(message)s"))
    else:
        handler = logging.StreamHandler(stream)
        handler.setFormatter(_Fields("%(asctime)s %(levelname)s %(message)s"))
    log.addHandler(handler)
    log.propagate = False
    return log


def route(log: logging.Logger) -> str:
    """Which route `setup` chose: "journal", "prefixed" or "plain" (for the start line)."""
    for handler in log.handlers:
        if JournalHandler not in (None, _NOT_LOADED) and isinstance(handler, JournalHandler):
            return "journal"
        if isinstance(handler.formatter, _Prefixed):
            return "prefixed"
    return "plain"


def event(log: logging.Logger, level: int, message: str, **fields: object) -> None:
    """Log with structured fields (journald: upper-case fields; stderr: key=value)."""
    log.log(level, message, extra={FIELDS_ATTR: fields})
