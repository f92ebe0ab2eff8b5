"""Wagers keyed by the dealer (optional data: the table has no chip sensors)."""

from __future__ import annotations

from dataclasses import replace

from controller.games.paigow.bank import BankHolder, BankState, accepts_wager
from controller.games.paigow.profiles import Profile
from controller.games.paigow.wagers import (
    MAX_PLAYERS_PER_BOX,
    accept,
    box_controller,
    cover_breach,
    layout_breach,
)
from controller.rounds import fields
from controller.rounds.base import Effect, Now
from controller.rounds.paigow.carded import card_for_wager
from controller.rounds.paigow.core import (
    BANKER_BOX_RULE,
    HOUSE_BOX_RULE,
    OFF_RULE,
    PLAYERS_RULE,
    UNDER_MINIMUM_RULE,
    Data,
    Result,
    bank_of,
    bankers,
    log,
    return_wagers,
)
from controller.rounds.paigow.result import to_wager
from controller.rounds.paigow.state import JSON, PaiGowConfig, PaiGowState
from shared.errors import InputError


def dealer_wager(config: PaiGowConfig, state: PaiGowState, data: Data, now: Now) -> Result:
    row = {
        "box": fields.box(data, config.boxes),
        "player": fields.text(data, "player"),
        "amount": fields.integer(data, "amount"),
        "seated": fields.flag(data, "seated", False),
        "distance_to_dealer": fields.integer(data, "distance_to_dealer", 0),
    }
    others = [w for w in state.wagers if (w["box"], w["player"]) != (row["box"], row["player"])]
    problem = wager_problem(config, state, bank_of(config, state), row, others)
    if problem:
        raise InputError(problem)
    state, card_fx = card_for_wager(config, state, data, row)  # NSW 9.1, 16.1
    record = state.patrons.get(f"{row['box']}/{row['player']}")
    if record is not None:
        row = {**row, "card": record["card"]}  # the journal names each wager's card
    state = replace(state, wagers=[*others, row])
    on_card = f" on card {row['card']}" if "card" in row else ""
    text = f"wager of {row['player']} on box {row['box']}: {row['amount']} c{on_card}"
    if row["player"] in state.advised and row["amount"] < config.money.minimum:
        text += f"; under the minimum: returned regardless of the result ({UNDER_MINIMUM_RULE})"
    return state, [*card_fx, log(text)]


def wager_problem(
    config: PaiGowConfig, state: PaiGowState, bank: BankState, row: JSON, others: list[JSON]
) -> str | None:
    box, player = row["box"], row["player"]
    if box in state.off_boxes:
        return f"box {box} is OFF ({OFF_RULE})"
    if bank.holder is not BankHolder.HOUSE and player in bankers(state):
        return f"{player} holds the bank: the bank's wager is its own (NSW 9.15, NZ 11.2(b))"
    if not accepts_wager(bank, box):
        rule = HOUSE_BOX_RULE if bank.holder is BankHolder.HOUSE else BANKER_BOX_RULE
        return f"box {box} holds the bank's tiles: no wagers there ({rule})"
    players = {w["player"] for w in others if w["box"] == box} | {player}
    if len(players) > MAX_PLAYERS_PER_BOX:
        return f"box {box} already has {MAX_PLAYERS_PER_BOX} players ({PLAYERS_RULE})"
    try:
        accept(to_wager(row), config.profile, bank.holder, config.money,
               config.multiples_notice)
    except InputError as e:
        return str(e)
    # The layout as a whole (NSW 9.14, ACT 7.3, NZ 5.1(c)/ACT 5.4): refused only if this
    # wager is what breaks it.
    if _layout_breach(config, bank, others) is None:
        breach = _layout_breach(config, bank, [*others, row])
        if breach is not None:
            return breach[1]
    return None


def _layout_breach(
    config: PaiGowConfig, bank: BankState, rows: list[JSON]
) -> tuple[int, str] | None:
    wagers = [to_wager(r) for r in rows]
    money, notice = config.money, config.multiples_notice
    accepted = [accept(w, config.profile, bank.holder, money, notice) for w in wagers]
    return layout_breach(wagers, config.profile, bank.holder) or cover_breach(
        accepted, bank.holder, money)


def layout_returned(config: PaiGowConfig, state: PaiGowState, bank: BankState) -> Result:
    """Return, one at a time, the wager each layout check names until none breaks it (a bank
    change or a withdrawal can leave one: NSW 9.14, ACT 7.3, NZ 5.1(c)/ACT 5.4)."""
    effects: list[Effect] = []
    while (breach := _layout_breach(config, bank, state.wagers)) is not None:
        index, why = breach
        w = state.wagers[index]
        effects.append(log(f"wager of {w['player']} on box {w['box']} ({w['amount']} c)"
                           f" returned: {why}"))
        state = replace(state, wagers=[r for i, r in enumerate(state.wagers) if i != index])
    return state, effects


def dealer_wager_remove(config: PaiGowConfig, state: PaiGowState, data: Data, now: Now) -> Result:
    box, player = fields.box(data, config.boxes), fields.text(data, "player")
    if not any((w["box"], w["player"]) == (box, player) for w in state.wagers):
        raise InputError(f"no wager of {player} on box {box}")
    return return_wagers(
        state, lambda w: (w["box"], w["player"]) != (box, player), "withdrawn"
    )

# -- NZ 7.2: one controlled box per player; the others set the house way by the dealer ------


def dealer_control(config: PaiGowConfig, state: PaiGowState, data: Data, now: Now) -> Result:
    """dealer.control {player, box}: the box a player who would control several chose to
    control, indicated "before the beginning of the round" (NZ 7.2): in betting only."""
    if config.profile is not Profile.NZ:
        why = ("NSW 9.14 refuses the wager that would give a player a second box"
               if config.profile is Profile.NSW else "ACT 7.3 lets a lone player set both boxes")
        raise InputError(f"choosing one controlled box is NZ 7.2; profile {config.profile}:"
                         f" {why}")
    player = fields.text(data, "player")
    box = fields.box(data, config.boxes)
    on_box = [to_wager(w) for w in state.wagers if w["box"] == box]
    if not any(w.player == player for w in on_box):
        raise InputError(f"{player} has no wager on box {box} (NZ 7.2)")
    if box_controller(on_box, config.profile) != player:
        raise InputError(f"{player} does not control box {box} (NZ 7.1(a)): nothing to choose")
    state = replace(state, controls={**state.controls, player: box})
    return state, [log(f"{player} controls box {box}; any other box they would control is"
                       " set by the dealer the house way (NZ 7.2)")]
