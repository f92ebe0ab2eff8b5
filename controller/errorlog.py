"""The error history's file (`errors.jsonl` in the state directory): the daemon appends every
warning or worse with its code (controller/daemon/logbook.py); `tablectl errors` reads it, from
the daemon or straight from the file when the daemon is down. One JSON object a line:
{utc, level, code, message, fields}."""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ERROR_FILE = "errors.jsonl"
ERROR_DAYS = 7  # how long an error stays in the history
ERROR_LINES = 5000  # and at most this many (a fault repeating all week cannot fill the disk)
LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING,
          "error": logging.ERROR, "critical": logging.CRITICAL}


def matches(line: dict[str, Any], level: str | None, device: str | None,
            round_: int | None) -> bool:
    """`tablectl logs` filters: at least `level`, naming `device`, about round `round_`."""
    if level is not None and LEVELS.get(line["level"], 0) < LEVELS[level]:
        return False
    fields = line.get("fields") or {}
    if device is not None and fields.get("device") != device:
        return False
    return round_ is None or fields.get("round") == round_


def read_history(path: Path, days: int = ERROR_DAYS, now: datetime | None = None
                 ) -> list[dict[str, Any]]:
    """The errors of the last `days` days, oldest first; a line that is not one of ours (a
    torn last line after a power cut) is skipped."""
    since = (now or datetime.now(UTC)) - timedelta(days=days)
    cutoff = since.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = list(_parsed(f))
    except FileNotFoundError:
        return []
    return [line for line in lines if str(line.get("utc", "")) >= cutoff]


def _parsed(lines: Iterable[str]) -> Iterable[dict[str, Any]]:
    for text in lines:
        try:
            line = json.loads(text)
        except ValueError:
            continue
        if isinstance(line, dict) and isinstance(line.get("utc"), str) and "code" in line:
            yield line


def trim(path: Path, now: datetime | None = None) -> int:
    """Keep the last ERROR_DAYS days and at most ERROR_LINES lines (written aside, renamed
    over: a power cut leaves the old file or the new one). Returns the lines kept."""
    kept = read_history(path, ERROR_DAYS, now)[-ERROR_LINES:]
    tmp = path.with_suffix(".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.writelines(json.dumps(line, separators=(",", ":")) + "\n" for line in kept)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    return len(kept)
