"""The Pai Gow round machine's configuration and its JSON-native state.

Every field of `PaiGowState` is a JSON value (str, int, bool, None, list, dict with string keys),
so `to_json`/`from_json` round-trip exactly and the journal's snapshot of a state is the state.
Transitions never mutate a state: they build a new one with `dataclasses.replace` and fresh lists.
docs/rounds-paigow.md describes the phases and every field.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from controller.games.paigow.bank import MAX_BOXES, BankHolder, BankState
from controller.games.paigow.cuts import Cut
from controller.games.paigow.money import TableMoney
from controller.games.paigow.profiles import Profile
from controller.rounds.base import json_copy
from controller.rounds.cards import CardsConfig
from shared.errors import InputError

JSON = dict[str, Any]

class Phase(StrEnum):
    """The machine's phase (`status()["state"]`); the values are in snapshots: never change."""

    CLOSED = "closed"  # table closed (key switch); no round open
    BETTING = "betting"  # round N open: bank, OFF boxes, wagers, cut nomination, steal
    OFF_DRAW = "off_draw"  # between rounds: the shaker draws the box to remove (NSW 15.9, NZ 12.10)
    CUTTING = "cutting"  # NZ only: waiting for the cut (supervisor or random selection, 9.3A)
    SHAKING = "shaking"  # no more bets: waiting for the dice
    ANNOUNCED = "announced"  # first box and cut on the display: waiting for the delivery
    SETTING = "setting"  # tiles delivered: waiting for the dealer to enter the result


PHASES = tuple(Phase)
IN_ROUND = (Phase.CUTTING, Phase.SHAKING, Phase.ANNOUNCED, Phase.SETTING)  # no more bets..result


DEFAULT_MONEY = TableMoney(minimum=1000, maximum=500_000)  # cents; chip unit 100, 5% commission


@dataclass(frozen=True)
class PaiGowConfig:
    """One table's Pai Gow settings (from table.toml); never changes while the daemon runs.

    steal_offered: NZ 9.6 "where the casino operator offers this as an option of play".
    approved_cuts: NZ "Approved Cut" subset of Appendix 5; None = all of them.
    max_banks_per_box: NSW 6.7 House discretion (1..3); 1 for nz and act.
    multiples_notice: ACT 5.1(b) wagers in multiples of the minimum (settled per ACT 15.10).
    clockwise_delivery: the direction the cut's groups go from the first box; None: the
      profile's (ACT 9.1 clockwise; NSW/NZ do not say: counter-clockwise, as counted).
    miscount_make_up: NSW/ACT, which have no miscount rule, apply NZ 12.17 (`dealer.miscount`);
      NZ always does. docs/rounds-paigow.md, "What a regulator should confirm".
    """

    profile: Profile
    boxes: int = MAX_BOXES
    money: TableMoney = DEFAULT_MONEY
    max_banks_per_box: int = 1
    steal_offered: bool = True
    approved_cuts: tuple[Cut, ...] | None = None
    multiples_notice: bool = True
    clockwise_delivery: bool | None = None
    miscount_make_up: bool = False
    cards: CardsConfig = field(default_factory=CardsConfig)  # [cards]: NSW 9.1, 16.1

    def __post_init__(self) -> None:
        # BankState validates boxes and max_banks_per_box against the profile.
        BankState(self.profile, n_boxes=self.boxes, max_banks_per_box=self.max_banks_per_box)
        if self.approved_cuts is not None and self.profile is not Profile.NZ:
            raise InputError("an approved subset of cuts is an NZ rule (9.3A)")


def bank_json(bank: BankState) -> JSON:
    return {
        "holder": bank.holder.value,
        "box": bank.box,
        "rounds_in_bank": bank.rounds_in_bank,
        "banks_on_box": bank.banks_on_box,
        "rounds_played": bank.rounds_played,
    }


def bank_state(config: PaiGowConfig, data: JSON) -> BankState:
    return BankState(
        config.profile,
        holder=BankHolder(data["holder"]),
        box=data["box"],
        rounds_in_bank=data["rounds_in_bank"],
        banks_on_box=data["banks_on_box"],
        rounds_played=data["rounds_played"],
        n_boxes=config.boxes,
        max_banks_per_box=config.max_banks_per_box,
    )


def _house() -> JSON:
    return {"holder": "house", "box": 1, "rounds_in_bank": 0, "banks_on_box": 0, "rounds_played": 0}


def _no_last_round() -> JSON:
    return {"recorded": False, "players": {}, "controllers": {}}


@dataclass(frozen=True)
class PaiGowState:
    """Where the table is. Round fields (from `cut_choice` on) are reset when a round opens.

    bank: the bank now (it changes in betting as players take it or give it up).
    bank_at_open: the bank when the round opened; eligibility is judged against it, so a dealer's
      correction within one betting phase never resets a round limit.
    banker: {"player": name|None, "funds": cents|None} while a player banks or co-banks;
      banker_at_open the same at the opening (a void round restores both).
    wagers: [{box, player, amount, seated, distance_to_dealer}] as keyed by the dealer.
    last_round: the previous completed round's wagers, for bank eligibility:
      {"recorded": bool, "players": {name: [boxes]}, "controllers": {"box": name}}.
    cut_choice: {"cut", "options", "by": "banker"|"supervisor"|"random"} before the dice.
    cut: the round's cut once decided: {"cut", "options": [..]|None, "source"}.
    off_rolls: dice totals consumed by an OFF-box draw in progress.
    display: what the table display shows now (re-issued by resume()).
    """

    phase: Phase = Phase.CLOSED
    number: int = 1
    bank: JSON = field(default_factory=_house)
    bank_at_open: JSON = field(default_factory=_house)
    banker: JSON | None = None
    banker_at_open: JSON | None = None
    off_boxes: list[int] = field(default_factory=list)
    last_round: JSON = field(default_factory=_no_last_round)
    display: JSON = field(default_factory=lambda: {"mode": "closed", "text": "TABLE CLOSED"})
    opened_at: str | None = None
    wagers: list[JSON] = field(default_factory=list)
    cut_choice: JSON | None = None
    steal: int = 0
    reshakes: int = 0
    dice: JSON | None = None
    first_box: int | None = None
    cut: JSON | None = None
    off_rolls: list[int] = field(default_factory=list)
    fault: str | None = None
    # Hands voided by their player (NSW 15.3.1).
    void_hands: list[JSON] = field(default_factory=list)
    controls: JSON = field(default_factory=dict)  # NZ 7.2: player -> the one box they control
    miscounts: list[JSON] = field(default_factory=list)  # NZ 12.17: wagers recounted
    lajas: list[JSON] = field(default_factory=list)  # lajas and re-shuffles before the deal
    # ACT 5.1(c): players told that further wagers under the minimum are returned regardless of
    # the result; kept while the table is open (table.close forgets them).
    advised: list[str] = field(default_factory=list)
    patrons: JSON = field(default_factory=dict)  # "<box>/<player>" -> Player Card (cards.py)
    card_seq: int = 0  # requests to head office about cards so far (each one's `req`)
    offline_used: JSON = field(default_factory=dict)  # card -> offline allowance used


FIELDS = tuple(f.name for f in dataclasses.fields(PaiGowState))
# Fields added after journals were written (issue 13), with the value an older snapshot means;
# at that value they stay out of a snapshot, so snapshots of ordinary play keep their bytes.
_ADDED: JSON = {"void_hands": [], "controls": {}, "miscounts": [], "lajas": [], "advised": [],
                "patrons": {}, "card_seq": 0, "offline_used": {}}


def state_to_json(state: PaiGowState) -> JSON:
    data = {k: json_copy(getattr(state, k)) for k in FIELDS}  # the caller may keep or mutate it
    return {k: v for k, v in data.items() if k not in _ADDED or v != _ADDED[k]}


def state_from_json(data: JSON) -> PaiGowState:
    """Rebuild a state from its snapshot; InputError for a snapshot this version did not write."""
    if isinstance(data, dict):
        data = {**json_copy(_ADDED), **data}
    if not isinstance(data, dict) or set(data) != set(FIELDS):
        keys = sorted(data) if isinstance(data, dict) else type(data).__name__
        raise InputError(f"not a Pai Gow round state snapshot: {keys}")
    if data["phase"] not in PHASES:
        raise InputError(f"unknown Pai Gow phase {data['phase']!r} in snapshot")
    return PaiGowState(**{**json_copy(data), "phase": Phase(data["phase"])})
