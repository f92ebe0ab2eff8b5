"""From a round's hands and wagers to its outcomes and settlement.

The one path both the round machine (controller/rounds/paigow/result.py) and `tablectl paigow
settle` take, so a rule applied at the table is applied the same way by the technician's command:
- the house's hand (alone or co-banking) set otherwise than the house way: it stands once the first
  player's hand is exposed (NSW 15.7, NZ 12.8(b)); ACT 13.8 re-sets it the house way;
- a conceded hand: only a player wagering alone on the box (NSW 12.17, NZ 10.13); ACT has no
  concession rule;
- the wagers as a whole (`wagers.check_round_wagers`: NSW 9.9/9.14/9.16, ACT 7.3, the co-bank's
  house liability NZ 5.1(c)/ACT 5.4), then `wagers.accept` and `settlement.settle_round`.
- what the round brings beside its hands: the boxes the dealer sets the house way (NZ 7.2) and
  the make-up of a bank short after a miscount (NZ 12.17).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from controller.games.paigow.bank import BankHolder
from controller.games.paigow.houseway import house_way
from controller.games.paigow.money import TableMoney
from controller.games.paigow.outcome import Outcome, player_outcome
from controller.games.paigow.profiles import Profile
from controller.games.paigow.settings import Setting
from controller.games.paigow.settlement import RoundSettlement, settle_round
from controller.games.paigow.tiles import check_available
from controller.games.paigow.wagers import Wager, accept, check_round_wagers
from shared.errors import InputError

# The bank's hand set otherwise than the house way, found once the first player's hand is exposed.
WRONG_HOUSE_HAND = {
    Profile.NSW: "the hand stands (NSW 15.7)",
    Profile.NZ: "the hand stands (NZ 12.8(b))",
    Profile.ACT: "re-set the house way (ACT 13.8)",
}
CONCESSION_RULE = {Profile.NSW: "NSW 12.17", Profile.NZ: "NZ 10.13"}  # ACT has no concession


@dataclass(frozen=True, slots=True)
class Resolution:
    bank_hand: Setting  # as it is played: ACT 13.8 may have re-set it
    outcomes: dict[int, Outcome]  # per box; a conceded hand loses
    settlement: RoundSettlement | None  # None when no wagers were given
    alarms: tuple[str, ...]
    make_up: dict[str, Any] | None = None  # NZ 12.17, when a miscount left the bank short


def same_setting(a: Setting, b: Setting) -> bool:
    """Two settings put the same tiles high and the same tiles low."""

    def key(s: Setting) -> tuple[list[str], list[str]]:
        return sorted(t.notation for t in s.high.tiles), sorted(t.notation for t in s.low.tiles)

    return key(a) == key(b)


def house_hand(
    profile: Profile, holder: BankHolder, setting: Setting, as_set: bool
) -> tuple[Setting, list[str]]:
    """The bank's hand as played, and an alarm when the house's hand is not the house way.

    as_set: the hand is given as the dealer set it (False: the engine set it the house way).
    The house's hand, alone or co-banking, is set the house way (NSW 13.1.5, NZ 11.1(e)/11.3(e),
    ACT 11.1); a player/banker sets their own.
    """
    if holder is BankHolder.PLAYER or not as_set:
        return setting, []
    proper = house_way(setting.tiles, profile)
    if same_setting(setting, proper):
        return setting, []
    alarm = f"bank hand {setting} is not the house way {proper}: {WRONG_HOUSE_HAND[profile]}"
    return (proper if profile is Profile.ACT else setting), [alarm]


def check_concession(profile: Profile, box: int, players: set[str]) -> None:
    """InputError unless the hand on `box`, wagered on by `players`, may be conceded."""
    rule = CONCESSION_RULE.get(profile)
    if rule is None:
        raise InputError(f"box {box}: profile {profile} has no concession rule")
    if len(players) > 1:
        raise InputError(f"box {box}: only a player wagering alone may concede ({rule})")


def least_cover(holder: BankHolder, total_action: int) -> int:
    """The least bank wager that covers the wagers: all of them, half when co-banking
    (NSW 13.2.2, NZ 11.2(b)/11.3(b), ACT 6.4-6.5); nothing when the house banks alone."""
    if holder is BankHolder.HOUSE:
        return 0
    return total_action if holder is BankHolder.PLAYER else (total_action + 1) // 2


def resolve_round(
    profile: Profile,
    money: TableMoney,
    holder: BankHolder,
    bank_hand: Setting,
    hands: Mapping[int, Setting | None],
    wagers: Sequence[Wager],
    *,
    bank_as_set: bool = True,
    banker_box: int,
    banker_wager: int | None = None,
    n_boxes: int = 8,
    multiples_notice: bool = True,
    house_way_boxes: Mapping[int, str] | None = None,
    miscounted: bool = False,
    advised: frozenset[str] = frozenset(),
) -> Resolution:
    """Outcomes and settlement of a round; InputError for anything the rules do not allow.

    hands: the set hand of each box, None for a conceded one. banker_wager: the player/banker's
    (co-banker's) wager; None takes the least that covers the wagers. house_way_boxes: NZ 7.2,
    the boxes the dealer sets the house way (`wagers.house_way_boxes`). miscounted: a wager was
    recounted after no more bets (NZ 12.17; another profile only by its table's option), so a
    bank that no longer covers the winners is made up by the player/banker, a co-bank's
    difference equally with the house (the odd cent the house's, as in a loss): `make_up`.
    advised: ACT 5.1(c), players told that further wagers under the minimum are returned
    regardless of the result.
    """
    check_house_way_boxes(profile, hands, house_way_boxes or {})
    played, alarms = house_hand(profile, holder, bank_hand, bank_as_set)
    players: dict[int, set[str]] = {}
    for w in wagers:
        players.setdefault(w.box, set()).add(w.player)
    for box, setting in hands.items():
        if setting is None:
            check_concession(profile, box, players.get(box, set()))
    check_available(
        [*played.tiles, *(t for s in hands.values() if s is not None for t in s.tiles)]
    )  # one set of 32 tiles (NSW 3.1, 15.17)
    outcomes = {
        box: Outcome.LOSE if s is None else player_outcome(s, played, profile)
        for box, s in hands.items()
    }
    if not wagers:
        return Resolution(played, outcomes, None, tuple(alarms))
    missing = sorted(set(players) - set(hands))
    if missing:
        raise InputError(f"boxes {missing} have wagers but no hand")
    accepted = [accept(w, profile, holder, money, multiples_notice, w.player in advised)
                for w in wagers]
    check_round_wagers(accepted, profile, holder, money, banker_box, n_boxes)
    cover = least_cover(holder, sum(a.action for a in accepted))
    if banker_wager is None:
        banker_wager = cover
    short = miscounted and banker_wager < cover
    settlement = settle_round(
        profile,
        money,
        holder,
        [(a, outcomes[a.wager.box]) for a in accepted],
        banker_box=banker_box,
        banker_wager=cover if short else banker_wager,
        n_boxes=n_boxes,
        multiples_notice=multiples_notice,
    )
    if not settlement.conserved:  # settle_round guarantees it; never pay out if broken
        raise InputError("settlement does not conserve money: round not completed")
    if not short:
        return Resolution(played, outcomes, settlement, tuple(alarms))
    # NZ 12.17: the winners are owed beyond the losing wagers and the bank's wager (a
    # co-bank's with the house's equal part, NZ 11.3(c)).
    area = banker_wager * (2 if holder is BankHolder.CO_BANK else 1)
    shortfall = max(0, -settlement.banker_gross - area)
    house = (shortfall + 1) // 2 if holder is BankHolder.CO_BANK else 0
    rule = "NZ 12.17" if profile is Profile.NZ else "NZ 12.17 by the table's option"
    make_up = {"rule": rule, "banker_wager": banker_wager, "shortfall": shortfall,
               "player_banker": shortfall - house, "house": house}
    return Resolution(played, outcomes, replace(settlement, banker_wager=banker_wager),
                      tuple(alarms), make_up)


def check_house_way_boxes(
    profile: Profile, hands: Mapping[int, Setting | None], house_way_boxes: Mapping[int, str]
) -> None:
    """NZ 7.2: InputError unless each box a player may not control (`wagers.house_way_boxes`:
    box -> that player) is set the house way; neither their own way nor conceded."""
    for box, player in sorted(house_way_boxes.items()):
        setting = hands.get(box)
        if setting is None or not same_setting(setting, house_way(setting.tiles, profile)):
            given = "conceded" if setting is None else str(setting)
            raise InputError(
                f"box {box} ({given}): {player} controls another box, so the dealer sets this"
                " box's tiles the house way (NZ 7.2); enter it as {\"tiles\": [...]}"
            )

