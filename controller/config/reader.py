"""Reading table.toml: the devices' section reader, plus money, seconds and paths.

`ConfigError` carries every problem of a file, one line each, naming the key path:

    table.toml: paigow.limits.minimum: must be a positive integer number of cents, got -5
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from shared.config_reader import MISSING, ConfigErrors, Errors, kind_of, short
from shared.config_reader import Table as DeviceTable

__all__ = ["MISSING", "ConfigError", "Errors", "Table"]

# Every amount of money in the file (limits, jackpot wager, seed, ceiling, awards) is at most
# this many cents ($100,000,000): a typo of a few digits is refused rather than played with.
MAX_CENTS = 10_000_000_000


class ConfigError(ConfigErrors):
    """Every problem of a table's configuration; `errors` holds one line per problem."""


class Table(DeviceTable):
    """A TOML table of the table's own sections: also money (integer cents), seconds, paths."""

    def path_(self, name: str, default: Any = MISSING) -> Path | None:
        value = self.string(name, default)
        if value is None or isinstance(value, Path):
            return value
        if not value.startswith("/"):
            self.error(name, f"must be an absolute path, got {value!r}")
            return None
        return Path(value)

    def cents(self, name: str, default: Any = MISSING, *, positive: bool = True) -> Any:
        value = self.raw(name, default)
        if value is None or (value is default and name not in self.data):
            return value
        need = "a positive" if positive else "a non-negative"
        if isinstance(value, float):
            self.error(
                name,
                f"must be {need} integer number of cents, got the float {value!r}"
                " (money is never a float: write 550 for $5.50)",
            )
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            self.error(name, f"must be {need} integer number of cents, got {kind_of(value)}")
            return None
        if value < 0 or (positive and value == 0):
            self.error(name, f"must be {need} integer number of cents, got {value}")
            return None
        if value > MAX_CENTS:
            self.error(
                name, f"must be at most {MAX_CENTS} cents ($100,000,000), got {short(value)}"
            )
            return None
        return value

    def seconds(self, name: str, default: Any, *, lo: float, hi: float) -> Any:
        """A finite number of seconds within lo..hi: inf, nan (TOML `inf`, `nan`, or 1e400,
        which reads as inf) and negatives are refused, never handed to the daemon."""
        value = self.raw(name, default)
        need = f"must be a positive number of seconds within {lo}..{hi}"
        if isinstance(value, bool) or not isinstance(value, int | float):
            self.error(name, f"{need}, got {kind_of(value)} {value!r}")
            return None
        if not lo <= value <= hi:  # inf is out of range, nan compares false: both refused
            self.error(name, f"{need}, got {short(value)}")
            return None
        return float(value)
