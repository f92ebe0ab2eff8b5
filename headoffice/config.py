"""Head office's configuration (TOML), validated in one pass like the table's.

    [database]  url = "sqlite:////var/lib/tablectl-headoffice/ledger.db"
    [broker]    host, port, client_id, username, password_file, [broker.tls] ca/cert/key
    [service]   heartbeat_s, pool_expiry_s, live_window_s, batch_max, operators = [...],
                verify_from, verify_above, max_jackpot_wager, dual_control_from
    [[pools]]   id, seed, increment_bp, hidden_bp, ceiling, wager,
                [pools.awards] (as [uth.jackpot.awards])
    [[tables]]  id, pool: the enrolled tables (no other table's messages are accepted)

docs/headoffice.md documents every key.
"""

from __future__ import annotations

import math
import os
import socket
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from types import MappingProxyType
from typing import Any

from controller.games.uth.evaluator import Category
from controller.games.uth.paytables import JackpotPayTable
from headoffice import localtime
from headoffice.hits import DUAL_CONTROL_FROM, HitPolicy
from headoffice.pools import BASIS_POINTS, Params
from shared.config_reader import ConfigErrors, TomlError, load_file, parse_toml
from shared.errors import InputError
from shared.link import contract
from shared.link.transport import BrokerSettings, Tls, Will

DEFAULT_PATH = Path("/etc/tablectl/headoffice.toml")


class HeadOfficeConfigError(ConfigErrors):
    """Every problem of head office's configuration, one line each."""


@dataclass(frozen=True)
class HeadOfficeConfig:
    database: str
    broker: BrokerSettings | None
    pools: dict[str, Params] = field(default_factory=dict)
    heartbeat_s: float = 1.0  # pool values republished this often (the tables' freshness)
    pool_expiry_s: int = 5  # a retained pool value expires: a dead head office goes OFFLINE
    live_window_s: float = 90.0  # a table seen this recently (and online) is live on its pool
    batch_max: int = 500  # messages applied per transaction at most
    operators: tuple[str, ...] = ()  # change parameters, resume pools, decide hits
    tables: dict[str, str | None] = field(default_factory=dict)  # enrolled: id -> its pool
    # Hits whose award has a category at least this (a Category label, or None: no category
    # waits) or a total above verify_above cents are held for an operator's approval.
    verify_from: str | None = "royal_flush"
    verify_above: int | None = None
    max_jackpot_wager: int = 100_000  # cents: a larger jackpot wager is refused (UTH 15.2.3)
    # cents: an award this or more, whatever the hand, is held for two different approvers
    # (None: one, and only for what verify_from / verify_above hold)
    dual_control_from: int | None = DUAL_CONTROL_FROM
    # The casino's IANA time zone: times are stored in UTC and shown in this one (console, CLI).
    time_zone: str = "UTC"

    def hit_policy(self) -> HitPolicy:
        """What waits for a person and what needs two: the worker holds hits by it, the
        console and the CLI decide them by it."""
        return HitPolicy(self.verify_from, self.verify_above, self.max_jackpot_wager,
                         self.dual_control_from)


def _get(errors: list[str], d: dict[str, Any], path: str, key: str, kind: type | tuple[type, ...],
         default: Any = ..., lo: float | None = None, hi: float | None = None) -> Any:
    if key not in d:
        if default is ...:
            errors.append(f"{path}.{key}: required")
        return None if default is ... else default
    value = d[key]
    if isinstance(value, bool) and bool not in (kind if isinstance(kind, tuple) else (kind,)):
        errors.append(f"{path}.{key}: expected {kind}, got a boolean")
        return None
    if not isinstance(value, kind):
        errors.append(f"{path}.{key}: expected {getattr(kind, '__name__', kind)}, got {value!r}")
        return None
    if isinstance(value, float) and not math.isfinite(value):
        errors.append(f"{path}.{key}: must be a finite number, got {value!r}")
        return None
    if lo is not None and value < lo:
        errors.append(f"{path}.{key}: must be >= {lo}, got {value!r}")
        return None
    if hi is not None and value > hi:
        # Compared before any float(): a 400-digit integer is refused, not an OverflowError.
        errors.append(f"{path}.{key}: must be <= {hi}, got {_short(value)}")
        return None
    return value


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:20]}...({len(text)} characters)"


def _unknown(errors: list[str], d: dict[str, Any], path: str, known: set[str]) -> None:
    for key in sorted(set(d) - known):
        errors.append(f"{path}.{key}: unknown key")


def _awards(errors: list[str], d: dict[str, Any], path: str) -> JackpotPayTable:
    a = JackpotPayTable()
    if not d:
        return a
    _unknown(errors, d, path, {"royal_minimum", "royal_share_bp", "straight_flush_minimum",
                               "straight_flush_share_bp", "four_of_a_kind", "full_house", "flush",
                               "bonus_for_royal", "bonus_for_straight_flush"})

    def bp(key: str, default: Fraction) -> Fraction:
        v = _get(errors, d, path, key, int, int(default * BASIS_POINTS), lo=0)
        return Fraction(v or 0, BASIS_POINTS)

    fixed = {c: _get(errors, d, path, c.label, int, a.fixed[c], lo=0) or 0
             for c in (Category.FOUR_OF_A_KIND, Category.FULL_HOUSE, Category.FLUSH)}
    try:
        return JackpotPayTable(
            royal_minimum=_get(errors, d, path, "royal_minimum", int, a.royal_minimum, lo=0) or 0,
            royal_share=bp("royal_share_bp", a.royal_share),
            straight_flush_minimum=_get(errors, d, path, "straight_flush_minimum", int,
                                        a.straight_flush_minimum, lo=0) or 0,
            straight_flush_share=bp("straight_flush_share_bp", a.straight_flush_share),
            fixed=MappingProxyType(fixed),
            bonus_for_royal=_get(errors, d, path, "bonus_for_royal", int, 0, lo=0) or 0,
            bonus_for_straight_flush=_get(errors, d, path, "bonus_for_straight_flush", int, 0,
                                          lo=0) or 0,
        )
    except InputError as exc:
        errors.append(f"{path}: {exc}")
        return a


def _pool(errors: list[str], d: dict[str, Any], path: str) -> tuple[str, Params] | None:
    _unknown(errors, d, path, {"id", "seed", "increment_bp", "hidden_bp", "ceiling", "awards",
                               "wager"})
    pool_id = _get(errors, d, path, "id", str)
    if pool_id is not None and not contract.POOL_ID.fullmatch(pool_id):
        errors.append(f"{path}.id: 1-64 of A-Z a-z 0-9 _ . -, got {pool_id!r}")
    seed = _get(errors, d, path, "seed", int, lo=0)
    inc = _get(errors, d, path, "increment_bp", int, lo=0)
    hidden = _get(errors, d, path, "hidden_bp", int, 0, lo=0)
    ceiling = _get(errors, d, path, "ceiling", int, None, lo=0)
    # UTH 15.2.5.3: the qualifying jackpot wager of every table on the pool (absent: not checked)
    wager = _get(errors, d, path, "wager", int, None, lo=1, hi=contract.MAX_CENTS)
    awards = _get(errors, d, path, "awards", dict, {})
    paytable = _awards(errors, awards or {}, f"{path}.awards")
    if None in (pool_id, seed, inc, hidden):
        return None
    try:
        params = Params(seed, Fraction(inc, BASIS_POINTS), Fraction(hidden, BASIS_POINTS),
                        ceiling, paytable, wager)
    except InputError as exc:
        errors.append(f"{path}: {exc}")
        return None
    return pool_id, params


def _broker(errors: list[str], d: dict[str, Any]) -> BrokerSettings | None:
    _unknown(errors, d, "broker", {"host", "port", "client_id", "username", "password_file",
                                   "tls"})
    host = _get(errors, d, "broker", "host", str)
    tls = None
    t = _get(errors, d, "broker", "tls", dict, None)
    if t is not None:
        _unknown(errors, t, "broker.tls", {"ca", "cert", "key"})
        ca = _get(errors, t, "broker.tls", "ca", str)
        cert = _get(errors, t, "broker.tls", "cert", str, None)
        key = _get(errors, t, "broker.tls", "key", str, None)
        if (cert is None) != (key is None):
            errors.append("broker.tls.key: cert and key go together")
        tls = Tls(Path(ca or ""), Path(cert) if cert else None, Path(key) if key else None)
    port = _get(errors, d, "broker", "port", int, 8883 if tls else 1883, lo=1)
    client_id = _get(errors, d, "broker", "client_id", str,
                     f"headoffice-{socket.gethostname()}-{os.getpid()}")
    username = _get(errors, d, "broker", "username", str, None)
    password = None
    pf = _get(errors, d, "broker", "password_file", str, None)
    if pf is not None:
        try:
            password = Path(pf).read_text(encoding="utf-8").strip()
        except OSError as exc:
            errors.append(f"broker.password_file: cannot read: {exc.strerror}")
    if host is None:
        return None
    offline = contract.dumps({"v": contract.VERSION, "state": "offline", "worker": client_id})
    return BrokerSettings(
        host=host, port=port, client_id=client_id, tls=tls, username=username,
        password=password,
        # Workers keep no session: a dead worker must not hold messages of the shared
        # subscription; the tables resend whatever was not acknowledged.
        session_expiry_s=0,
        will=Will(contract.HO_STATUS_TOPIC, offline, retain=True),
    )


def validate_text(text: str, source: str = "headoffice.toml") -> HeadOfficeConfig:
    try:
        data = parse_toml(text, source)
    except TomlError as exc:
        raise HeadOfficeConfigError([str(exc)]) from None
    errors: list[str] = []
    _unknown(errors, data, "", {"database", "broker", "service", "pools", "tables"})
    db = _get(errors, data, "", "database", dict, {}) or {}
    _unknown(errors, db, "database", {"url"})
    url = _get(errors, db, "database", "url", str)
    broker = None
    if "broker" in data:
        b = _get(errors, data, "", "broker", dict)
        broker = _broker(errors, b) if b is not None else None
    s = _get(errors, data, "", "service", dict, {}) or {}
    _unknown(errors, s, "service", {"heartbeat_s", "pool_expiry_s", "live_window_s", "batch_max",
                                    "operators", "verify_from", "verify_above",
                                    "max_jackpot_wager", "dual_control_from", "time_zone"})
    verify_from = _get(errors, s, "service", "verify_from", str, "royal_flush")
    if verify_from == "none":
        verify_from = None
    elif verify_from is not None:
        try:
            Category.from_label(verify_from)
        except InputError:
            errors.append(f"service.verify_from: a hand category (royal_flush, straight_flush,"
                          f" four_of_a_kind, full_house, flush) or \"none\", got {verify_from!r}")
    verify_above = _get(errors, s, "service", "verify_above", int, None, lo=0)
    max_wager = _get(errors, s, "service", "max_jackpot_wager", int, 100_000, lo=1)
    dual = _get(errors, s, "service", "dual_control_from", (int, str), DUAL_CONTROL_FROM)
    if dual == "none":
        dual = None
    elif isinstance(dual, str):
        errors.append(f"service.dual_control_from: cents (an integer >= 1) or \"none\","
                      f" got {_short(dual)}")
        dual = DUAL_CONTROL_FROM
    elif isinstance(dual, int) and dual < 1:
        errors.append(f"service.dual_control_from: must be >= 1 cent, got {dual}")
        dual = DUAL_CONTROL_FROM
    time_zone = _get(errors, s, "service", "time_zone", str, "UTC")
    if time_zone is not None:
        try:
            localtime.zone(time_zone)
        except InputError as exc:
            errors.append(f"service.time_zone: {exc}")
    tables: dict[str, str | None] = {}
    for i, t in enumerate(_get(errors, data, "", "tables", list, []) or []):
        if not isinstance(t, dict):
            errors.append(f"tables[{i}]: expected a table")
            continue
        _unknown(errors, t, f"tables[{i}]", {"id", "pool"})
        table_id = _get(errors, t, f"tables[{i}]", "id", str)
        pool_of = _get(errors, t, f"tables[{i}]", "pool", str, None)
        if table_id is not None and not contract.TABLE_ID.fullmatch(table_id):
            errors.append(f"tables[{i}].id: 1-32 of A-Z a-z 0-9 _ -, got {table_id!r}")
        elif table_id is not None and table_id.startswith("headoffice"):
            errors.append(f"tables[{i}].id: {table_id!r} is a head-office worker's name (ACL)")
        elif table_id in tables:
            errors.append(f"tables[{i}].id: table {table_id!r} listed twice")
        elif table_id is not None:
            tables[table_id] = pool_of
    operators = _get(errors, s, "service", "operators", list, [])
    if operators is not None and not all(isinstance(o, str) and o for o in operators):
        errors.append("service.operators: a list of operator names")
        operators = []
    pools: dict[str, Params] = {}
    for i, p in enumerate(_get(errors, data, "", "pools", list, []) or []):
        if not isinstance(p, dict):
            errors.append(f"pools[{i}]: expected a table")
            continue
        got = _pool(errors, p, f"pools[{i}]")
        if got is not None:
            if got[0] in pools:
                errors.append(f"pools[{i}].id: pool {got[0]!r} listed twice")
            pools[got[0]] = got[1]
            wager = got[1].wager
            if wager is not None and max_wager is not None and wager > max_wager:
                errors.append(f"pools[{i}].wager: {wager} is above service.max_jackpot_wager"
                              f" {max_wager}: no table's increment could be accepted (UTH 15.2.3)")
    cfg = HeadOfficeConfig(
        database=url or "",
        broker=broker,
        pools=pools,
        heartbeat_s=float(_get(errors, s, "service", "heartbeat_s", (int, float), 1.0, lo=0.05,
                               hi=60) or 1.0),
        pool_expiry_s=int(_get(errors, s, "service", "pool_expiry_s", int, 5, lo=1, hi=3600)
                          or 5),
        live_window_s=float(_get(errors, s, "service", "live_window_s", (int, float), 90.0,
                                 lo=1, hi=86400) or 90.0),
        batch_max=int(_get(errors, s, "service", "batch_max", int, 500, lo=1, hi=100_000)
                      or 500),
        operators=tuple(operators or ()),
        tables=tables,
        verify_from=verify_from,
        verify_above=verify_above,
        max_jackpot_wager=int(max_wager or 100_000),
        dual_control_from=dual,
        time_zone=time_zone or "UTC",
    )
    if errors:
        raise HeadOfficeConfigError([f"{source}: {e.lstrip('.')}" for e in errors])
    return cfg


def load_config(path: str | Path = DEFAULT_PATH) -> HeadOfficeConfig:
    return load_file(path, validate_text, HeadOfficeConfigError)
