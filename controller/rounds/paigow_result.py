"""Turning the dealer's result entry into outcomes and a settlement (pure; raises InputError)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from controller.errors import InputError
from controller.games.paigow.bank import BankHolder, BankState
from controller.games.paigow.houseway import house_way
from controller.games.paigow.outcome import Outcome, player_outcome
from controller.games.paigow.profiles import Profile
from controller.games.paigow.settings import Setting
from controller.games.paigow.settlement import RoundSettlement, settle_round
from controller.games.paigow.tiles import check_available
from controller.games.paigow.wagers import Wager, accept
from controller.rounds.paigow_input import parse_hand, same_setting
from controller.rounds.paigow_state import JSON, PaiGowConfig

# The bank's hand set otherwise than the house way, once the first player's hand is exposed.
_WRONG_HOUSE_HAND = {
    Profile.NSW: "the hand stands (NSW 15.7)",
    Profile.NZ: "the hand stands (NZ 12.8(b))",
    Profile.ACT: "re-set the house way (ACT 13.8)",
}
CONCESSION_RULE = {Profile.NSW: "NSW 12.17", Profile.NZ: "NZ 10.13"}  # ACT has no concession


def to_wager(row: Mapping[str, Any]) -> Wager:
    return Wager(row["box"], row["player"], row["amount"], row["seated"], row["distance_to_dealer"])


def round_result(
    config: PaiGowConfig,
    bank: BankState,
    banker: JSON | None,
    wagers: list[JSON],
    off_boxes: list[int],
    data: Mapping[str, Any],
) -> tuple[JSON, list[str]]:
    """The result part of a round summary and the alarms it raises (house hand not house way)."""
    profile = config.profile
    bank_setting, alarms = _bank_hand(profile, bank, data.get("bank_hand"))
    hands = _hands(config, bank, wagers, off_boxes, data.get("hands"))
    check_available(
        [*bank_setting.tiles, *(t for s in hands.values() if s is not None for t in s.tiles)]
    )  # one set of 32 tiles (NSW 3.1, 15.17)
    outcomes = {
        box: Outcome.LOSE if s is None else player_outcome(s, bank_setting, profile)
        for box, s in hands.items()
    }
    result: JSON = {
        "bank_hand": bank_setting.as_json(),
        "hands": {
            str(box): {"conceded": True} if s is None else s.as_json()
            for box, s in sorted(hands.items())
        },
        "outcomes": {str(box): o.value for box, o in sorted(outcomes.items())},
        "settlement": None,
    }
    if wagers:
        settlement = _settle(config, bank, banker, wagers, outcomes)
        if not settlement.conserved:  # settlement.py guarantees it; never pay out if broken
            raise InputError("settlement does not conserve money: round not completed")
        result["settlement"] = settlement_json(settlement)
    return result, alarms


def _bank_hand(profile: Profile, bank: BankState, spec: Any) -> tuple[Setting, list[str]]:
    setting = parse_hand(spec, profile, "bank hand")
    if setting is None:
        raise InputError("bank hand: the bank cannot concede")
    alarms: list[str] = []
    # The house's hand (alone or co-banking) is set the house way (NSW 13.1.5, NZ 11.1(e)/11.3(e)).
    if bank.holder is not BankHolder.PLAYER and isinstance(spec, str):
        proper = house_way(setting.tiles, profile)
        if not same_setting(setting, proper):
            alarms.append(
                f"bank hand {setting} is not the house way {proper}: " + _WRONG_HOUSE_HAND[profile]
            )
            if profile is Profile.ACT:
                setting = proper
    return setting, alarms


def _hands(
    config: PaiGowConfig, bank: BankState, wagers: list[JSON], off_boxes: list[int], doc: Any
) -> dict[int, Setting | None]:
    if not isinstance(doc, Mapping):
        raise InputError('hands must be an object {"box": hand}')
    players: dict[int, set[str]] = {}
    for w in wagers:
        players.setdefault(w["box"], set()).add(w["player"])
    hands: dict[int, Setting | None] = {}
    for key, spec in doc.items():
        box = _box_key(key, config.boxes)
        if box == bank.box:
            raise InputError(f"box {box} holds the bank's tiles: give them as bank_hand")
        if box in off_boxes:
            raise InputError(f"box {box} is OFF: it has no hand (NSW 15.9.3, NZ 12.10)")
        if wagers and box not in players:
            raise InputError(f"box {box} has no wager: its tiles are unused (NSW 12.3, ACT 9.1)")
        hands[box] = parse_hand(spec, config.profile, f"hand of box {box}")
        if hands[box] is None:
            _check_concession(config.profile, box, players.get(box, set()))
    missing = sorted(set(players) - set(hands))
    if missing:
        raise InputError(f"boxes {missing} have wagers but no hand in the result")
    return hands


def _box_key(key: Any, n_boxes: int) -> int:
    text = str(key)
    if not text.isdigit() or not 1 <= int(text) <= n_boxes:
        raise InputError(f"hands: {key!r} is not a box 1..{n_boxes}")
    return int(text)


def _check_concession(profile: Profile, box: int, players: set[str]) -> None:
    rule = CONCESSION_RULE.get(profile)
    if rule is None:
        raise InputError(f"box {box}: profile {profile} has no concession rule")
    if len(players) > 1:
        raise InputError(f"box {box}: only a player wagering alone may concede ({rule})")


def _settle(
    config: PaiGowConfig,
    bank: BankState,
    banker: JSON | None,
    wagers: list[JSON],
    outcomes: dict[int, Outcome],
) -> RoundSettlement:
    items = [
        (
            accept(to_wager(w), config.profile, bank.holder, config.money, config.multiples_notice),
            outcomes[w["box"]],
        )
        for w in wagers
    ]
    return settle_round(
        config.profile,
        config.money,
        bank.holder,
        items,
        banker_box=bank.box,
        banker_wager=banker_wager(bank, banker, sum(acc.action for acc, _ in items)),
        n_boxes=config.boxes,
        multiples_notice=config.multiples_notice,
    )


def banker_wager(bank: BankState, banker: JSON | None, total_action: int) -> int:
    """The player/banker's (co-banker's) wager: the declared funds, else the least that covers
    the wagers (NSW 9.15, 13.2.2; NZ 11.2(b), 11.3(b); ACT 6.4-6.5)."""
    if bank.holder is BankHolder.HOUSE:
        return 0
    funds = None if banker is None else banker.get("funds")
    if funds is not None:
        return int(funds)
    return total_action if bank.holder is BankHolder.PLAYER else (total_action + 1) // 2


def settlement_json(s: RoundSettlement) -> JSON:
    return s.as_json()
