"""Server-side sessions: the browser holds a random token (an HttpOnly, SameSite=Strict
cookie), the console holds who it is and the session's CSRF token. Logging out or idling ends
a session here, not just in the browser; a restart of the console ends them all.

A session starts anonymous (the login form has a CSRF token too) and a fresh one replaces it
at login, so a token planted before the login is worth nothing after it.
"""

from __future__ import annotations

import hmac
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from headoffice.console.accounts import Account

COOKIE = "tablectl_console"
MAX_SESSIONS = 2000  # anonymous ones first to go: a flood of GET /login cannot exhaust memory
MAX_ANONYMOUS_S = 600.0
MAX_FLASH = 5


@dataclass
class Session:
    token: str
    csrf: str
    created: float
    seen: float
    account: Account | None = None
    flash: list[str] = field(default_factory=list)

    def say(self, text: str) -> None:
        """A line for the next page this session sees (the last few only)."""
        self.flash = [*self.flash[-(MAX_FLASH - 1):], text]

    def csrf_ok(self, sent: str | None) -> bool:
        return isinstance(sent, str) and hmac.compare_digest(sent.encode(), self.csrf.encode())


class SessionStore:
    def __init__(self, idle_timeout_s: float, max_age_s: float,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.idle_timeout_s = idle_timeout_s
        self.max_age_s = max_age_s
        self.clock = clock
        self._by_token: dict[str, Session] = {}
        self._lock = threading.Lock()

    def new(self, account: Account | None = None) -> Session:
        now = self.clock()
        s = Session(secrets.token_urlsafe(32), secrets.token_urlsafe(32), now, now, account)
        with self._lock:
            self._expire(now)
            if len(self._by_token) >= MAX_SESSIONS:
                # Evict the oldest anonymous session, else the oldest of all.
                victims = sorted(self._by_token.values(),
                                 key=lambda x: (x.account is not None, x.seen))
                del self._by_token[victims[0].token]
            self._by_token[s.token] = s
        return s

    def get(self, token: str | None) -> Session | None:
        if not token or len(token) > 100:
            return None
        now = self.clock()
        with self._lock:
            s = self._by_token.get(token)
            if s is None:
                return None
            if self._expired(s, now):
                del self._by_token[token]
                return None
            s.seen = now
            return s

    def drop(self, token: str) -> None:
        with self._lock:
            self._by_token.pop(token, None)

    def __len__(self) -> int:
        return len(self._by_token)

    def _expired(self, s: Session, now: float) -> bool:
        if s.account is None:
            return now - s.created > MAX_ANONYMOUS_S
        return now - s.seen > self.idle_timeout_s or now - s.created > self.max_age_s

    def _expire(self, now: float) -> None:
        for token in [t for t, s in self._by_token.items() if self._expired(s, now)]:
            del self._by_token[token]
