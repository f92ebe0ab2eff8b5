"""The table's configuration as frozen dataclasses: `TableConfig` and its sections.

The device sections (`DevicesConfig`, `SerialConfig`, `GpioConfig`) are the devices' own
(devices/config.py); the games' are the round machines' own (`PaiGowConfig` in
controller/rounds/paigow/state.py, `UthConfig` in controller/rounds/uth/state.py: one definition
each, built by games.py from the file). This module holds the table's, the link's and the UTH
jackpot section as written (`JackpotConfig`, which the UTH machine's pool is built from).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from controller.games.paigow.profiles import Profile
from controller.journal.config import JournalConfig
from controller.rounds.keypads import keypad_actions
from devices.config import DevicesConfig, GameNeeds

if TYPE_CHECKING:
    from controller.games.uth.jackpot import PoolState
    from controller.games.uth.paytables import JackpotPayTable
    from controller.rounds.paigow.state import PaiGowConfig
    from controller.rounds.uth.state import UthConfig

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


# The largest jackpot wager a table may be configured with (cents: $1,000.00): head office's
# default `[service] max_jackpot_wager` (headoffice/config.py), above which it refuses every
# increment of the wager (UTH 15.2.3). A larger one could only play as a local jackpot no head
# office accepts; a test keeps the two equal (tests/config/test_config.py).
MAX_JACKPOT_WAGER = 100_000

@dataclass(frozen=True)
class JackpotConfig:
    enabled: bool = False
    pool_id: str | None = None
    wager: int = 100  # UTH 15.2.3: the amount of a jackpot wager
    increment_bp: int = 0  # share of each jackpot wager added to the meter
    hidden_bp: int = 0  # share added to the hidden reserve
    seed: int = 0  # the meter after a Royal Flush reset (UTH 15.2.5)
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
    jackpot: JackpotConfig | None = None  # a UTH table's [uth.jackpot] as written

    @property
    def boxes(self) -> int:
        game = self.paigow if self.game == "paigow" else self.uth
        assert game is not None
        return game.boxes

    @property
    def needs(self) -> GameNeeds:
        """What this table's game asks of the devices (devices/build.py builds from it)."""
        if self.paigow is not None:
            section = {"profile": self.paigow.profile, "boxes": self.paigow.boxes}
        else:
            assert self.uth is not None and self.jackpot is not None
            section = {
                "boxes": self.uth.boxes,
                "deal_method": self.uth.deal_method.value,
                "decks": len(self.uth.decks),
                "jackpot": self.jackpot.enabled,
            }
        needs = game_needs(self.game, section)
        assert needs is not None
        return needs


def game_needs(game: str | None, section: Mapping[str, Any] | None) -> GameNeeds | None:
    """What the configured game asks of the devices, from its section's values as read
    (profile, boxes, deal_method, decks, jackpot; a bad value is None, a missing section None):
    the devices' problems are reported in the same pass as the game's."""
    if game is None:
        return None
    s = section or {}
    uth = section is not None and game == "uth"
    jackpot = uth and bool(s.get("jackpot"))
    unused: dict[str, str] = {}
    if game != "paigow":
        unused["shaker"] = f"game {game}"
    if not uth or s.get("deal_method") != "shuffler":
        unused["shuffler"] = f"game {game}" + (" with deal_method shoe" if uth else "")
    required = [d for d in ("shaker", "shuffler") if d not in unused]
    if jackpot:
        required.append("meter")  # UTH 2.3: a progressive table shows its pool
    if game == "paigow":
        groups = wired = ("chung", "off")
    else:
        groups = ("bet_sensor", "lamp")
        wired = groups if jackpot else ()  # UTH 15.2.4: the jackpot wager is seen by a sensor
    return GameNeeds(
        game=game,
        cut_die=section is not None and game == "paigow" and s.get("profile") is Profile.NSW,
        decks=s.get("decks") if uth else 1,  # UTH 4.2: one deck, or two alternating
        boxes=s.get("boxes"),
        unused=MappingProxyType(unused),
        required=tuple(required),
        groups=groups,
        wired=wired,
        keypad=keypad_actions(game),  # issue 13: a button no machine handles is a config error
    )
