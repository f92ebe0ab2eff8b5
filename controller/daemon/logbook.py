"""What the daemon remembers of its own log lines, for a technician:

- `LogRing`: the recent lines (any level), in memory, for `tablectl logs` when there is no
  journald to ask (a bench, a simulation, a test);
- `ErrorHistory`: every warning or worse, with its error code (controller/codes.py), appended
  to `errors.jsonl` in the state directory and kept for ERROR_DAYS, for `tablectl errors`
  ("what went wrong on this table this week"), across restarts.

Both are logging handlers on the daemon's logger; neither may ever raise into the code that
logged (a failed write is counted and shows in `tablectl status`).
"""

from __future__ import annotations

import json
import logging
from collections import deque
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from controller.codes import OTHER
from controller.errorlog import ERROR_FILE, ERROR_LINES, matches, trim
from controller.logs import FIELDS_ATTR

RING_LINES = 2000  # recent log lines kept in memory
MAX_MESSAGE = 500  # characters of a message kept
DRIVERS = "tablectl.devices"  # the device drivers' logger
DRIVER_CODE = "E204"


def line_of(record: logging.LogRecord) -> dict[str, Any]:
    """A log record as the logbook keeps it: when, level, code, message, the event's fields."""
    fields = getattr(record, FIELDS_ATTR, None) or {}
    kept = {str(k): v for k, v in fields.items()
            if isinstance(v, str | int | float | bool) and k != "code"}
    code = fields.get("code")
    if record.name.startswith(DRIVERS):
        # The drivers' lines say "<device>: ..." (devices/ does not know our fields).
        name = record.getMessage().partition(":")[0]
        if name.isidentifier():
            kept.setdefault("device", name)
        code = code or DRIVER_CODE
    out: dict[str, Any] = {
        "utc": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds")
        .replace("+00:00", "Z"),
        "level": record.levelname.lower(),
        "message": record.getMessage()[:MAX_MESSAGE],
        "fields": kept,
    }
    if record.levelno >= logging.WARNING:
        out["code"] = str(code or OTHER)
    return out


class LogRing(logging.Handler):
    def __init__(self, size: int = RING_LINES) -> None:
        super().__init__(logging.DEBUG)
        self.lines: deque[dict[str, Any]] = deque(maxlen=size)
        self.count = 0  # lines ever kept: each line's `seq`, the cursor of `tablectl logs -f`

    def emit(self, record: logging.LogRecord) -> None:
        try:
            line = line_of(record)
            self.count += 1
            self.lines.append({**line, "seq": self.count})
        except Exception:  # never into the caller
            self.handleError(record)

    def select(self, level: str | None = None, device: str | None = None,
               round_: int | None = None, n: int = 100, *, after: int = 0,
               since: str | None = None) -> list[dict[str, Any]]:
        """The last `n` lines that match, newer than line `after` and not before the UTC time
        `since` (ISO 8601, as the lines' `utc`)."""
        picked = [line for line in self.lines
                  if line["seq"] > after and (since is None or line["utc"] >= since)
                  and matches(line, level, device, round_)]
        return picked[-n:]


class ErrorHistory(logging.Handler):
    def __init__(self, state_dir: Path) -> None:
        super().__init__(logging.WARNING)
        self.path = state_dir / ERROR_FILE
        self.write_errors = 0
        self._lines = 0
        try:  # at start: what is older than ERROR_DAYS goes
            self._lines = trim(self.path) if self.path.exists() else 0
        except OSError:
            self.write_errors += 1

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = json.dumps(line_of(record), separators=(",", ":"), default=str) + "\n"
            with open(self.path, "a", encoding="utf-8") as f:
                f.write(text)
            self._lines += 1
            if self._lines > ERROR_LINES:
                self._lines = trim(self.path)
        except OSError:  # a full or read-only disk: counted, the daemon goes on
            self.write_errors += 1
        except Exception:
            self.handleError(record)
