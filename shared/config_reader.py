"""Reading one TOML file section by section, every problem recorded, none raised.

`Table` wraps one TOML table: each typed getter (`string`, `integer`, `boolean`, `table`)
records an error line naming the key path and returns None on a bad value, and `done()` reports
the keys nobody asked for (with a "did you mean" hint), so a typo never falls back to a default
silently. `Errors` collects the lines of the whole file; whoever reads the file raises them
together (controller/config/). `read_text` and `parse_toml` read a file and report why it is
not TOML in one line, for table.toml and headoffice.toml alike. Each device's section reader
(`devices/config.py`) uses `Table`; `controller/config/` extends it with money, seconds, paths.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, Self, TypeVar

from shared.errors import InputError

MISSING: Any = object()
C = TypeVar("C")  # a configuration


class TomlError(InputError):
    """A file that cannot be read as TOML: the one line that says why, naming the file."""


class ConfigErrors(InputError):
    """Every problem of a configuration file, one line each in `errors` (the message joins
    them); the table's `ConfigError` and head office's and its console's are this."""

    def __init__(self, errors: Iterable[str]) -> None:
        self.errors: list[str] = list(errors)
        super().__init__("\n".join(self.errors))


def load_file(path: str | Path, validate: Callable[[str, str], C], error: type[ConfigErrors]) -> C:
    """The configuration at `path`: its text validated (`validate(text, source)`); a file that
    cannot be read is `error` with the one line that says why."""
    try:
        text = read_text(Path(path))
    except TomlError as exc:
        raise error([str(exc)]) from None
    return validate(text, str(path))


def read_text(path: Path) -> str:
    """A configuration file's text (UTF-8); TomlError `<path>: cannot read: <why>`."""
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise TomlError(f"{path}: cannot read: {reason}") from None


def parse_toml(text: str, source: str) -> dict[str, Any]:
    """The document; TomlError `<source>: not valid TOML: <why>`, never a traceback."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise TomlError(f"{source}: not valid TOML: {exc}") from None
    except RecursionError:  # tomllib recurses on nested arrays and tables
        raise TomlError(f"{source}: not valid TOML: nested too deeply") from None


class Errors:
    def __init__(self, source: str) -> None:
        self.source = source
        self.lines: list[str] = []

    def add(self, path: str, reason: str) -> None:
        self.lines.append(f"{self.source}: {path}: {reason}")


def short(value: float) -> str:
    """A number for an error line: a 10^23 typo is shown as such, not as 24 digits."""
    text = str(value)
    return text if len(text) <= 15 else f"{value:.3e}"


def kind_of(value: object) -> str:
    return {bool: "a boolean", int: "an integer", float: "a float", str: "a string"}.get(
        type(value), "a table" if isinstance(value, dict) else "an array"
    )


class Table:
    """One TOML table being read: typed getters record errors and return None on a bad value;
    `done()` reports the keys nobody asked for."""

    def __init__(self, errors: Errors, path: str, data: Mapping[str, Any]) -> None:
        self.errors = errors
        self.path = path
        self.data = data
        self.known: set[str] = set()

    def key(self, name: str) -> str:
        return f"{self.path}.{name}" if self.path else name

    def error(self, name: str, reason: str) -> None:
        self.errors.add(self.key(name), reason)

    def has(self, name: str) -> bool:
        self.known.add(name)
        return name in self.data

    def raw(self, name: str, default: Any) -> Any:
        self.known.add(name)
        if name not in self.data:
            if default is MISSING:
                self.error(name, "required key is missing")
                return None
            return default
        return self.data[name]

    def string(
        self,
        name: str,
        default: Any = MISSING,
        *,
        pattern: re.Pattern[str] | None = None,
        choices: Iterable[str] | None = None,
        what: str = "",
    ) -> Any:
        value = self.raw(name, default)
        if value is None or (value is default and name not in self.data):
            return value
        if not isinstance(value, str):
            self.error(name, f"must be a string, got {kind_of(value)} {value!r}")
            return None
        if choices is not None and value not in choices:
            self.error(name, f"must be one of {', '.join(choices)}, got {value!r}")
            return None
        if pattern is not None and not pattern.fullmatch(value):
            self.error(name, f"must be {what}, got {value!r}")
            return None
        return value

    def boolean(self, name: str, default: Any = MISSING) -> Any:
        value = self.raw(name, default)
        if value is None or isinstance(value, bool):
            return value
        self.error(name, f"must be true or false, got {kind_of(value)} {value!r}")
        return None

    def integer(
        self, name: str, default: Any = MISSING, *, lo: int | None = None, hi: int | None = None
    ) -> Any:
        value = self.raw(name, default)
        if value is None or (value is default and name not in self.data):
            return value
        if isinstance(value, bool) or not isinstance(value, int):
            self.error(name, f"must be an integer, got {kind_of(value)} {value!r}")
            return None
        if (lo is not None and value < lo) or (hi is not None and value > hi):
            bounds = f"{lo}..{hi}" if hi is not None else f">= {lo}"
            self.error(name, f"must be within {bounds}, got {short(value)}")
            return None
        return value

    def table(self, name: str) -> Self | None:
        """The sub-table `name`, or None when absent or not a table."""
        value = self.raw(name, None)
        if value is None:
            return None
        if not isinstance(value, dict):
            self.error(name, f"must be a table ([{self.key(name)}]), got {kind_of(value)}")
            return None
        return type(self)(self.errors, self.key(name), value)

    def done(self, hints: Mapping[str, str] | None = None) -> None:
        for name in self.data:
            if name in self.known:
                continue
            if hints and name in hints:
                self.error(name, hints[name])
                continue
            import difflib  # on an unknown key only: not in a table's memory (issue 31)

            close = difflib.get_close_matches(name, sorted(self.known), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            expected = ", ".join(sorted(self.known)) or "no keys"
            self.error(name, f"unknown key{hint}; expected one of: {expected}")
