"""Times for people: stored in UTC (ISO 8601, `...Z`), shown in the casino's time zone
(headoffice.toml `[service] time_zone`, an IANA name checked with zoneinfo)."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from shared.errors import InputError


def zone(name: str) -> ZoneInfo:
    """An IANA time zone ("Australia/Sydney", "UTC"); InputError naming it otherwise."""
    try:
        if not name or name != name.strip() or ".." in name or name.startswith("/"):
            raise InputError(name)
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise InputError(f"time zone {name[:60]!r} is not an IANA zone name such as"
                         " \"Australia/Sydney\" or \"UTC\"") from None


def local_time(utc: str | None, tz: ZoneInfo) -> str:
    """A stored UTC time shown in the casino's zone: "2026-11-28 10:57:26 AEDT" ('' for none;
    a stored text that is no time is shown as it is)."""
    if not utc:
        return ""
    try:
        moment = datetime.fromisoformat(utc.replace("Z", "+00:00"))
    except ValueError:
        return utc
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(tz).strftime("%Y-%m-%d %H:%M:%S %Z")


def to_utc(text: str, tz: ZoneInfo, what: str) -> str:
    """A date or time a person gives in the casino's zone ("2026-11-28", "2026-11-28 22:00",
    "2026-11-28T22:00:05") -> the stored form in UTC, for comparing with stored times."""
    value = text.strip()
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}([ T]\d{2}:\d{2}(:\d{2})?)?", value):
        raise InputError(f"{what}: a date YYYY-MM-DD or YYYY-MM-DD HH:MM[:SS] in the casino's"
                         f" time zone, got {value[:40]!r}")
    try:
        moment = datetime.fromisoformat(value.replace(" ", "T"))
    except ValueError as exc:
        raise InputError(f"{what}: {exc}") from None
    return (moment.replace(tzinfo=tz).astimezone(UTC).isoformat(timespec="milliseconds")
            .replace("+00:00", "Z"))


def next_day_utc(day: datetime, tz: ZoneInfo) -> str:
    """Midnight after `day` in the casino's zone, in stored UTC (a DST day has 23 or 25 h)."""
    start = (day + timedelta(days=1)).replace(tzinfo=tz)
    return start.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
