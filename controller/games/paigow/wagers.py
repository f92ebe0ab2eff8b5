"""Wagers on the boxes of a Pai Gow table: who may wager where, limits, and who controls a box.

Limits, read literally per profile:
- Below the minimum: valid if not rejected before the dice are exposed (NSW 10.2-10.3); paid or
  collected after the result (ACT 5.1(c)), the player then advised that further ones are returned
  regardless of the result, as they are (`advised`); NZ is silent, so the wager stands as placed.
- Above the maximum: paid or collected to the maximum (NSW 10.3, ACT 5.1(d)); NZ is silent and we
  apply the same rule, the excess standing off. No maximum applies when a player banks alone
  (NSW 10.2, NZ 6.8, ACT 5.3), nor in an ACT co-bank (ACT 5.4: "no box maximums"); an NZ co-bank
  keeps it (NZ 6.8 lifts it only for a player/banker "other than as a co-banker").
- Co-banking: the house's half of the bank may not exceed the displayed maximum house liability
  (NZ 5.1(c), ACT 5.4): `cover_breach`.
- Where a player may wager (`layout_breach`): NSW 9.14, a player controlling a box adds no wager on
  a box nobody else controls; ACT 7.3, a lone player against the house wagers on at most two boxes,
  one wager at least double the other.
- Multiples of the table minimum unless a notice says otherwise (ACT 5.1(b)).
- NZ 6.12-6.13: only the part of a wager whose win, less commission, could be paid exactly in chips
  is valid; the remainder is void and returned.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from controller.games.paigow.bank import HOUSE_BOX, BankHolder
from controller.games.paigow.money import TableMoney
from controller.games.paigow.profiles import Profile
from shared.errors import InputError

MAX_PLAYERS_PER_BOX = 3  # NSW 9.9, NZ 6.5, ACT 7.4


@dataclass(frozen=True, slots=True)
class Wager:
    box: int
    player: str
    amount: int  # cents
    seated: bool = False  # the player sits at this box
    distance_to_dealer: int = 0  # where the chips lie; NSW 9.10.4 / NZ 7.1(a) tie-break


@dataclass(frozen=True, slots=True)
class Accepted:
    wager: Wager
    action: int  # the part that wins or loses, cents
    returned: int  # the part that stands off whatever happens (over the maximum, or NZ 6.13 void)
    notes: tuple[str, ...] = field(default=())


def accept(
    wager: Wager,
    profile: Profile,
    bank: BankHolder,
    money: TableMoney,
    multiples_notice: bool = True,
    advised: bool = False,
) -> Accepted:
    """The part of one wager that is in action; InputError when it cannot be accepted at all.

    advised: ACT 5.1(c), the player was told after an earlier wager under the minimum that
    further ones are returned regardless of the result."""
    if wager.amount <= 0:
        raise InputError(f"wager of {wager.player} on box {wager.box}: amount must be positive")
    if wager.amount % money.chip_unit:
        raise InputError(
            f"wager of {wager.player} on box {wager.box}: {wager.amount} cents is not a whole"
            f" number of {money.chip_unit}-cent chips"
        )
    if bank is BankHolder.HOUSE and wager.box == HOUSE_BOX:
        raise InputError(f"box {HOUSE_BOX} holds the house's tiles: no wagers there (NSW 6.10)")
    notes: list[str] = []
    action = wager.amount
    if action < money.minimum and advised and profile is Profile.ACT:
        note = "under the minimum after the player was advised: returned regardless of the result"
        return Accepted(wager, 0, wager.amount, (f"{note} (ACT 5.1(c))",))
    if action < money.minimum:
        rule = {Profile.NSW: "NSW 10.2-10.3", Profile.NZ: "NZ (silent)", Profile.ACT: "ACT 5.1(c)"}
        notes.append(f"below the table minimum; valid for this round ({rule[profile]})")
    if profile is Profile.ACT and multiples_notice and action % money.minimum:
        notes.append("not a multiple of the table minimum (ACT 5.1(b)); paid per ACT 15.10")
    limited = box_maximum_applies(profile, bank, money.cobank_box_maximum)
    if money.maximum is not None and limited and action > money.maximum:
        notes.append(f"over the maximum: in action to {money.maximum} (NSW 10.3, ACT 5.1(d))")
        action = money.maximum
    if profile is Profile.NZ:
        valid = largest_exact_wager(action, money)
        if valid == 0:
            raise InputError(
                f"wager of {wager.player} on box {wager.box}: no part of {wager.amount} cents can"
                " be paid exactly in chips less commission (NZ 6.12)"
            )
        if valid != action:
            notes.append(f"only {valid} cents payable exactly in chips; the rest is void (NZ 6.13)")
            action = valid
    return Accepted(wager, action, wager.amount - action, tuple(notes))


def box_maximum_applies(
    profile: Profile, bank: BankHolder, cobank_reading: bool | None = None
) -> bool:
    """Whether the table maximum limits a wager under this bank.

    Not when a player banks alone (NSW 10.2, NZ 6.8, ACT 5.3) nor when the house co-banks in ACT
    (ACT 5.4 "no box maximums will apply"); NZ 6.8 exempts only a player/banker "other than as a
    co-banker", so an NZ co-bank keeps the maximum. NSW has no co-bank (NSW 11.1).
    cobank_reading (TableMoney.cobank_box_maximum) overrides the co-bank reading when set.
    """
    if bank is BankHolder.PLAYER:
        return False
    if bank is BankHolder.CO_BANK and cobank_reading is not None:
        return cobank_reading
    return not (bank is BankHolder.CO_BANK and profile is Profile.ACT)


def largest_exact_wager(amount: int, money: TableMoney) -> int:
    """The largest amount <= `amount` whose win less commission is an exact number of chips."""
    step = money.chip_unit
    # Searching down one chip at a time ends within BASIS_POINTS / gcd chips: a few hundred at most.
    for candidate in range(amount - amount % step, 0, -step):
        if money.payable_exactly(candidate):
            return candidate
    return 0


def check_box_wagers(
    wagers: Sequence[Wager], bank: BankHolder, banker_box: int | None, n_boxes: int = 8
) -> None:
    """Where wagers may stand: InputError naming the first breach."""
    per_box: dict[int, set[str]] = {}
    for w in wagers:
        if not 1 <= w.box <= n_boxes:
            raise InputError(f"box {w.box} does not exist (1..{n_boxes})")
        if bank is not BankHolder.HOUSE and w.box == banker_box:
            # The player/banker's wager is the only one on their box (NSW 9.16, NZ 6.5).
            raise InputError(f"box {w.box} is the player/banker's: no other wagers there")
        per_box.setdefault(w.box, set()).add(w.player)
    for box, players in per_box.items():
        if len(players) > MAX_PLAYERS_PER_BOX:
            raise InputError(
                f"box {box} has {len(players)} players; at most {MAX_PLAYERS_PER_BOX}"
                " (NSW 9.9, NZ 6.5, ACT 7.4)"
            )


def box_controller(
    wagers: Sequence[Wager],
    profile: Profile,
    seated_defers: bool = False,
    nominee: str | None = None,
) -> str:
    """Who calls the decisions on a box's tiles (NSW 9.10, NZ 7.1(a), ACT 7.4).

    NSW and NZ: the seated player; at the seated player's discretion (`seated_defers`), or with no
    seated player, the highest wager; with no seated player and equal wagers, the wager nearest the
    dealer. ACT 7.4 lists the highest wager first, then the seated player, then a player nominated
    by the others' agreement: we take the highest wager, a tie broken by the seated player, and a
    tie with nobody seated needs `nominee`.
    """
    if not wagers:
        raise InputError("no wagers on this box: nobody controls it")
    players = {w.player for w in wagers}
    if nominee is not None and nominee not in players:
        raise InputError(f"nominee {nominee!r} has no wager on this box")
    totals: dict[str, int] = {}
    for w in wagers:
        totals[w.player] = totals.get(w.player, 0) + w.amount
    top = max(totals.values())
    highest = sorted(p for p, a in totals.items() if a == top)
    seated = [w.player for w in wagers if w.seated]
    if profile is Profile.ACT:
        if len(highest) == 1:
            return highest[0]
        seated_top = [p for p in seated if p in highest]
        if seated_top:
            return seated_top[0]
        if nominee is not None:
            return nominee
        raise InputError(
            "equal highest wagers and nobody seated: the players must nominate (ACT 7.4(c))"
        )
    if seated and not seated_defers:
        return seated[0]
    if len(highest) == 1:
        return highest[0]
    if seated:
        return seated[0]
    nearest = min((w for w in wagers if w.player in highest), key=lambda w: w.distance_to_dealer)
    return nearest.player


def layout_breach(
    wagers: Sequence[Wager], profile: Profile, bank: BankHolder
) -> tuple[int, str] | None:
    """The wager that may not stand where it is, as (index, why); None when every one may.

    `wagers` are in the order they were placed; the wager named is the latest one involved, the
    "additional wager" (NSW 9.14). Rules:
    - NSW 9.14 (with 9.10, 9.13): a player controlling a box may not add a wager on a box no other
      player controls. Control is decided per box by `box_controller`; a player who would control
      two boxes has added a wager on a box nobody else controls.
    - ACT 7.3: when the house banks and only one player wagers, that player may wager on two boxes
      providing one wager is at least double the other; a third box is not allowed.
    """
    by_box: dict[int, list[Wager]] = {}
    for w in wagers:
        by_box.setdefault(w.box, []).append(w)
    if profile is Profile.NSW:
        controlled: dict[str, list[int]] = {}
        for box, on_box in by_box.items():
            controlled.setdefault(box_controller(on_box, profile), []).append(box)
        for player, boxes in controlled.items():
            if len(boxes) < 2:
                continue
            mine = [i for i, w in enumerate(wagers) if w.player == player and w.box in boxes]
            first, last = wagers[mine[0]].box, wagers[mine[-1]].box
            return mine[-1], (
                f"{player} controls box {first} and may not add a wager on box {last}, which no"
                " other player controls (NSW 9.14)"
            )
    if profile is Profile.ACT and bank is BankHolder.HOUSE and len({w.player for w in wagers}) == 1:
        totals: dict[int, int] = {}  # per box, in the order the boxes were first wagered on
        for w in wagers:
            totals[w.box] = totals.get(w.box, 0) + w.amount
        boxes = list(totals)
        player = wagers[0].player
        if len(boxes) > 2:
            extra = max(i for i, w in enumerate(wagers) if w.box not in boxes[:2])
            return extra, (
                f"{player} is the only player: a wager on two boxes at most, not box"
                f" {wagers[extra].box} as well (ACT 7.3)"
            )
        if len(boxes) == 2:
            low, high = sorted(totals.values())
            if high < 2 * low:
                return len(wagers) - 1, (
                    f"{player} is the only player on two boxes: one wager must be at least double"
                    f" the other, got {totals[boxes[0]]} and {totals[boxes[1]]} (ACT 7.3)"
                )
    return None


def cover_breach(
    accepted: Sequence[Accepted], bank: BankHolder, money: TableMoney
) -> tuple[int, str] | None:
    """The first wager (in the order placed) the house cannot cover when it co-banks.

    The house covers half of the wagers in action (NZ 5.1(c), ACT 6.5); its half, rounded up as
    `settle_round` splits a loss, may not exceed the displayed maximum house liability (NZ 5.1(c),
    ACT 5.4). None when the bank is not a co-bank or no maximum is displayed.
    """
    if bank is not BankHolder.CO_BANK or money.house_liability is None:
        return None
    total = 0
    for i, acc in enumerate(accepted):
        total += acc.action
        if (total + 1) // 2 > money.house_liability:
            return i, (
                f"wager of {acc.wager.player} on box {acc.wager.box}: the house's half of {total}"
                f" cents in action exceeds its displayed maximum liability of"
                f" {money.house_liability} (NZ 5.1(c), ACT 5.4)"
            )
    return None


def check_round_wagers(
    accepted: Sequence[Accepted],
    profile: Profile,
    bank: BankHolder,
    money: TableMoney,
    banker_box: int | None,
    n_boxes: int = 8,
) -> None:
    """Every check on a round's accepted wagers as a whole; InputError naming the first breach."""
    wagers = [a.wager for a in accepted]
    check_box_wagers(wagers, bank, banker_box, n_boxes)
    for breach in (layout_breach(wagers, profile, bank), cover_breach(accepted, bank, money)):
        if breach is not None:
            raise InputError(breach[1])


def house_way_boxes(
    wagers: Sequence[Wager], profile: Profile, chosen: Mapping[str, int]
) -> dict[int, str]:
    """NZ 7.2: boxes whose tiles the dealer sets the house way, each with the player who would
    otherwise control it.

    "A player may not control the tiles on more than 1 box": a player who would control several
    boxes (`box_controller`) indicates before the round which one (`chosen`: player -> box); the
    tiles of the others are set by the dealer in accordance with the house way. A player who did
    not indicate (or chose a box they do not control) keeps the box they wagered on first
    (docs/rounds-paigow.md, "What a regulator should confirm"). Other profiles: none (NSW 9.14
    refuses the second wager; ACT 7.3 lets a lone player set both boxes).
    """
    if profile is not Profile.NZ:
        return {}
    by_box: dict[int, list[Wager]] = {}
    for w in wagers:  # insertion order: the order the boxes were first wagered on
        by_box.setdefault(w.box, []).append(w)
    controlled: dict[str, list[int]] = {}
    for box, on_box in by_box.items():
        controlled.setdefault(box_controller(on_box, profile), []).append(box)
    house_way: dict[int, str] = {}
    for player, boxes in controlled.items():
        if len(boxes) < 2:
            continue
        keep = chosen.get(player)
        keep = keep if keep in boxes else boxes[0]
        house_way.update({b: player for b in boxes if b != keep})
    return dict(sorted(house_way.items()))
