"""Settling a Pai Gow round in integer cents.

- Winning wagers against the bank are paid 1 to 1 less commission (NSW 14.1, NZ 6.11, ACT 12.6);
  the commission is the house's whoever banks.
- House bank: losing wagers go to the float, winners are paid from it (NSW 13.1, NZ 11.1).
- Player/banker: winners are paid from the losing-wager area, a shortfall from the banker's wager,
  and the banker's net win is paid less commission (NSW 13.2.6-13.2.8, 14.2; NZ 6.14, 11.2).
- Co-bank: the house matches the co-banker's wager; the net result is split equally; commission
  only on the co-banker's share (NZ 11.3 (j)-(l), ACT 6.5, 12.8).
- Commission the chips cannot collect exactly is rounded down to the nearest collectable amount
  (NSW 14.3; ACT 12.8 "the lower multiple"); NZ wagers are exact by 6.12-6.13.
- ACT 15.10: a win that can be paid in full in chips (less commission) is paid in full. Only one
  that cannot is, under a multiples notice and when the wager is not a multiple of the minimum,
  paid to the lower multiple; otherwise it is paid to the next higher payable amount. The cut
  is for a win paid "from the table float", the house's (ACT 12.8): not when a player banks
  alone (docs/rounds-paigow.md, "What a regulator should confirm").
- An odd cent in a co-bank split goes to the co-banker (the patron), so the house never rounds in
  its own favour.

Money is conserved: the players', the player/banker's and the house's changes always sum to zero.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from controller.games.paigow.bank import HOUSE_BOX, BankHolder
from controller.games.paigow.money import TableMoney
from controller.games.paigow.outcome import Outcome
from controller.games.paigow.profiles import Profile
from controller.games.paigow.wagers import Accepted, cover_breach
from shared.errors import InputError


@dataclass(frozen=True, slots=True)
class WagerResult:
    accepted: Accepted
    outcome: Outcome
    won: int  # gross amount won (0 unless outcome is WIN)
    commission: int
    net: int  # the player's change in cents: won - commission, -action, or 0

    @property
    def paid_back(self) -> int:
        """Chips handed to the player at settlement: the stake back plus the net win."""
        return self.accepted.wager.amount + self.net

    def as_json(self) -> dict[str, Any]:
        w = self.accepted.wager
        return {
            "box": w.box,
            "player": w.player,
            "amount": w.amount,
            "action": self.accepted.action,
            "returned": self.accepted.returned,
            "outcome": self.outcome.value,
            "won": self.won,
            "commission": self.commission,
            "net": self.net,
            "paid_back": self.paid_back,
            "notes": list(self.accepted.notes),
        }


@dataclass(frozen=True, slots=True)
class RoundSettlement:
    bank: BankHolder
    results: tuple[WagerResult, ...]  # in payment order, counter-clockwise from the chung
    banker_wager: int
    banker_gross: int  # the bank's result before commission and split: losers - winners
    banker_commission: int
    banker_net: int  # the player/banker's (or co-banker's) change; 0 when the house banks alone
    house_net: int  # the casino's change: commissions plus its share of the bank

    @property
    def players_net(self) -> int:
        return sum(r.net for r in self.results)

    @property
    def conserved(self) -> bool:
        return self.players_net + self.banker_net + self.house_net == 0

    def as_json(self) -> dict[str, Any]:
        return {
            "results": [r.as_json() for r in self.results],
            "banker_wager": self.banker_wager,
            "banker_gross": self.banker_gross,
            "banker_commission": self.banker_commission,
            "banker_net": self.banker_net,
            "house_net": self.house_net,
            "players_net": self.players_net,
            "conserved": self.conserved,
        }


def settle_round(
    profile: Profile,
    money: TableMoney,
    bank: BankHolder,
    wagers: Sequence[tuple[Accepted, Outcome]],
    banker_box: int = HOUSE_BOX,
    banker_wager: int = 0,
    n_boxes: int = 8,
    multiples_notice: bool = True,
) -> RoundSettlement:
    """Settle every wager of a round against the bank."""
    total_action = sum(a.action for a, _ in wagers)
    if bank is BankHolder.PLAYER and banker_wager < total_action:
        raise InputError(
            f"player/banker's wager {banker_wager} does not cover the wagers {total_action}:"
            " the player makes up the difference or the house banks (NSW 13.2.2, NZ 11.2(b))"
        )
    if bank is BankHolder.CO_BANK:
        if profile is Profile.NSW:
            raise InputError("NSW has no co-banking: the house or a player/banker banks (NSW 11.1)")
        if 2 * banker_wager < total_action:
            raise InputError(
                f"co-banker's wager {banker_wager} is under 50% of the wagers {total_action}"
                " (NZ 11.3(b), ACT 6.5)"
            )
        breach = cover_breach([a for a, _ in wagers], bank, money)
        if breach is not None:
            raise InputError(breach[1])
    if bank is BankHolder.HOUSE:
        banker_box = HOUSE_BOX

    def payment_order(item: tuple[Accepted, Outcome]) -> tuple[int, int]:
        # Counter-clockwise from the chung (NSW 13.1.8, 13.2.7; NZ 11.1(i), 11.2(i), 11.3(i)).
        acc = item[0]
        return ((acc.wager.box - banker_box) % n_boxes, acc.wager.distance_to_dealer)

    results = tuple(
        _settle_wager(profile, money, acc, outcome, multiples_notice, bank)
        for acc, outcome in sorted(wagers, key=payment_order)
    )
    commissions = sum(r.commission for r in results)
    # What the bank takes from losers minus what it pays winners (gross, before commission).
    gross = -sum(r.net + r.commission for r in results)
    if bank is BankHolder.HOUSE:
        return RoundSettlement(bank, results, 0, gross, 0, 0, gross + commissions)
    if bank is BankHolder.PLAYER:
        share, house_share = gross, 0
    else:
        house_share = gross // 2  # floor: an odd cent stays with the co-banker
        share = gross - house_share
    banker_commission = money.commission_chips(share) if share > 0 else 0
    return RoundSettlement(
        bank,
        results,
        banker_wager,
        gross,
        banker_commission,
        share - banker_commission,
        house_share + commissions + banker_commission,
    )


def _settle_wager(
    profile: Profile, money: TableMoney, acc: Accepted, outcome: Outcome, multiples_notice: bool,
    bank: BankHolder,
) -> WagerResult:
    if outcome is Outcome.PUSH:
        return WagerResult(acc, outcome, 0, 0, 0)
    if outcome is Outcome.LOSE:
        return WagerResult(acc, outcome, 0, 0, -acc.action)
    won = acc.action
    commission_of = money.commission_chips
    if profile is Profile.ACT and multiples_notice:
        # ACT 15.10 cuts a win paid "from the table float" (the house's, ACT 12.8): a player
        # banking alone pays from the losing wagers and their own wager, not the float.
        if bank is not BankHolder.PLAYER and act_short_payment(won, money, multiples_notice):
            won -= won % money.minimum
        if not money.unpayable_up:
            # ACT is silent here (docs/paigow.md): the table's reading pays down, not up.
            commission_of = money.commission_chips_up
    # Exact when the win less commission is payable in chips; otherwise the commission is rounded
    # down to the chips, i.e. the payment up to the next payable amount (NSW 14.3, ACT 15.10).
    commission = commission_of(won)
    return WagerResult(acc, outcome, won, commission, won - commission)


def act_short_payment(won: int, money: TableMoney, multiples_notice: bool) -> bool:
    """Whether ACT 15.10 pays a winning wager `won` to the lower multiple of the minimum only.

    All three conditions of the rule's first sentence: a notice requires multiples of the minimum,
    the wager is not a multiple, and it "cannot be paid in full from the table float" - its win
    less commission is not an exact number of chips. A wager under the minimum has no lower
    multiple above zero and ACT 5.1(c) says it "shall be paid": it is paid as the second sentence
    says, to the next higher payable amount (docs/paigow.md, "What a regulator should confirm").
    """
    return (
        multiples_notice
        and won > money.minimum
        and won % money.minimum != 0
        and not money.payable_exactly(won)
    )
