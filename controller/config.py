"""The table's configuration: one TOML file, /etc/tablectl/table.toml by default.

`load_config(path)` and `validate_text(text, source)` return a frozen `TableConfig` or raise
`ConfigError` listing every problem found in one pass, each naming the key path and the reason:

    table.toml: paigow.limits.minimum: must be a positive integer number of cents, got -5

Unknown keys are errors, so a typo never silently falls back to a default. Money is integer
cents everywhere; a float where money is expected is rejected. docs/configuration.md documents
every key.
"""

from __future__ import annotations

import difflib
import re
import sys
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields, is_dataclass
from enum import Enum
from fractions import Fraction
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from controller.errors import InputError
from controller.games.paigow.bank import MAX_BANKS_PER_BOX
from controller.games.paigow.bank import MAX_BOXES as PAIGOW_MAX_BOXES
from controller.games.paigow.money import STANDARD_COMMISSION_BP, TableMoney
from controller.games.paigow.profiles import Profile
from controller.games.uth.deal import MAX_BOXES as UTH_MAX_BOXES

if TYPE_CHECKING:
    from controller.games.uth.evaluator import Category
    from controller.games.uth.jackpot import PoolState
    from controller.games.uth.paytables import JackpotPayTable, PayTable

# The UTH rules modules are imported only when a UTH section is read: the evaluator builds its
# lookup tables at import (~0.3 s, several MB), which a Pai Gow table never needs.
_UTH_PAYTABLES = "controller.games.uth.paytables"


DEFAULT_PATH = Path("/etc/tablectl/table.toml")
GAMES = ("paigow", "uth")
BASIS_POINTS = 10_000
BCM_PINS = range(0, 28)  # the 40-pin header's GPIO0..GPIO27
PIN_FACTORIES = ("lgpio", "mock")
DEAL_METHODS = ("shuffler", "shoe")
BAUD_RATES = (1200, 2400, 4800, 9600, 19200, 38400, 57600, 115200, 230400)
# Every amount of money in the file (limits, jackpot wager, seed, ceiling, awards) is at most
# this many cents ($100,000,000): a typo of a few digits is refused rather than played with.
MAX_CENTS = 10_000_000_000
POOL_TIMEOUT_S = (0.1, 300.0)  # link.pool_timeout_s: bounds of a finite number of seconds

_TABLE_ID = re.compile(r"[A-Za-z0-9_-]{1,32}")
_CLIENT_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
_POOL_ID = re.compile(r"[A-Za-z0-9_.-]{1,64}")
_GROUP = re.compile(r"[a-z_][a-z0-9_-]{0,31}")
_ACTION = re.compile(r"[a-z][a-z0-9_]{0,31}")
_USB_ID = re.compile(r"[0-9a-f]{4}")
_HOST = re.compile(r"[A-Za-z0-9]([A-Za-z0-9.:-]{0,252}[A-Za-z0-9])?")


class ConfigError(InputError):
    """Every problem of a configuration; `errors` holds one line per problem."""

    def __init__(self, errors: Iterable[str]) -> None:
        self.errors: list[str] = list(errors)
        super().__init__("\n".join(self.errors))


# --- the configuration --------------------------------------------------------------------------


@dataclass(frozen=True)
class ServiceConfig:
    state_dir: Path = Path("/var/lib/tablectl")
    runtime_dir: Path = Path("/run/tablectl")
    socket_group: str = "tablectl"
    watchdog: bool = True  # ping systemd's watchdog while the loop is healthy
    # Who may do what on the control socket (docs/operations.md): read-only commands need one
    # of the two groups, commands that act on the table need the supervisor group.
    tech_group: str = "tablectl-tech"
    super_group: str = "tablectl-super"
    # Play without a verified software manifest (docs/verification.md); refused on an
    # installed table, logged and shown in status and on the meter elsewhere.
    development: bool = False


@dataclass(frozen=True)
class PaiGowLimits:
    minimum: int
    maximum: int | None = None  # None: no table maximum
    chip_unit: int = 100
    house_liability: int | None = None  # co-banking, NZ 5.1(c) / ACT 5.4; None: none displayed


@dataclass(frozen=True)
class PaiGowConfig:
    rules: Profile
    limits: PaiGowLimits
    boxes: int = PAIGOW_MAX_BOXES
    commission_bp: int = STANDARD_COMMISSION_BP
    # Effective values for the profile: NSW 8.2 always allows the steal, NZ 9.6 where offered,
    # ACT has none. multiples_notice only matters for ACT 5.1(b).
    steal_offered: bool = False
    multiples_notice: bool = False
    banks_per_box: int = 1
    # Readings a regulator confirms (docs/paigow.md): None/True take the default reading.
    cobank_box_maximum: bool | None = None
    unpayable_up: bool = True

    @property
    def money(self) -> TableMoney:
        return TableMoney(
            self.limits.minimum,
            self.limits.maximum,
            self.limits.chip_unit,
            self.commission_bp,
            house_liability=self.limits.house_liability,
            cobank_box_maximum=self.cobank_box_maximum,
            unpayable_up=self.unpayable_up,
        )


@dataclass(frozen=True)
class UthLimits:
    ante_min: int
    ante_max: int
    trips_min: int
    trips_max: int
    chip_unit: int = 100  # rule 6.1: the unit of wagers above the minimum


@dataclass(frozen=True)
class JackpotConfig:
    enabled: bool = False
    pool_id: str | None = None
    wager: int = 100  # 15.2.3: the amount of a jackpot wager
    increment_bp: int = 0  # share of each jackpot wager added to the meter
    hidden_bp: int = 0  # share added to the hidden reserve
    seed: int = 0  # the meter after a Royal Flush reset (15.2.5)
    ceiling: int | None = None
    awards: JackpotPayTable = field(default_factory=lambda: _paytables().JackpotPayTable())

    @property
    def increment(self) -> Fraction:
        return Fraction(self.increment_bp, BASIS_POINTS)

    @property
    def hidden(self) -> Fraction:
        return Fraction(self.hidden_bp, BASIS_POINTS)

    def new_pool(self) -> PoolState:
        """A fresh local pool at its seed (a linked pool's value comes from head office)."""
        from controller.games.uth.jackpot import PoolState

        return PoolState(
            amount=self.seed,
            seed=self.seed,
            increment=self.increment,
            hidden=self.hidden,
            ceiling=self.ceiling,
        )


def _paytables() -> Any:
    import controller.games.uth.paytables as paytables

    return paytables


@dataclass(frozen=True)
class UthConfig:
    limits: UthLimits
    boxes: int = UTH_MAX_BOXES
    blind_paytable: PayTable = field(default_factory=lambda: _paytables().BLIND_PAYTABLE)
    trips_paytable: PayTable = field(default_factory=lambda: _paytables().TRIPS_PAYTABLE)
    deal_method: str = "shuffler"
    decks: int = 2
    jackpot: JackpotConfig = field(default_factory=JackpotConfig)


@dataclass(frozen=True)
class SerialConfig:
    port: str
    baud: int
    usb_vendor: str | None = None  # 4 hex digits, for the udev rule's stable name
    usb_product: str | None = None
    usb_serial: str | None = None
    answer_timeout_ms: int = 1000  # no answer within this: the device is reported offline


@dataclass(frozen=True)
class GpioConfig:
    pin_factory: str = "lgpio"
    chung: tuple[int, ...] = ()  # Pai Gow: one per box, box 1 first
    off: tuple[int, ...] = ()  # Pai Gow: one per box
    bet_sensor: tuple[int, ...] = ()  # UTH: one per box
    lamp: tuple[int, ...] = ()  # UTH: one per bet sensor
    keypad: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))
    table_closed: int | None = None
    debounce_ms: int = 20


@dataclass(frozen=True)
class DevicesConfig:
    simulate: bool = False
    shaker: SerialConfig | None = None
    shuffler: SerialConfig | None = None
    meter: SerialConfig | None = None
    gpio: GpioConfig | None = None


@dataclass(frozen=True)
class TlsConfig:
    ca: Path
    cert: Path | None = None
    key: Path | None = None


@dataclass(frozen=True)
class LinkConfig:
    enabled: bool = False
    host: str | None = None
    port: int = 8883
    tls: TlsConfig | None = None
    username: str | None = None
    password_file: Path | None = None
    pool_timeout_s: float = 5.0
    client_id: str = ""


@dataclass(frozen=True)
class TableConfig:
    table_id: str
    game: str
    service: ServiceConfig
    devices: DevicesConfig
    link: LinkConfig
    paigow: PaiGowConfig | None = None
    uth: UthConfig | None = None

    @property
    def boxes(self) -> int:
        game = self.paigow if self.game == "paigow" else self.uth
        assert game is not None
        return game.boxes


# --- reading ------------------------------------------------------------------------------------

_MISSING: Any = object()


class _Errors:
    def __init__(self, source: str) -> None:
        self.source = source
        self.lines: list[str] = []

    def add(self, path: str, reason: str) -> None:
        self.lines.append(f"{self.source}: {path}: {reason}")


def _short(value: float) -> str:
    """A number for an error line: a 10^23 typo is shown as such, not as 24 digits."""
    text = str(value)
    return text if len(text) <= 15 else f"{value:.3e}"


def _kind(value: object) -> str:
    return {bool: "a boolean", int: "an integer", float: "a float", str: "a string"}.get(
        type(value), "a table" if isinstance(value, dict) else "an array"
    )


class _Table:
    """One TOML table being read: typed getters record errors and return None on a bad value;
    `done()` reports the keys nobody asked for."""

    def __init__(self, errors: _Errors, path: str, data: Mapping[str, Any]) -> None:
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
            if default is _MISSING:
                self.error(name, "required key is missing")
                return None
            return default
        return self.data[name]

    def string(
        self,
        name: str,
        default: Any = _MISSING,
        *,
        pattern: re.Pattern[str] | None = None,
        choices: Iterable[str] | None = None,
        what: str = "",
    ) -> Any:
        value = self.raw(name, default)
        if value is None or (value is default and name not in self.data):
            return value
        if not isinstance(value, str):
            self.error(name, f"must be a string, got {_kind(value)} {value!r}")
            return None
        if choices is not None and value not in choices:
            self.error(name, f"must be one of {', '.join(choices)}, got {value!r}")
            return None
        if pattern is not None and not pattern.fullmatch(value):
            self.error(name, f"must be {what}, got {value!r}")
            return None
        return value

    def path_(self, name: str, default: Any = _MISSING) -> Path | None:
        value = self.string(name, default)
        if value is None or isinstance(value, Path):
            return value
        if not value.startswith("/"):
            self.error(name, f"must be an absolute path, got {value!r}")
            return None
        return Path(value)

    def boolean(self, name: str, default: Any = _MISSING) -> Any:
        value = self.raw(name, default)
        if value is None or isinstance(value, bool):
            return value
        self.error(name, f"must be true or false, got {_kind(value)} {value!r}")
        return None

    def integer(
        self, name: str, default: Any = _MISSING, *, lo: int | None = None, hi: int | None = None
    ) -> Any:
        value = self.raw(name, default)
        if value is None or (value is default and name not in self.data):
            return value
        if isinstance(value, bool) or not isinstance(value, int):
            self.error(name, f"must be an integer, got {_kind(value)} {value!r}")
            return None
        if (lo is not None and value < lo) or (hi is not None and value > hi):
            bounds = f"{lo}..{hi}" if hi is not None else f">= {lo}"
            self.error(name, f"must be within {bounds}, got {_short(value)}")
            return None
        return value

    def cents(self, name: str, default: Any = _MISSING, *, positive: bool = True) -> Any:
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
            self.error(name, f"must be {need} integer number of cents, got {_kind(value)}")
            return None
        if value < 0 or (positive and value == 0):
            self.error(name, f"must be {need} integer number of cents, got {value}")
            return None
        if value > MAX_CENTS:
            self.error(
                name, f"must be at most {MAX_CENTS} cents ($100,000,000), got {_short(value)}"
            )
            return None
        return value

    def seconds(self, name: str, default: Any, *, lo: float, hi: float) -> Any:
        """A finite number of seconds within lo..hi: inf, nan (TOML `inf`, `nan`, or 1e400,
        which reads as inf) and negatives are refused, never handed to the daemon."""
        value = self.raw(name, default)
        need = f"must be a positive number of seconds within {lo}..{hi}"
        if isinstance(value, bool) or not isinstance(value, int | float):
            self.error(name, f"{need}, got {_kind(value)} {value!r}")
            return None
        if not lo <= value <= hi:  # inf is out of range, nan compares false: both refused
            self.error(name, f"{need}, got {_short(value)}")
            return None
        return float(value)

    def pin(self, name: str, default: Any = _MISSING) -> Any:
        value = self.raw(name, default)
        if value is None or (value is default and name not in self.data):
            return value
        if isinstance(value, bool) or not isinstance(value, int) or value not in BCM_PINS:
            self.error(name, f"must be a BCM GPIO number 0..27, got {value!r}")
            return None
        return value

    def pins(self, name: str) -> tuple[int, ...]:
        value = self.raw(name, [])
        if not isinstance(value, list):
            self.error(name, f"must be an array of BCM GPIO numbers, got {_kind(value)}")
            return ()
        good: list[int] = []
        for i, pin in enumerate(value):
            if isinstance(pin, bool) or not isinstance(pin, int) or pin not in BCM_PINS:
                self.error(f"{name}[{i}]", f"must be a BCM GPIO number 0..27, got {pin!r}")
            else:
                good.append(pin)
        return tuple(good)

    def table(self, name: str) -> _Table | None:
        """The sub-table `name`, or None when absent or not a table."""
        value = self.raw(name, None)
        if value is None:
            return None
        if not isinstance(value, dict):
            self.error(name, f"must be a table ([{self.key(name)}]), got {_kind(value)}")
            return None
        return _Table(self.errors, self.key(name), value)

    def done(self, hints: Mapping[str, str] | None = None) -> None:
        for name in self.data:
            if name in self.known:
                continue
            if hints and name in hints:
                self.error(name, hints[name])
                continue
            close = difflib.get_close_matches(name, sorted(self.known), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            expected = ", ".join(sorted(self.known)) or "no keys"
            self.error(name, f"unknown key{hint}; expected one of: {expected}")


# --- sections -----------------------------------------------------------------------------------


def _service(root: _Table) -> ServiceConfig:
    t = root.table("service")
    if t is None:
        return ServiceConfig()
    d = ServiceConfig()
    cfg = ServiceConfig(
        state_dir=t.path_("state_dir", d.state_dir),
        runtime_dir=t.path_("runtime_dir", d.runtime_dir),
        socket_group=t.string(
            "socket_group", d.socket_group, pattern=_GROUP, what="a Unix group name"
        ),
        watchdog=t.boolean("watchdog", d.watchdog),
        tech_group=t.string("tech_group", d.tech_group, pattern=_GROUP, what="a Unix group name"),
        super_group=t.string(
            "super_group", d.super_group, pattern=_GROUP, what="a Unix group name"
        ),
        development=t.boolean("development", d.development),
    )
    if cfg.tech_group is not None and cfg.tech_group == cfg.super_group:
        t.error("super_group", "must differ from tech_group (read-only and acting roles)")
    t.done()
    return cfg


def _profile_option(t: _Table, name: str, profile: Profile | None, only: Profile, rule: str) -> Any:
    """An option that exists only in one profile's rules; elsewhere setting it is an error."""
    if not t.has(name):
        return None
    value = t.boolean(name)
    if profile is not None and profile is not only:
        t.error(name, f"applies only to profile {only} ({rule}); remove it for profile {profile}")
    return value


def _paigow(t: _Table) -> PaiGowConfig:
    rules = t.string("rules", choices=[p.value for p in Profile])
    profile = Profile(rules) if rules else None
    boxes = t.integer("boxes", PAIGOW_MAX_BOXES, lo=1, hi=PAIGOW_MAX_BOXES)
    commission = t.integer("commission_bp", STANDARD_COMMISSION_BP, lo=0, hi=STANDARD_COMMISSION_BP)

    steal = _profile_option(t, "steal_offered", profile, Profile.NZ, "NZ 9.6")
    notice = _profile_option(t, "multiples_notice", profile, Profile.ACT, "ACT 5.1(b)")
    # NSW 8.2 always lets a player/banker steal; ACT has no steal; NZ 9.6 only where offered.
    steal_offered = profile is Profile.NSW or (profile is Profile.NZ and bool(steal))
    # ACT 5.1(b): multiples of the minimum "unless specified otherwise".
    multiples_notice = profile is Profile.ACT and notice is not False

    unpayable = _profile_option(t, "unpayable_up", profile, Profile.ACT, "ACT 15.10")
    cobank_max = t.boolean("cobank_box_maximum", None)
    if cobank_max is not None and profile is Profile.NSW:
        t.error("cobank_box_maximum", "nsw has no co-banking (NSW 11.1); remove it")
    banks = t.integer("banks_per_box", 1, lo=1, hi=MAX_BANKS_PER_BOX)
    if banks not in (None, 1) and profile not in (None, Profile.NSW):
        t.error(
            "banks_per_box",
            f"must be 1 for profile {profile} (NZ 5.4 and ACT 6.7 allow one bank of two rounds;"
            " only NSW 6.7 allows up to 3)",
        )

    limits = None
    lt = t.table("limits")
    if lt is None:
        t.error("limits", "required table is missing ([paigow.limits] with minimum)")
    else:
        chip = lt.cents("chip_unit", 100)
        minimum = lt.cents("minimum")
        maximum = lt.cents("maximum", None)
        liability = lt.cents("house_liability", None)
        if liability is not None and profile is Profile.NSW:
            lt.error("house_liability", "nsw has no co-banking (NSW 11.1); remove it")
        for name, value in (("minimum", minimum), ("maximum", maximum)):
            if value is not None and chip and value % chip:
                lt.error(name, f"must be a whole number of {chip}-cent chips, got {value}")
        if minimum is not None and maximum is not None and maximum < minimum:
            lt.error("maximum", f"must be at least the minimum {minimum}, got {maximum}")
        lt.done()
        limits = PaiGowLimits(minimum, maximum, chip, liability)
    t.done()
    return PaiGowConfig(
        rules=profile,  # type: ignore[arg-type]  # None only when errors were recorded
        limits=limits,  # type: ignore[arg-type]
        boxes=boxes,
        commission_bp=commission,
        steal_offered=steal_offered,
        multiples_notice=multiples_notice,
        banks_per_box=banks,
        cobank_box_maximum=cobank_max,
        unpayable_up=unpayable is not False,
    )


def _paytable(
    t: _Table, name: str, categories: tuple[Category, ...], default: PayTable
) -> PayTable | None:
    text = t.string(name, None)
    if text is None:
        return default if not t.has(name) else None
    try:
        return _paytables().parse_paytable(text, categories)
    except InputError as exc:
        t.error(name, str(exc))
        return None


def _jackpot(t: _Table | None) -> JackpotConfig:
    if t is None:
        return JackpotConfig()
    d = JackpotConfig()
    enabled = t.boolean("enabled", False)
    pool_id = t.string(
        "pool_id",
        _MISSING if enabled else None,
        pattern=_POOL_ID,
        what="1-64 characters of A-Z a-z 0-9 _ . -",
    )
    wager = t.cents("wager", d.wager)
    increment = t.integer("increment_bp", _MISSING if enabled else 0, lo=0, hi=BASIS_POINTS)
    hidden = t.integer("hidden_bp", 0, lo=0, hi=BASIS_POINTS)
    if increment is not None and hidden is not None and increment + hidden > BASIS_POINTS:
        t.error("hidden_bp", f"increment_bp + hidden_bp must be at most {BASIS_POINTS}")
    seed = t.cents("seed", _MISSING if enabled else 0, positive=False)
    ceiling = t.cents("ceiling", None)
    if ceiling is not None and seed is not None and ceiling < seed:
        t.error("ceiling", f"must be at least the seed {seed}, got {ceiling}")

    awards = d.awards
    at = t.table("awards")
    if at is not None:
        from controller.games.uth.evaluator import Category
        from controller.games.uth.paytables import JackpotPayTable

        a = JackpotPayTable()

        def share(name: str, default: Fraction) -> Fraction | None:
            bp = at.integer(name, int(default * BASIS_POINTS), lo=0, hi=BASIS_POINTS)
            return None if bp is None else Fraction(bp, BASIS_POINTS)

        values = {
            "royal_minimum": at.cents("royal_minimum", a.royal_minimum, positive=False),
            "royal_share": share("royal_share_bp", a.royal_share),
            "straight_flush_minimum": at.cents(
                "straight_flush_minimum", a.straight_flush_minimum, positive=False
            ),
            "straight_flush_share": share("straight_flush_share_bp", a.straight_flush_share),
            "bonus_for_royal": at.cents("bonus_for_royal", 0, positive=False),
            "bonus_for_straight_flush": at.cents("bonus_for_straight_flush", 0, positive=False),
        }
        fixed = {
            cat: at.cents(cat.label, a.fixed[cat], positive=False)
            for cat in (Category.FOUR_OF_A_KIND, Category.FULL_HOUSE, Category.FLUSH)
        }
        at.done()
        if None not in values.values() and None not in fixed.values():
            awards = JackpotPayTable(**values, fixed=MappingProxyType(fixed))  # type: ignore[arg-type]
    t.done()
    return JackpotConfig(
        enabled=enabled,
        pool_id=pool_id,
        wager=wager,
        increment_bp=increment,
        hidden_bp=hidden,
        seed=seed,
        ceiling=ceiling,
        awards=awards,
    )


def _uth(t: _Table) -> UthConfig:
    boxes = t.integer("boxes", UTH_MAX_BOXES, lo=1, hi=UTH_MAX_BOXES)
    method = t.string("deal_method", "shuffler", choices=DEAL_METHODS)
    decks = t.integer("decks", 2 if method == "shuffler" else 1, lo=1, hi=2)
    if method == "shoe" and decks == 2:
        t.error("decks", "a card shoe holds a single deck (rule 2.4.1): use 1 with a shoe")

    limits = None
    lt = t.table("limits")
    if lt is None:
        t.error("limits", "required table is missing ([uth.limits] with ante_min, ante_max, ...)")
    else:
        chip = lt.cents("chip_unit", 100)
        v = {n: lt.cents(n) for n in ("ante_min", "ante_max", "trips_min", "trips_max")}
        for name, value in v.items():
            if value is not None and chip and value % chip:
                lt.error(name, f"must be a whole number of {chip}-cent chips, got {value}")
        for lo, hi in (("ante_min", "ante_max"), ("trips_min", "trips_max")):
            if v[lo] is not None and v[hi] is not None and v[hi] < v[lo]:
                lt.error(hi, f"must be at least {lo} {v[lo]}, got {v[hi]}")
        lt.done()
        limits = UthLimits(**v, chip_unit=chip)

    p = _paytables()
    blind, trips = p.BLIND_PAYTABLE, p.TRIPS_PAYTABLE
    pt = t.table("paytables")
    if pt is not None:
        blind = _paytable(pt, "blind", p.BLIND_CATEGORIES, p.BLIND_PAYTABLE)
        trips = _paytable(pt, "trips", p.TRIPS_CATEGORIES, p.TRIPS_PAYTABLE)
        pt.done()
    jackpot = _jackpot(t.table("jackpot"))
    t.done()
    return UthConfig(
        limits=limits,  # type: ignore[arg-type]  # None only when errors were recorded
        boxes=boxes,
        blind_paytable=blind,  # type: ignore[arg-type]
        trips_paytable=trips,  # type: ignore[arg-type]
        deal_method=method,
        decks=decks,
        jackpot=jackpot,
    )


_SERIAL_DEFAULTS = {
    "shaker": ("/dev/tablectl-shaker", 115200),
    "shuffler": ("/dev/tablectl-shuffler", 115200),
    "meter": ("/dev/tablectl-meter", 9600),  # Alpha protocol: 9600 7E1
}


def _serial(t: _Table, device: str) -> SerialConfig:
    port, baud = _SERIAL_DEFAULTS[device]
    hexid = "4 lowercase hex digits, e.g. '0403'"
    cfg = SerialConfig(
        port=t.string("port", port, pattern=re.compile(r"/\S+"), what="an absolute device path"),
        baud=t.integer("baud", baud),  # one of BAUD_RATES, checked below
        usb_vendor=t.string("usb_vendor", None, pattern=_USB_ID, what=hexid),
        usb_product=t.string("usb_product", None, pattern=_USB_ID, what=hexid),
        usb_serial=t.string(
            "usb_serial", None, pattern=re.compile(r"[!-~]{1,64}"), what="printable ASCII"
        ),
        answer_timeout_ms=t.integer("answer_timeout_ms", 1000, lo=10, hi=60_000),
    )
    if cfg.baud is not None and cfg.baud not in BAUD_RATES:
        t.error("baud", f"must be one of {', '.join(map(str, BAUD_RATES))}, got {cfg.baud}")
    if (cfg.usb_vendor is None) != (cfg.usb_product is None):
        t.error("usb_product", "usb_vendor and usb_product go together (the udev rule needs both)")
    t.done()
    return cfg


def _gpio(t: _Table) -> GpioConfig:
    factory = t.string("pin_factory", "lgpio", choices=PIN_FACTORIES)
    keypad: dict[str, int] = {}
    kt = t.table("keypad")
    if kt is not None:
        for action in kt.data:
            if not _ACTION.fullmatch(action):
                kt.error(action, "action names are lowercase words, e.g. new_round")
            pin = kt.pin(action)
            if pin is not None:
                keypad[action] = pin
        kt.done()
    cfg = GpioConfig(
        pin_factory=factory,
        chung=t.pins("chung"),
        off=t.pins("off"),
        bet_sensor=t.pins("bet_sensor"),
        lamp=t.pins("lamp"),
        keypad=MappingProxyType(keypad),
        table_closed=t.pin("table_closed", None),
        debounce_ms=t.integer("debounce_ms", 20, lo=1, hi=1000),
    )
    # No pin may serve two inputs/outputs.
    owner: dict[int, str] = {}
    uses = [
        (f"{n}[{i}]", p)
        for n in ("chung", "off", "bet_sensor", "lamp")
        for i, p in enumerate(getattr(cfg, n))
    ]
    uses += [(f"keypad.{a}", p) for a, p in keypad.items()]
    if cfg.table_closed is not None:
        uses.append(("table_closed", cfg.table_closed))
    for name, pin in uses:
        if pin in owner:
            t.error(name, f"GPIO{pin} is already used by {t.key(owner[pin])}")
        else:
            owner[pin] = name
    t.done()
    return cfg


def _devices(root: _Table, game: str | None, game_cfg: Any) -> DevicesConfig:
    t = root.table("devices")
    if t is None:
        t = _Table(root.errors, "devices", {})
    simulate = t.boolean("simulate", False)
    uses = {"shaker": game == "paigow", "meter": game is not None}
    uth = game_cfg if isinstance(game_cfg, UthConfig) else None
    uses["shuffler"] = uth is not None and uth.deal_method == "shuffler"
    serial: dict[str, SerialConfig | None] = {}
    for device in ("shaker", "shuffler", "meter"):
        st = t.table(device)
        serial[device] = None
        if st is None:
            continue
        if game is not None and not uses[device]:
            shoe = " with deal_method shoe" if device == "shuffler" and uth else ""
            why = f"game {game}{shoe}"
            t.error(device, f"not used by {why}; remove [devices.{device}]")
        serial[device] = _serial(st, device)
    gt = t.table("gpio")
    gpio = _gpio(gt) if gt is not None else None
    t.done()

    boxes = getattr(game_cfg, "boxes", None)
    if gpio is not None and gt is not None and boxes is not None:
        wanted = {"paigow": ("chung", "off"), "uth": ("bet_sensor", "lamp")}[game]  # type: ignore[index]
        for name in ("chung", "off", "bet_sensor", "lamp"):
            given = gt.data.get(name, [])
            count = len(given) if isinstance(given, list) else 0
            if name not in wanted and count:
                gt.error(name, f"not used by game {game}; remove it")
            elif name in wanted and count and count != boxes:
                gt.error(name, f"needs one pin per box: {boxes} pins, got {count}")
        if game == "uth" and bool(gpio.lamp) != bool(gpio.bet_sensor):
            gt.error("lamp", "bet sensors and lamps go together: one lamp per bet sensor")

    if simulate is False and game is not None:
        # On real hardware the devices the game relies on must be configured.
        needed = [d for d in ("shaker", "shuffler") if uses[d]]
        if uth is not None and uth.jackpot.enabled:
            needed.append("meter")  # UTH 2.3: a progressive table shows its pool
        for device in needed:
            if serial[device] is None:
                t.error(device, f"required for game {game} on real hardware (or simulate = true)")
        if gpio is None:
            t.error("gpio", "required on real hardware (or simulate = true)")
        elif boxes is not None:
            wired = ["chung", "off"] if game == "paigow" else []
            if uth is not None and uth.jackpot.enabled:
                wired = ["bet_sensor", "lamp"]  # 15.2.4: the jackpot wager is seen by a sensor
            for name in wired:
                if not getattr(gpio, name):
                    root.errors.add(f"devices.gpio.{name}", f"required: one pin per box ({boxes})")
            if gpio.pin_factory == "mock":
                root.errors.add("devices.gpio.pin_factory", "mock pins only with simulate = true")
    return DevicesConfig(simulate=simulate, gpio=gpio, **serial)


def _link(root: _Table, table_id: str | None) -> LinkConfig:
    t = root.table("link")
    client_default = f"tablectl-{table_id or ''}"
    if t is None:
        return LinkConfig(client_id=client_default)
    enabled = t.boolean("enabled", False)
    host = t.string("host", _MISSING if enabled else None, pattern=_HOST, what="a host name")
    tls = None
    tt = t.table("tls")
    if tt is not None:
        tls = TlsConfig(ca=tt.path_("ca"), cert=tt.path_("cert", None), key=tt.path_("key", None))  # type: ignore[arg-type]
        if (tls.cert is None) != (tls.key is None):
            tt.error("key", "cert and key go together (client certificate authentication)")
        tt.done()
    port = t.integer("port", 8883 if tls else 1883, lo=1, hi=65535)
    username = t.string(
        "username", None, pattern=re.compile(r"[!-~]{1,128}"), what="printable ASCII"
    )
    password_file = t.path_("password_file", None)
    if password_file is not None and username is None:
        t.error("password_file", "needs a username")
    cfg = LinkConfig(
        enabled=enabled,
        host=host,
        port=port,
        tls=tls,
        username=username,
        password_file=password_file,
        pool_timeout_s=t.seconds("pool_timeout_s", 5.0, lo=POOL_TIMEOUT_S[0], hi=POOL_TIMEOUT_S[1]),
        client_id=t.string(
            "client_id", client_default, pattern=_CLIENT_ID, what="1-64 of A-Z a-z 0-9 _ -"
        ),
    )
    t.done(
        hints={
            "password": "secrets never go in this file: put it in a file readable only"
            " by the service and set password_file"
        }
    )
    return cfg


def validate_text(text: str, source: str = "table.toml") -> TableConfig:
    """Parse and check a configuration; ConfigError lists every problem found."""
    errors = _Errors(source)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError([f"{source}: not valid TOML: {exc}"]) from None
    root = _Table(errors, "", data)
    table_id = root.string("table_id", pattern=_TABLE_ID, what="1-32 characters of A-Z a-z 0-9 _ -")
    game = root.string("game", choices=GAMES)
    service = _service(root)

    sections: dict[str, Any] = {}
    for name, reader in (("paigow", _paigow), ("uth", _uth)):
        t = root.table(name)
        if t is None:
            if game == name:
                errors.add(name, f"required table [{name}] is missing for game {name}")
            continue
        if game is not None and game != name:
            errors.add(name, f"the table plays {game}: remove [{name}]")
            continue
        sections[name] = reader(t)
    devices = _devices(root, game, sections.get(game or ""))
    link = _link(root, table_id)
    root.done()
    if errors.lines:
        raise ConfigError(errors.lines)
    return TableConfig(
        table_id=table_id,
        game=game,
        service=service,
        devices=devices,
        link=link,
        paigow=sections.get("paigow"),
        uth=sections.get("uth"),
    )


def load_config(path: str | Path = DEFAULT_PATH) -> TableConfig:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ConfigError([f"{path}: cannot read: {reason}"]) from None
    return validate_text(text, str(path))


# --- JSON view ----------------------------------------------------------------------------------


def _jsonable(value: Any) -> Any:
    paytables = sys.modules.get(_UTH_PAYTABLES)  # only loaded if the config holds UTH values
    if isinstance(value, Fraction | Path) or (paytables and isinstance(value, paytables.Odds)):
        return str(value)
    if isinstance(value, Enum):
        return value.value
    if is_dataclass(value) and not isinstance(value, type):
        return {f.name: _jsonable(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, Mapping):
        return {
            # Category keys (pay tables, awards) by their JSON label, e.g. "four_of_a_kind".
            (k.label if isinstance(k, Enum) and hasattr(k, "label") else str(k)): _jsonable(v)
            for k, v in value.items()
        }
    if isinstance(value, tuple | list):
        return [_jsonable(v) for v in value]
    return value


def config_json(cfg: TableConfig) -> dict[str, Any]:
    """The configuration as plain JSON (for `tablectl status` and the log); no secrets in it,
    only the password file's path."""
    out = _jsonable(cfg)
    game = cfg.paigow if cfg.game == "paigow" else cfg.uth
    out["boxes"] = game.boxes if game else None
    return out
