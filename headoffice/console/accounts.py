"""The console's operators: accounts with Argon2id password hashes and a role, from a file of
their own (`headoffice-console.toml`), and the check of a login.

    [console]
    listen = "127.0.0.1:8080"      # host:port; loopback unless someone decides otherwise
    idle_timeout_s = 900           # a session unused this long is gone
    session_max_s = 43200          # and any session after this long (a shift)
    cookie_secure = false          # true behind a TLS reverse proxy: the cookie only over HTTPS
    allowed_hosts = []             # Host names the browser may use besides 127.0.0.1, localhost,
                                   # ::1 and the listen host (a proxy's public name)
    [[users]]
    name = "alice"
    role = "approver"              # "viewer": reads every page, changes nothing
    password_hash = "$argon2id$v=19$m=65536,t=3,p=4$..."   # tablectl-headoffice console-password

The worker never reads this file (it holds no password); the console reads both. An approver
must also be one of head office's `[service] operators`: the ledger's own list of who may
decide a held hit, which the ledger checks again on every decision.
"""

from __future__ import annotations

import re
import threading
import time
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError

from shared.config_reader import ConfigErrors
from shared.errors import InputError

ROLES = ("viewer", "approver")
NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}")
HOST = re.compile(r"[A-Za-z0-9.-]{1,253}|[0-9A-Fa-f:.]{2,45}")
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")
MAX_PASSWORD = 1024  # characters: hashing more is work an attacker chooses, not a password
# Failed logins: after FAILS_ALLOWED in FAIL_WINDOW_S a name is locked for FAIL_WINDOW_S, even
# with the right password (an online guesser gets a handful of tries per quarter hour).
FAILS_ALLOWED = 5
FAIL_WINDOW_S = 900.0
# Argon2id verifications at once: each takes 64 MiB, so a burst of logins queues here instead
# of taking the server's memory (the systemd unit's MemoryMax allows for these).
HASHING_AT_ONCE = 2

_HASHER = PasswordHasher()  # argon2-cffi's defaults: Argon2id, 64 MiB, 3 passes (RFC 9106)
# Verified against for a name that is no account, so that answer takes as long as a wrong
# password does and does not tell which names exist.
_DUMMY_HASH = _HASHER.hash("no such operator")


class ConsoleConfigError(ConfigErrors):
    """Every problem of the console's accounts file, one line each."""


@dataclass(frozen=True)
class Account:
    name: str
    role: str
    password_hash: str = field(repr=False)

    @property
    def approver(self) -> bool:
        return self.role == "approver"


@dataclass(frozen=True)
class ConsoleConfig:
    listen: str = "127.0.0.1:8080"
    idle_timeout_s: float = 900.0
    session_max_s: float = 43_200.0
    cookie_secure: bool = False
    users: dict[str, Account] = field(default_factory=dict)
    # The Host header a request may carry (lower case, no port): a page of another site whose
    # name resolves to this machine (DNS rebinding) is refused before anything else.
    allowed_hosts: frozenset[str] = frozenset(LOOPBACK_NAMES)


def hash_password(password: str) -> str:
    if not password or len(password) > MAX_PASSWORD:
        raise InputError(f"a password is 1-{MAX_PASSWORD} characters")
    return _HASHER.hash(password)


def parse_listen(text: str) -> tuple[str, int]:
    """"127.0.0.1:8080", "[::1]:8080" -> (host, port); InputError otherwise."""
    m = re.fullmatch(r"\[([0-9A-Fa-f:.]+)\]:(\d{1,5})|([A-Za-z0-9.-]{1,253}):(\d{1,5})", text)
    if m is None:
        raise InputError(f"listen: HOST:PORT or [IPv6]:PORT, got {text[:80]!r}")
    host, port = (m[1], m[2]) if m[1] else (m[3], m[4])
    if not 1 <= int(port) <= 65535:
        raise InputError(f"listen: port 1-65535, got {port}")
    return host, int(port)


def _number(errors: list[str], d: dict[str, Any], key: str, default: float, lo: float,
            hi: float) -> float:
    value = d.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or not lo <= value <= hi:
        errors.append(f"console.{key}: a number of seconds {lo:g}-{hi:g}, got {value!r}")
        return default
    return float(value)


def _account(errors: list[str], u: Any, i: int, operators: set[str]) -> Account | None:
    where = f"users[{i}]"
    if not isinstance(u, dict):
        errors.append(f"{where}: expected a table")
        return None
    for key in sorted(set(u) - {"name", "role", "password_hash"}):
        errors.append(f"{where}.{key}: unknown key")
    name, role, hashed = u.get("name"), u.get("role"), u.get("password_hash")
    if not isinstance(name, str) or not NAME.fullmatch(name):
        errors.append(f"{where}.name: 1-64 of A-Z a-z 0-9 _ . -, got {repr(name)[:80]}")
        return None
    if role not in ROLES:
        errors.append(f"{where}.role: one of {', '.join(ROLES)}, got {repr(role)[:80]}")
        return None
    try:
        if not isinstance(hashed, str) or not hashed.startswith("$argon2id$"):
            raise InvalidHashError(hashed)
        _HASHER.check_needs_rehash(hashed)  # parses it: a mangled hash is refused here
    except (InvalidHashError, ValueError):
        errors.append(f"{where}.password_hash: an Argon2id hash (tablectl-headoffice"
                      " console-password), not a password or another scheme")
        return None
    if role == "approver" and name not in operators:
        errors.append(f"{where}: approver {name!r} is not one of head office's [service]"
                      " operators, so the ledger would refuse every decision")
        return None
    return Account(name, role, hashed)


def validate_text(text: str, operators: tuple[str, ...] | list[str],
                  source: str = "headoffice-console.toml") -> ConsoleConfig:
    try:
        data = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, RecursionError) as exc:
        raise ConsoleConfigError([f"{source}: not valid TOML: {exc}"]) from None
    errors: list[str] = []
    for key in sorted(set(data) - {"console", "users"}):
        errors.append(f"{key}: unknown key")
    c = data.get("console", {})
    if not isinstance(c, dict):
        errors.append("console: expected a table")
        c = {}
    for key in sorted(set(c) - {"listen", "idle_timeout_s", "session_max_s", "cookie_secure",
                                "allowed_hosts"}):
        errors.append(f"console.{key}: unknown key")
    listen = c.get("listen", ConsoleConfig.listen)
    hosts = set(LOOPBACK_NAMES)
    try:
        hosts.add(parse_listen(listen if isinstance(listen, str) else "")[0].lower())
    except InputError as exc:
        errors.append(f"console.{exc}")
    extra = c.get("allowed_hosts", [])
    if not isinstance(extra, list) or not all(isinstance(h, str) and HOST.fullmatch(h)
                                              for h in extra):
        errors.append(f"console.allowed_hosts: a list of host names or addresses, got"
                      f" {str(extra)[:80]}")
    else:
        hosts.update(h.lower() for h in extra)
    secure = c.get("cookie_secure", False)
    if not isinstance(secure, bool):
        errors.append(f"console.cookie_secure: true or false, got {repr(secure)[:80]}")
    users: dict[str, Account] = {}
    raw = data.get("users", [])
    for i, u in enumerate(raw if isinstance(raw, list) else []):
        account = _account(errors, u, i, set(operators))
        if account is not None and account.name in users:
            errors.append(f"users[{i}].name: {account.name!r} listed twice")
        elif account is not None:
            users[account.name] = account
    if not isinstance(raw, list):
        errors.append("users: a list of [[users]] tables")
    cfg = ConsoleConfig(
        listen=listen if isinstance(listen, str) else ConsoleConfig.listen,
        idle_timeout_s=_number(errors, c, "idle_timeout_s", 900.0, 30, 86_400),
        session_max_s=_number(errors, c, "session_max_s", 43_200.0, 60, 7 * 86_400),
        cookie_secure=secure is True,
        users=users,
        allowed_hosts=frozenset(hosts),
    )
    if errors:
        raise ConsoleConfigError([f"{source}: {e}" for e in errors])
    return cfg


def load_console_config(path: str | Path, operators: tuple[str, ...] | list[str]
                        ) -> ConsoleConfig:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConsoleConfigError([f"{path}: cannot read: {exc}"]) from None
    return validate_text(text, operators, str(path))


class Authenticator:
    """Checks a name and password against the accounts, with a lockout per name after
    repeated failures. Thread-safe (the console verifies in worker threads: Argon2 is slow on
    purpose)."""

    def __init__(self, users: dict[str, Account],
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.users = users
        self.clock = clock
        self._fails: dict[str, list[float]] = {}
        # Attempts begun and not yet decided, per name: counted against the lockout with the
        # failures, so a burst of guesses sent at once (queued behind the hashing slots) locks
        # the name as the same guesses sent one by one do.
        self._in_flight: dict[str, int] = {}
        self._lock = threading.Lock()
        self._hashing = threading.BoundedSemaphore(HASHING_AT_ONCE)

    def _recent(self, key: str, now: float) -> int:
        """Failures of `key` inside the window (under self._lock)."""
        recent = [t for t in self._fails.get(key, []) if now - t < FAIL_WINDOW_S]
        if recent:
            self._fails[key] = recent
        else:
            self._fails.pop(key, None)
        return len(recent)

    def locked(self, name: str) -> bool:
        with self._lock:
            return self._recent(name, self.clock()) >= FAILS_ALLOWED

    def check(self, name: str, password: str) -> Account | None:
        """The account, or None (unknown name, wrong password, or the name is locked).

        A name is locked once its failures in the window, together with its attempts still
        being checked, reach FAILS_ALLOWED; the lock is read again after the hash, so a right
        password that waited behind wrong ones is refused once they have failed."""
        if len(name) > 64 or len(password) > MAX_PASSWORD:
            return None
        account = self.users.get(name)
        # Bounded: names that are no account share one entry, so guessing names cannot grow
        # these without limit.
        key = name if account is not None else ""
        with self._lock:
            locked = (self._recent(key, self.clock()) + self._in_flight.get(key, 0)
                      >= FAILS_ALLOWED)
            self._in_flight[key] = self._in_flight.get(key, 0) + 1
        try:
            try:
                with self._hashing:
                    _HASHER.verify(account.password_hash if account else _DUMMY_HASH, password)
                ok = account is not None and not locked
            except (VerifyMismatchError, VerificationError, InvalidHashError):
                ok = False
            with self._lock:
                if ok and self._recent(key, self.clock()) >= FAILS_ALLOWED:
                    ok = False  # locked by failures decided while this one waited
                if not ok:
                    self._fails.setdefault(key, []).append(self.clock())
                    del self._fails[key][:-FAILS_ALLOWED]
                else:
                    self._fails.pop(key, None)
        finally:
            with self._lock:
                left = self._in_flight[key] - 1
                if left:
                    self._in_flight[key] = left
                else:
                    del self._in_flight[key]
        return account if ok else None
