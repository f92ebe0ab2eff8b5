"""Wall-clock time as the journal, the link and head office write it: one spelling, UTC."""

from __future__ import annotations

from datetime import UTC, datetime


def utc_now() -> str:
    """Now in UTC, ISO 8601 to the millisecond with a `Z` (2026-11-26T08:00:00.000Z)."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
