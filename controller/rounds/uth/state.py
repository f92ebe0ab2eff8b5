"""The UTH round machine's configuration and its JSON-native state (docs/rounds-uth.md).

Every field of `UthState` is a JSON value (str, int, bool, None, list, dict with string keys), so
`to_json`/`from_json` round-trip exactly and the journal's snapshot of a state is the state.
Transitions never mutate a state: they build a new one with `dataclasses.replace` and fresh
containers. Cards are held as their text (`As`, `Td`) so a snapshot reads like the table.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from enum import StrEnum
from fractions import Fraction
from typing import Any

from controller.games.uth.deal import MAX_BOXES, DealMethod
from controller.games.uth.jackpot import PoolState
from controller.games.uth.paytables import JackpotPayTable
from controller.games.uth.settlement import SettlementRules
from controller.rounds.base import json_copy
from controller.rounds.cards import CardsConfig
from shared.errors import InputError

JSON = dict[str, Any]

class Phase(StrEnum):
    """The machine's phase (`status()["state"]`); the values are in snapshots: never change."""

    CLOSED = "closed"  # table closed (key switch)
    BETTING = "betting"  # wagers keyed, jackpot bet sensors live
    DEALING = "dealing"  # dealer pressed deal (7.1 no more bets); cards leaving the shuffler
    PREFLOP = "preflop"  # hole cards dealt: 4x / 3x / check / fold (9.1)
    FLOP = "flop"  # flop revealed: 2x / check / fold (9.2)
    RIVER = "river"  # turn and river revealed: 1x / fold (9.3)


CLOSED, BETTING, DEALING, PREFLOP, FLOP, RIVER = Phase
PHASES = tuple(Phase)
DECIDING = (PREFLOP, FLOP, RIVER)

# Status of the round's deck. Decks alternate (4.2): at the end of a round the shuffler is told
# to shuffle the next deck, which becomes the deck in play when it reports ready.
SHUFFLING = "shuffling"  # shuffle commanded, waiting for shuffler.ready
READY = "ready"  # shuffled, no card out yet
IN_PLAY = "in_play"  # this round's cards come from it

# Jackpot bet sensor lamps.
IDLE, BET, LOCKED, WIN = "idle", "bet", "locked", "win"


@dataclass(frozen=True)
class UthConfig:
    """One table's UTH settings (from table.toml); never changes while the daemon runs.

    linked: the jackpot pool lives at head office (issue 6); otherwise a standalone local pool
    (`pool` is its initial state). pool_timeout_ms: with the link, no valid ho.pool for this
    long puts the jackpot OFFLINE (11.11). jackpot_wager: the qualifying wager (15.2.3, 15.2.5).
    """

    boxes: int = MAX_BOXES
    decks: tuple[int, ...] = (1, 2)  # deck numbers as the shuffler names them
    deal_method: DealMethod = DealMethod.SHUFFLER
    rules: SettlementRules = field(default_factory=SettlementRules)
    jackpot_table: JackpotPayTable = field(default_factory=JackpotPayTable)
    jackpot_wager: int = 100
    pool_id: str = "uth"
    pool: PoolState = field(
        default_factory=lambda: PoolState(5_000_000, 5_000_000, increment=Fraction(1, 10))
    )
    linked: bool = False
    pool_timeout_ms: int = 5000
    chip_unit: int | None = None  # 6.1: the unit of wagers above the minimum, if the sign says
    exposure_preflop_only: bool = False  # 11.4.1 reading (docs: What a regulator should confirm)
    cards: CardsConfig = field(default_factory=CardsConfig)  # [cards] carded play (13.1)

    def __post_init__(self) -> None:
        if not 1 <= self.boxes <= MAX_BOXES:
            raise InputError(f"boxes: 1..{MAX_BOXES}, got {self.boxes}")
        if len(set(self.decks)) != len(self.decks) or len(self.decks) not in (1, 2):
            raise InputError(f"decks: one or two distinct decks (rule 4.2), got {self.decks!r}")
        if self.jackpot_wager <= 0 or self.pool_timeout_ms <= 0:
            raise InputError("jackpot_wager and pool_timeout_ms must be positive")
        if self.chip_unit is not None and self.chip_unit <= 0:
            raise InputError(f"chip_unit must be positive cents, got {self.chip_unit}")

    def next_deck(self, deck: int) -> int:
        """The deck after `deck`: two decks alternate (4.2); a single deck comes back."""
        return self.decks[(self.decks.index(deck) + 1) % len(self.decks)]


def pool_json(pool: PoolState) -> JSON:
    return {
        "amount": pool.amount,
        "seed": pool.seed,
        "increment": str(pool.increment),
        "hidden": str(pool.hidden),
        "reserve": pool.reserve,
        "ceiling": pool.ceiling,
        "carry": str(pool.carry),
        "reserve_carry": str(pool.reserve_carry),
    }


def pool_state(data: JSON) -> PoolState:
    return PoolState(
        amount=data["amount"],
        seed=data["seed"],
        increment=Fraction(data["increment"]),
        hidden=Fraction(data["hidden"]),
        reserve=data["reserve"],
        ceiling=data["ceiling"],
        carry=Fraction(data["carry"]),
        reserve_carry=Fraction(data["reserve_carry"]),
    )


def _dict() -> dict[str, Any]:
    return {}


def _list() -> list[Any]:
    return []


@dataclass(frozen=True)
class UthState:
    """Field by field in docs/rounds-uth.md. Box keys are strings ("1".."7") as in JSON."""

    phase: Phase
    round: int  # the round being played, or the next one while betting; contiguous from 1
    deck: int  # the deck this round is dealt from
    deck_status: str  # SHUFFLING | READY | IN_PLAY
    suspect: list[int] = field(default_factory=_list)  # 11.7.3: bad deck.check; recheck first
    wagers: dict[str, list[int]] = field(default_factory=_dict)  # box -> [ante, blind, trips]
    sensors: list[int] = field(default_factory=_list)  # boxes whose jackpot bet sensor is on
    cards: list[str] = field(default_factory=_list)  # this round's cards, in dispense order
    dispense: int = 0  # cards asked of the shuffler by dealer.deal (0: dealer deals by hand)
    dealt: bool = False  # the deal mapping has been applied (7.2/7.3)
    jackpot_boxes: list[int] = field(default_factory=_list)  # jackpot wagers locked (5.5)
    decisions: dict[str, str] = field(default_factory=_dict)  # box -> Decision text ("4x")
    checks: list[int] = field(default_factory=_list)  # boxes that checked this street
    jackpot: JSON = field(default_factory=_dict)  # link / pool status, see new_jackpot()
    pool: JSON = field(default_factory=_dict)  # standalone PoolState (pool_json)
    pool_at_lock: JSON | None = None  # standalone pool before this round's contributions
    pending_hits: list[JSON] = field(default_factory=_list)  # linked hits awaiting ho.award
    ledger: JSON = field(default_factory=_dict)  # jackpot money since the table started
    lamps: dict[str, str] = field(default_factory=_dict)  # box -> lamp, IDLE omitted
    display: JSON = field(default_factory=_dict)  # what the meter shows now
    void_hands: list[int] = field(default_factory=_list)  # 11.6.2: unwagered hands void
    jackpot_owners: dict[str, str] = field(default_factory=_dict)  # 15.2.1.1: box -> player
    dealt_by: str | None = None  # 12.2.3: "shoe" or "hand" once a supervisor switched from
    # the shuffler (the dealer enters each card, dealer.card); None: the configured method
    patrons: dict[str, JSON] = field(default_factory=_dict)  # box -> Player Card (cards.py)
    card_seq: int = 0  # requests to head office about cards so far (each one's `req`)
    offline_used: dict[str, int] = field(default_factory=_dict)  # card -> offline allowance

    def box_wagers(self) -> dict[int, tuple[int, int, int]]:
        return {int(b): (w[0], w[1], w[2]) for b, w in self.wagers.items()}

    @property
    def in_round(self) -> bool:
        """The first card is out: wagers are locked (5.5) and the round has a number."""
        return bool(self.cards)


def new_jackpot(config: UthConfig) -> JSON:
    """online: jackpot wagers accepted; disabled: the supervisor took the jackpot out (11.11);
    link_up: last link.up/link.down; version/last_pool_ms: the last valid ho.pool."""
    return {
        "online": not config.linked,
        "disabled": False,
        "link_up": False,
        "amount": config.pool.amount,
        "version": -1,
        "last_pool_ms": None,
    }


def new_ledger() -> JSON:
    """wagered: jackpot wagers locked net of cancellations (15.3.1); paid: awards paid;
    from_house: the part of `paid` and of resets the house funded (jackpot.py)."""
    return {"wagered": 0, "paid": 0, "from_house": 0}


def initial_state(config: UthConfig) -> UthState:
    # The first deck starts with a pending shuffle: resume() issues it at the first start.
    return UthState(
        phase=BETTING,
        round=1,
        deck=config.decks[0],
        deck_status=SHUFFLING,
        jackpot=new_jackpot(config),
        pool=pool_json(config.pool),
        ledger=new_ledger(),
        display=pool_display(config, config.pool.amount, online=not config.linked),
    )


def pool_display(config: UthConfig, amount: int, *, online: bool) -> JSON:
    if not online:
        return {"mode": "offline", "pool": config.pool_id}
    return {"mode": "pool", "pool": config.pool_id, "amount": amount}


FIELDS = tuple(f.name for f in dataclasses.fields(UthState))
# Fields added after journals were written (issue 13), with the value an older snapshot means.
_ADDED: JSON = {"void_hands": [], "jackpot_owners": {}, "dealt_by": None, "patrons": {},
               "card_seq": 0, "offline_used": {}}


def state_to_json(state: UthState) -> JSON:
    data = {k: json_copy(getattr(state, k)) for k in FIELDS}  # the caller may keep or mutate it
    # An added field at its default stays out: snapshots of ordinary play keep their bytes.
    return {k: v for k, v in data.items() if k not in _ADDED or v != _ADDED[k]}


def state_from_json(data: JSON) -> UthState:
    names = set(FIELDS)
    data = {**_ADDED, **data}  # a snapshot written before a field existed has its default
    if set(data) != names:
        raise InputError(f"UTH state fields differ: {sorted(set(data) ^ names)}")
    if data["phase"] not in PHASES:
        raise InputError(f"unknown UTH phase {data['phase']!r}")
    return UthState(**{**json_copy(data), "phase": Phase(data["phase"])})


def replace(state: UthState, **changes: Any) -> UthState:
    return dataclasses.replace(state, **changes)
