"""Turning the dealer's result entry into outcomes and a settlement (pure; raises InputError).

The rules are applied by `games.paigow.resolve.resolve_round` (NZ 7.2 and 12.17 included), the
path `tablectl paigow settle` takes too; this module reads the entry and
checks it against the round's boxes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from controller.games.paigow.bank import BankState
from controller.games.paigow.resolve import resolve_round
from controller.games.paigow.settings import Setting
from controller.games.paigow.settlement import RoundSettlement
from controller.games.paigow.wagers import Wager
from controller.rounds.paigow.input import parse_hand
from controller.rounds.paigow.state import JSON, PaiGowConfig
from shared.errors import InputError


def to_wager(row: Mapping[str, Any]) -> Wager:
    return Wager(row["box"], row["player"], row["amount"], row["seated"], row["distance_to_dealer"])


def round_result(
    config: PaiGowConfig,
    bank: BankState,
    banker: JSON | None,
    wagers: list[JSON],
    off_boxes: list[int],
    data: Mapping[str, Any],
    *,
    house_way_boxes: Mapping[int, str] | None = None,
    miscounted: bool = False,
    advised: frozenset[str] = frozenset(),
) -> tuple[JSON, list[str]]:
    """The result part of a round summary and the alarms it raises (house hand not house way).

    house_way_boxes: NZ 7.2, boxes whose tiles the dealer sets the house way. miscounted: a wager
    was recounted after no more bets (NZ 12.17): a bank that no longer covers is made up.
    advised: players whose further wagers under the minimum are returned (ACT 5.1(c)).
    """
    profile = config.profile
    spec = data.get("bank_hand")
    bank_setting = parse_hand(spec, profile, "bank hand")
    if bank_setting is None:
        raise InputError("bank hand: the bank cannot concede")
    hands = _hands(config, bank, wagers, off_boxes, data.get("hands"))
    funds = None if banker is None else banker.get("funds")
    resolved = resolve_round(
        profile,
        config.money,
        bank.holder,
        bank_setting,
        hands,
        [to_wager(w) for w in wagers],
        bank_as_set=isinstance(spec, str),  # {"tiles": ..} is set the house way by the engine
        banker_box=bank.box,
        banker_wager=None if funds is None else int(funds),
        house_way_boxes=house_way_boxes,
        miscounted=miscounted,
        advised=advised,
        n_boxes=config.boxes,
        multiples_notice=config.multiples_notice,
    )
    settlement, make_up = resolved.settlement, resolved.make_up
    result: JSON = {
        "bank_hand": resolved.bank_hand.as_json(),
        "hands": {
            str(box): {"conceded": True} if s is None else s.as_json()
            for box, s in sorted(hands.items())
        },
        "outcomes": {str(box): o.value for box, o in sorted(resolved.outcomes.items())},
        "settlement": None if settlement is None else settlement_json(settlement),
        **({"make_up": make_up} if make_up is not None else {}),
    }
    return result, list(resolved.alarms)


def _hands(
    config: PaiGowConfig, bank: BankState, wagers: list[JSON], off_boxes: list[int], doc: Any
) -> dict[int, Setting | None]:
    if not isinstance(doc, Mapping):
        raise InputError('hands must be an object {"box": hand}')
    wagered = {w["box"] for w in wagers}
    hands: dict[int, Setting | None] = {}
    for key, spec in doc.items():
        box = _box_key(key, config.boxes)
        if box == bank.box:
            raise InputError(f"box {box} holds the bank's tiles: give them as bank_hand")
        if box in off_boxes:
            raise InputError(f"box {box} is OFF: it has no hand (NSW 15.9.3, NZ 12.10)")
        if wagers and box not in wagered:
            raise InputError(f"box {box} has no wager: its tiles are unused (NSW 12.3, ACT 9.1)")
        hands[box] = parse_hand(spec, config.profile, f"hand of box {box}")
    missing = sorted(wagered - set(hands))
    if missing:
        raise InputError(f"boxes {missing} have wagers but no hand in the result")
    return hands


def _box_key(key: Any, n_boxes: int) -> int:
    text = str(key)
    if not text.isdigit() or not 1 <= int(text) <= n_boxes:
        raise InputError(f"hands: {key!r} is not a box 1..{n_boxes}")
    return int(text)


def settlement_json(s: RoundSettlement) -> JSON:
    return s.as_json()
