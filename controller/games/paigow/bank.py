"""Who holds the Pai Gow bank: the house, a player/banker, or a player co-banking with the house.

A pure model: `BankState` is frozen and every transition returns a new state.

Box numbers increase counter-clockwise from box 1 (see docs/paigow-dice-bank.md). The bank is
offered box by box in that direction, so "directly to the left of the last bank" (NSW 6.1, the
dealer's view) and "the box to the right of the player/banker" (NZ 5.4, the seated players' view)
both name box `last + 1`.

Limits are counted per box: the model knows boxes, not people.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from enum import StrEnum

from controller.games.paigow.profiles import Profile
from shared.errors import InputError

MAX_BOXES = 8  # NZ 3.1-3.2, ACT 1(a): up to 8 boxes; NSW 7.2 deals 8 groups of 4
HOUSE_BOX = 1  # the house banks on box 1 (NSW 6.10, NZ 11.1(a), ACT 6.9)
ROUNDS_PER_BANK = 2  # NSW 6.7 first and second round; NZ 5.4 and ACT 6.7 at most two
MAX_BANKS_PER_BOX = 3  # NSW 6.7: the House may allow up to three banks per playing area


class BankHolder(StrEnum):
    # wagers.py, settlement.py and the CLI import this enum; the values are the CLI's spelling.
    HOUSE = "house"
    PLAYER = "player"  # player/banker covering every wager, the house taking no part
    CO_BANK = "co-bank"  # player/banker and house 50/50 (NZ 5.1(c), ACT 6.5); none in NSW 11.1


class Refusal(StrEnum):
    """Why a candidate may not take the bank; `rule_for` names the rule per profile."""

    NOT_PLAYED_PREVIOUS_ROUND = "did not play the previous round"
    NOT_LAST_PLAYED_BOX = "did not play the previous round on this box"
    CONTROLS_ANOTHER_BOX = "controls another box"
    NOT_FURTHEST_FROM_CHUNG = "wagered on several boxes and this is not the furthest from the chung"
    DOES_NOT_CONTROL_BOX = "does not control this box"
    INSUFFICIENT_FUNDS = "funds do not cover the required share of the other players' wagers"
    ROUND_LIMIT = "this box has held the bank for the maximum number of rounds"


_RULES: dict[tuple[Profile, Refusal], str] = {
    (Profile.NSW, Refusal.NOT_PLAYED_PREVIOUS_ROUND): "NSW 6.6",
    (Profile.NZ, Refusal.NOT_PLAYED_PREVIOUS_ROUND): "NZ 5.3(a)",
    (Profile.NSW, Refusal.NOT_LAST_PLAYED_BOX): "NSW 6.3",
    (Profile.ACT, Refusal.NOT_LAST_PLAYED_BOX): "ACT 6.3",
    (Profile.NSW, Refusal.CONTROLS_ANOTHER_BOX): "NSW 6.4",
    (Profile.NSW, Refusal.NOT_FURTHEST_FROM_CHUNG): "NSW 6.5",
    (Profile.NZ, Refusal.DOES_NOT_CONTROL_BOX): "NZ 5.3(b)",
    (Profile.NSW, Refusal.INSUFFICIENT_FUNDS): "NSW 9.15, 13.2.2",
    (Profile.NZ, Refusal.INSUFFICIENT_FUNDS): "NZ 5.3(c)",
    (Profile.ACT, Refusal.INSUFFICIENT_FUNDS): "ACT 6.4-6.5",
    (Profile.NSW, Refusal.ROUND_LIMIT): "NSW 6.7",
    (Profile.NZ, Refusal.ROUND_LIMIT): "NZ 5.4",
    (Profile.ACT, Refusal.ROUND_LIMIT): "ACT 6.7",
}


def rule_for(profile: Profile, refusal: Refusal) -> str:
    return _RULES[(profile, refusal)]


@dataclass(frozen=True)
class Candidate:
    """A player offered the bank on `box`.

    wagered_boxes: boxes the player wagered on in the previous round (empty: did not play).
    controlled_box: the box whose tiles the player controls (NSW 9.10, NZ 7.1), if any.
    funds: what the player can put up as the bank's wager, in cents (several players sharing
    the bank, NSW 6.8 / NZ 5.5 / ACT 6.6, pool their funds here).
    """

    box: int
    wagered_boxes: frozenset[int] = frozenset()
    controlled_box: int | None = None
    funds: int = 0


@dataclass(frozen=True)
class BankState:
    """Who holds the bank for the coming round.

    rounds_in_bank: rounds completed by the current holder in the current bank.
    banks_on_box: consecutive player banks held on `box` (NSW 6.7 counts banks per playing area).
    rounds_played: rounds completed since the game (re)commenced.
    max_banks_per_box: NSW 6.7 house discretion, 1..3; always 1 for nz and act.
    """

    profile: Profile
    holder: BankHolder = BankHolder.HOUSE
    box: int = HOUSE_BOX
    rounds_in_bank: int = 0
    banks_on_box: int = 0
    rounds_played: int = 0
    n_boxes: int = MAX_BOXES
    max_banks_per_box: int = 1

    def __post_init__(self) -> None:
        if not 1 <= self.n_boxes <= MAX_BOXES:
            raise InputError(f"n_boxes {self.n_boxes} outside 1..{MAX_BOXES}")
        check_box(self.box, self.n_boxes)
        if self.holder is BankHolder.HOUSE and self.box != HOUSE_BOX:
            raise InputError(f"the house banks on box {HOUSE_BOX}, not box {self.box} (NSW 6.10)")
        if self.holder is BankHolder.CO_BANK and self.profile is Profile.NSW:
            raise InputError("co-bank is not a method of play in profile nsw (NSW 11.1)")
        limit = MAX_BANKS_PER_BOX if self.profile is Profile.NSW else 1
        if not 1 <= self.max_banks_per_box <= limit:
            raise InputError(
                f"max_banks_per_box {self.max_banks_per_box} outside 1..{limit} for profile"
                f" {self.profile} (NSW 6.7; NZ 5.4 and ACT 6.7 allow one bank of two rounds)"
            )


def start(profile: Profile, *, n_boxes: int = MAX_BOXES, max_banks_per_box: int = 1) -> BankState:
    """The bank when play (re)commences: the house's, on box 1.

    NZ 5.2 and ACT 6.7 make the house bank the first round. NSW 6.6 instead lets a player take the
    bank at the commencement of the game without having played a previous round.
    """
    return BankState(profile, n_boxes=n_boxes, max_banks_per_box=max_banks_per_box)


def check_box(box: int, n_boxes: int = MAX_BOXES) -> int:
    if isinstance(box, bool) or not isinstance(box, int) or not 1 <= box <= n_boxes:
        raise InputError(f"box {box!r} outside 1..{n_boxes}")
    return box


def rounds_limit(state: BankState) -> int:
    """Most consecutive rounds one box may hold a player bank (NSW 6.7, NZ 5.4, ACT 6.7)."""
    return ROUNDS_PER_BANK * state.max_banks_per_box


def bank_open(state: BankState) -> bool:
    """Whether the bank is to be offered before the coming round."""
    if state.holder is BankHolder.HOUSE:
        # NZ 5.2, ACT 6.7: the house banks the first round; NSW 6.6 has no such round.
        return state.rounds_played > 0 or state.profile is Profile.NSW
    return state.rounds_in_bank >= ROUNDS_PER_BANK


def _can_renew(state: BankState) -> bool:
    # NSW 6.7: another bank on the same playing area, at the House's discretion.
    return state.holder is not BankHolder.HOUSE and state.banks_on_box < state.max_banks_per_box


def _offer_start(state: BankState) -> int:
    if state.holder is not BankHolder.HOUSE:
        return state.box + 1  # NSW 6.1, NZ 5.4, ACT 6.7 "the next player"
    if state.profile is Profile.NSW and state.rounds_played > 0:
        return HOUSE_BOX + 1  # NSW 6.1: directly to the left of the last bank, the house's
    return HOUSE_BOX  # NZ 5.2 "starting with box number 1"; ACT 6.3's box-one exception


def offer_order(state: BankState, occupied_boxes: Iterable[int]) -> list[int]:
    """The occupied boxes in the order the bank is offered to them.

    Counter-clockwise (increasing box numbers, wrapping after `n_boxes`). The holder's own box is
    offered first only when NSW 6.7 lets it hold another bank; otherwise it is left out, since
    taking the bank again would exceed the round limit.
    """
    occupied = {check_box(b, state.n_boxes) for b in occupied_boxes}
    if not bank_open(state):
        raise InputError(
            f"the bank is not open: {_not_open_reason(state)}; offer it after the round"
        )
    n = state.n_boxes
    first = _offer_start(state)
    ring = [(first - 1 + i) % n + 1 for i in range(n)]
    if state.holder is not BankHolder.HOUSE:
        ring.remove(state.box)
        if _can_renew(state):
            ring.insert(0, state.box)
    return [b for b in ring if b in occupied]


def _not_open_reason(state: BankState) -> str:
    if state.holder is BankHolder.HOUSE:
        rule = "NZ 5.2" if state.profile is Profile.NZ else "ACT 6.7"
        return f"the house banks the first round ({rule})"
    return (
        f"box {state.box} has held it {state.rounds_in_bank} of {ROUNDS_PER_BANK} rounds"
        " (NSW 6.7, NZ 5.4, ACT 6.7)"
    )


def _distance_from(chung: int, box: int, n_boxes: int) -> int:
    # Counted counter-clockwise from the chung, as the offer (NSW 6.1) and the deal (8.4.1) count.
    return (box - chung) % n_boxes


def refusals(
    state: BankState, candidate: Candidate, holder: BankHolder, *, other_wagers: int
) -> list[Refusal]:
    """Every reason `candidate` may not take the bank as `holder`; empty when they may.

    other_wagers: total of the other players' wagers against the bank, in cents.
    """
    _check_request(state, candidate, holder, other_wagers)
    reasons: list[Refusal] = []
    box, played = candidate.box, candidate.wagered_boxes
    commencement = state.rounds_played == 0
    if state.profile is Profile.NSW:
        if not commencement:  # NSW 6.6 "other than at the commencement of the game"
            if not played:
                reasons.append(Refusal.NOT_PLAYED_PREVIOUS_ROUND)
            elif box not in played:
                reasons.append(Refusal.NOT_LAST_PLAYED_BOX)  # NSW 6.3
        if candidate.controlled_box is not None and candidate.controlled_box != box:
            reasons.append(Refusal.CONTROLS_ANOTHER_BOX)  # NSW 6.4
        elif candidate.controlled_box is None and len(played) > 1 and box in played:
            furthest = max(played, key=lambda b: _distance_from(state.box, b, state.n_boxes))
            if box != furthest:
                reasons.append(Refusal.NOT_FURTHEST_FROM_CHUNG)  # NSW 6.5
    elif state.profile is Profile.NZ:
        if not played:
            reasons.append(Refusal.NOT_PLAYED_PREVIOUS_ROUND)  # NZ 5.3(a)
        if candidate.controlled_box != box:
            reasons.append(Refusal.DOES_NOT_CONTROL_BOX)  # NZ 5.3(b)
    else:
        box_one_exception = box == HOUSE_BOX and state.holder is BankHolder.HOUSE
        if box not in played and not box_one_exception:
            reasons.append(Refusal.NOT_LAST_PLAYED_BOX)  # ACT 6.3
    if not covers(candidate.funds, other_wagers, holder):
        reasons.append(Refusal.INSUFFICIENT_FUNDS)
    if state.holder is not BankHolder.HOUSE and box == state.box and not _can_renew(state):
        reasons.append(Refusal.ROUND_LIMIT)
    return reasons


def covers(funds: int, other_wagers: int, holder: BankHolder) -> bool:
    """Funds cover 100% of the other wagers, or 50% for a co-banker (NZ 5.3(c), ACT 6.4-6.5)."""
    share = 2 if holder is BankHolder.CO_BANK else 1
    return funds * share >= other_wagers  # integer cents: no rounding of the 50% share


def _check_request(
    state: BankState, candidate: Candidate, holder: BankHolder, other_wagers: int
) -> None:
    check_box(candidate.box, state.n_boxes)
    for b in candidate.wagered_boxes:
        check_box(b, state.n_boxes)
    if candidate.controlled_box is not None:
        check_box(candidate.controlled_box, state.n_boxes)
    if candidate.funds < 0:
        raise InputError(f"funds {candidate.funds} are negative")
    if other_wagers < 0:
        raise InputError(f"other_wagers {other_wagers} are negative")
    if holder is BankHolder.HOUSE:
        raise InputError("the house does not take the bank through an offer: use house_banks()")
    if holder is BankHolder.CO_BANK and state.profile is Profile.NSW:
        raise InputError("co-bank is not a method of play in profile nsw (NSW 11.1)")


def take_bank(
    state: BankState, candidate: Candidate, holder: BankHolder, *, other_wagers: int
) -> BankState:
    """`candidate` takes the bank as `holder`; InputError listing every refusal otherwise."""
    if not bank_open(state):
        raise InputError(f"the bank is not open: {_not_open_reason(state)}")
    reasons = refusals(state, candidate, holder, other_wagers=other_wagers)
    if reasons:
        listed = "; ".join(f"{r.value} ({rule_for(state.profile, r)})" for r in reasons)
        raise InputError(f"box {candidate.box} may not take the bank as {holder}: {listed}")
    renewing = state.holder is not BankHolder.HOUSE and candidate.box == state.box
    return replace(
        state,
        holder=holder,
        box=candidate.box,
        rounds_in_bank=0,
        banks_on_box=state.banks_on_box + 1 if renewing else 1,
    )


def house_banks(state: BankState) -> BankState:
    """The house takes the bank on box 1.

    When nobody accepts it (NSW 6.9, NZ 5.6, ACT 6.8) or a player/banker cannot cover the wagers
    (NSW 13.2.2, NZ 11.2(b)). NZ 11.2(b) also allows co-banking instead: use take_bank.
    """
    return replace(state, holder=BankHolder.HOUSE, box=HOUSE_BOX, rounds_in_bank=0, banks_on_box=0)


def after_round(state: BankState) -> BankState:
    """The state after a round is played; refuses a round that would exceed the round limit."""
    if state.holder is not BankHolder.HOUSE and state.rounds_in_bank >= ROUNDS_PER_BANK:
        raise InputError(
            f"box {state.box} has completed its bank of {ROUNDS_PER_BANK} rounds"
            " (NSW 6.7, NZ 5.4, ACT 6.7): offer the bank before another round"
        )
    return replace(
        state, rounds_in_bank=state.rounds_in_bank + 1, rounds_played=state.rounds_played + 1
    )


def accepts_wager(state: BankState, box: int, *, from_banker: bool = False) -> bool:
    """Whether a wager may stand on `box` this round.

    The house's box 1 takes no wagers (NSW 6.10, NZ 11.1(b) as amended, ACT 6.9); a
    player/banker's box takes only the player/banker's own wager (NSW 9.16, NZ 6.5; ACT states it
    for neither, but the tiles on that box are the bank's hand).
    """
    check_box(box, state.n_boxes)
    if box != state.box:
        return True
    return state.holder is not BankHolder.HOUSE and from_banker
