"""Who banks: the chung, the dealer's bank entries, the house taking over (NSW 6, NZ 5, ACT 6)."""

from __future__ import annotations

from dataclasses import replace

from controller.games.paigow.bank import (
    HOUSE_BOX,
    BankHolder,
    Candidate,
    bank_open,
    covers,
    house_banks,
    take_bank,
)
from controller.games.paigow.profiles import Profile
from controller.rounds import fields
from controller.rounds.base import Now
from controller.rounds.paigow.core import (
    BANKER_BOX_RULE,
    COVER_RULE,
    HOUSE_BANKS_RULE,
    HOUSE_BOX_RULE,
    OFF_RULE,
    SHARED_BANK_RULE,
    Data,
    Refused,
    Result,
    alarm,
    bank_of,
    banker_json,
    bankers,
    log,
    return_wagers,
)
from controller.rounds.paigow.state import PaiGowConfig, PaiGowState, Phase, bank_json, bank_state
from shared.errors import InputError


def chung_on(config: PaiGowConfig, state: PaiGowState, data: Data, now: Now) -> Result:
    box = fields.box(data, config.boxes)
    if state.phase != Phase.BETTING:
        return state, [log(f"chung on box {box} during {state.phase}: no change")]
    if box == bank_of(config, state).box:
        return state, [log(f"chung on box {box}: bank confirmed")]
    if box == HOUSE_BOX:
        return _house_takes(config, state, "house chung on box 1")
    return _take(config, state, box, BankHolder.PLAYER, data)


def chung_off(config: PaiGowConfig, state: PaiGowState, data: Data, now: Now) -> Result:
    box = fields.box(data, config.boxes)
    bank = bank_of(config, state)
    if state.phase == Phase.BETTING and bank.holder is not BankHolder.HOUSE and box == bank.box:
        return _house_takes(config, state, f"chung left box {box}")
    return state, [log(f"chung off box {box}: no change")]


def dealer_bank(config: PaiGowConfig, state: PaiGowState, data: Data, now: Now) -> Result:
    box = fields.box(data, config.boxes)
    try:
        holder = BankHolder(fields.text(data, "holder", "player"))
    except ValueError:
        raise InputError(f"holder {data.get('holder')!r}: player, co-bank or house") from None
    if holder is BankHolder.HOUSE:
        return _house_takes(config, state, "dealer")
    return _take(config, state, box, holder, data)


def dealer_house_bank(config: PaiGowConfig, state: PaiGowState, data: Data, now: Now) -> Result:
    return _house_takes(config, state, "dealer")


def _house_takes(config: PaiGowConfig, state: PaiGowState, why: str) -> Result:
    # Judged from the bank at the opening, so giving the bank up never resets a round limit.
    bank = house_banks(bank_state(config, state.bank_at_open))
    state = replace(state, bank=bank_json(bank), banker=None)
    state, effects = return_wagers(
        state, lambda w: w["box"] != HOUSE_BOX, f"the house banks on box 1 ({HOUSE_BOX_RULE})"
    )
    return state, [log(f"the house banks on box {HOUSE_BOX} ({why})"), *effects]


def _take(
    config: PaiGowConfig, state: PaiGowState, box: int, holder: BankHolder, data: Data
) -> Result:
    if box in state.off_boxes:
        raise Refused(f"box {box} is OFF ({OFF_RULE}): it cannot take the bank")
    funds = fields.integer(data, "funds", None)
    if funds is not None and funds < 0:
        raise InputError(f"funds {funds} are negative")
    player = fields.text(data, "player", None) or state.last_round["controllers"].get(str(box))
    shared = _shared_with(config, data, player)
    current = bank_of(config, state)
    opening = bank_state(config, state.bank_at_open)
    mid_bank = current == opening and not bank_open(opening)
    if mid_bank and current.holder is holder and current.box == box:
        # The holder declares this round's wager (NZ 11.2(b)); a finished bank asking for
        # another goes to take_bank, which applies the round limit (NSW 6.7).
        banker = banker_json(player, funds, shared)
        return replace(state, banker=banker), [log(f"box {box} bank wager: {funds} c")]
    holders = {player, *shared}
    others = sum(w["amount"] for w in state.wagers if w["player"] not in holders)
    candidate = _candidate(config, state, box, player, data, funds, others)
    try:
        bank = take_bank(opening, candidate, holder, other_wagers=others)
    except InputError as e:  # every refusal, each with its rule (bank.py)
        raise Refused(str(e)) from None
    state = replace(state, bank=bank_json(bank), banker=banker_json(player, funds, shared))
    state, effects = return_wagers(
        state,
        lambda w: w["box"] != box and (player is None or w["player"] != player),
        f"box {box} holds the bank ({BANKER_BOX_RULE})",
    )
    if shared:  # a player sharing the bank wagers on no other hand (ACT 6.6)
        state, sharers = return_wagers(
            state, lambda w: w["player"] not in shared,
            f"shares the bank ({SHARED_BANK_RULE[config.profile]})",
        )
        effects += sharers
    who = player or f"the player on box {box}"
    return state, [log(f"{who} takes the bank on box {box} as {holder.value}"), *effects]


def _shared_with(config: PaiGowConfig, data: Data, player: str | None) -> list[str]:
    """shared_with: the players sharing the bank with `player`, at the house's discretion
    (NSW 6.8, NZ 5.5; ACT 6.6 names one of them to handle the tiles: `player`)."""
    raw = data.get("shared_with")
    if raw is None:
        return []
    if (not isinstance(raw, list) or not all(isinstance(n, str) and n.strip() for n in raw)
            or len(raw) > 7):
        raise InputError(f"shared_with must be a list of player names, got {raw!r}")
    names = sorted({n.strip() for n in raw})
    if player is None or player in names:
        raise InputError("shared_with: the players besides the named player who handles the"
                         f" tiles ({SHARED_BANK_RULE[config.profile]})")
    return names


def _candidate(
    config: PaiGowConfig, state: PaiGowState, box: int, player: str | None, data: Data,
    funds: int | None, others: int,
) -> Candidate:
    """The bank candidate from the previous round's wagers, or the dealer's word for it.

    Without recorded wagers the machine cannot know who played where: the dealer vouches
    (played_boxes/controls), by default for the requesting box itself.
    """
    n = config.boxes
    played = fields.boxes(data, "played_boxes", n)
    controls = None if data.get("controls") is None else fields.box(data, n, "controls")
    lr = state.last_round
    if played is None:
        played = lr["players"].get(player, []) if lr["recorded"] else [box]
    if controls is None:
        if lr["recorded"]:
            mine = [int(b) for b, p in lr["controllers"].items() if p == player]
            controls = mine[0] if mine else None
        else:
            controls = box
    # Undeclared funds: the dealer ascertains them (NSW 9.15); checked when declared.
    return Candidate(box, frozenset(played), controls, others if funds is None else funds)


def settle_bank(config: PaiGowConfig, state: PaiGowState, make_up: int = 0) -> Result:
    """Who finally banks: the house when a finished bank found no taker or a player/banker's
    declared funds do not cover the wagers. NSW 13.2.2: the player/banker is asked to make
    up the difference first; `make_up` is what they added (0: refused or could not)."""
    bank = bank_of(config, state)
    if bank.holder is BankHolder.HOUSE:
        return state, []
    if bank_open(bank):  # two rounds done (NSW 6.7, NZ 5.4, ACT 6.7) and nobody took it
        rule = HOUSE_BANKS_RULE[config.profile]
        why = f"bank of box {bank.box} complete, nobody took it ({rule})"
        return _house_takes(config, state, why)
    banker = state.banker or {}
    funds = banker.get("funds")
    others = sum(w["amount"] for w in state.wagers if w["player"] not in bankers(state))
    if make_up and funds is not None and not covers(funds, others, bank.holder):
        if config.profile is not Profile.NSW:
            raise InputError(f"a make-up of the bank's wager is NSW 13.2.2, not {config.profile}")
        funds += make_up
        state = replace(state, banker={**banker, "funds": funds})
        if covers(funds, others, bank.holder):
            return state, [log(f"box {bank.box}: the player/banker made up {make_up} c,"
                               f" {funds} c cover {others} c (NSW 13.2.2)")]
    if funds is not None and not covers(funds, others, bank.holder):
        state, effects = _house_takes(config, state, f"banker's {funds} c do not cover {others} c")
        return state, [alarm(f"box {bank.box} cannot cover the wagers: the house banks"
                             f" ({COVER_RULE[config.profile]})"), *effects]
    return state, []
