"""The table's configuration as frozen dataclasses: `TableConfig` and its sections.

The device sections (`DevicesConfig`, `SerialConfig`, `GpioConfig`) are the devices' own
(devices/config.py); this module holds the table's, the games' and the link's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from controller.config.journal import JournalConfig
from controller.games.paigow.bank import MAX_BOXES as PAIGOW_MAX_BOXES
from controller.games.paigow.money import STANDARD_COMMISSION_BP, TableMoney
from controller.games.paigow.profiles import Profile
from controller.games.uth.deal import MAX_BOXES as UTH_MAX_BOXES
from controller.rounds.keypads import keypad_actions
from devices.config import DevicesConfig, GameNeeds

if TYPE_CHECKING:
    from controller.games.uth.jackpot import PoolState
    from controller.games.uth.paytables import JackpotPayTable, PayTable

BASIS_POINTS = 10_000


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
    awards: JackpotPayTable = field(default_factory=lambda: paytables().JackpotPayTable())

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


# The UTH rules modules are imported only when a UTH section is read: the evaluator builds its
# lookup tables at import (~0.3 s, several MB), which a Pai Gow table never needs.
def paytables() -> Any:
    import controller.games.uth.paytables as paytables

    return paytables


@dataclass(frozen=True)
class UthConfig:
    limits: UthLimits
    boxes: int = UTH_MAX_BOXES
    blind_paytable: PayTable = field(default_factory=lambda: paytables().BLIND_PAYTABLE)
    trips_paytable: PayTable = field(default_factory=lambda: paytables().TRIPS_PAYTABLE)
    deal_method: str = "shuffler"
    decks: int = 2
    jackpot: JackpotConfig = field(default_factory=JackpotConfig)
    exposure_preflop_only: bool = False  # UTH 11.4.1 reading (docs/rounds-uth.md, regulator)


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
    journal: JournalConfig = field(default_factory=JournalConfig)

    @property
    def boxes(self) -> int:
        game = self.paigow if self.game == "paigow" else self.uth
        assert game is not None
        return game.boxes

    @property
    def needs(self) -> GameNeeds:
        """What this table's game asks of the devices (devices/build.py builds from it)."""
        needs = game_needs(self.game, self.paigow if self.game == "paigow" else self.uth)
        assert needs is not None
        return needs


def game_needs(game: str | None, game_cfg: Any) -> GameNeeds | None:
    """What the configured game asks of the devices (`game_cfg` None: its section is bad)."""
    if game is None:
        return None
    uth = game_cfg if isinstance(game_cfg, UthConfig) else None
    paigow = game_cfg if isinstance(game_cfg, PaiGowConfig) else None
    jackpot = uth is not None and uth.jackpot.enabled
    unused: dict[str, str] = {}
    if game != "paigow":
        unused["shaker"] = f"game {game}"
    if uth is None or uth.deal_method != "shuffler":
        unused["shuffler"] = f"game {game}" + (" with deal_method shoe" if uth else "")
    required = [d for d in ("shaker", "shuffler") if d not in unused]
    if jackpot:
        required.append("meter")  # UTH 2.3: a progressive table shows its pool
    if game == "paigow":
        groups = wired = ("chung", "off")
    else:
        groups = ("bet_sensor", "lamp")
        wired = groups if jackpot else ()  # 15.2.4: the jackpot wager is seen by a sensor
    return GameNeeds(
        game=game,
        cut_die=paigow is not None and paigow.rules is Profile.NSW,  # NSW 2.4
        decks=uth.decks if uth is not None else 1,  # UTH 4.2: one deck, or two alternating
        boxes=getattr(game_cfg, "boxes", None),
        unused=MappingProxyType(unused),
        required=tuple(required),
        groups=groups,
        wired=wired,
        keypad=keypad_actions(game),  # issue 13: a button no machine handles is a config error
    )
