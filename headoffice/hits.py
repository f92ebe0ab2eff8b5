"""Is a table's jackpot hit what it claims? Head office's checks before any money moves.

A `jackpot_hit` pays only if everything adds up against what head office itself knows:

- the round's jackpot wagers were ledgered from this table (a `jackpot_increment` for the
  round, not cancelled, on the same pool) and every box in the hit wagered in it (15.2.4);
- the cards can exist together: valid tokens, one deck (rule 3.1), each hand the box's two
  hole cards plus the one flop (15.2.6), no card in two places;
- each hand is the category the table claims, and the boxes named as hits are exactly the
  hands that qualify (15.2.8).

What does not add up is held as a PENDING hit with an alarm (the "jackpot lock"), as is any
award at or above the verification threshold (a Royal Flush by default) or the dual-control
threshold (`dual_control_from`, whatever hand made it): a person authenticated
at head office approves or refuses it (the console, or `tablectl-headoffice hit approve|refuse`
run by an OS login in `[service] operators`); an award of `dual_control_from` cents or more
needs two different people (headoffice/ledger/decisions.py). A table's own `jackpot_verified`
is recorded against the held hit and shown to the approver; it never releases it. The award
itself is always head office's own, by rule 15 (`Pool.award`), never an amount the table sends.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from shared.errors import InputError
from shared.money import dollars

# $10,000: the usual threshold above which a casino's hand-paid jackpot needs a second signature.
DUAL_CONTROL_FROM = 1_000_000


@dataclass(frozen=True)
class HitPolicy:
    verify_from: str | None = "royal_flush"  # category label; None: no category waits
    verify_above: int | None = None  # cents: a round's awards above this wait too
    max_wager: int = 100_000  # cents per jackpot wager (15.2.3: the sign's amount)
    # cents: an award this or more, whatever the hand, is held and needs two different
    # approvers (dual control, the casino's "two signatures" for a hand-paid jackpot); None:
    # one is enough, and only what verify_from / verify_above hold waits.
    dual_control_from: int | None = DUAL_CONTROL_FROM


def needs_two(policy: HitPolicy, amount: int) -> bool:
    """Does an award of `amount` cents need a second, different approver?"""
    return policy.dual_control_from is not None and amount >= policy.dual_control_from


def entries_of(payload: dict[str, Any]) -> list[Any]:
    """The hit's hands as the UTH engine's JackpotEntry values; InputError if a card is not a
    card or a hand repeats a card."""
    from controller.games.uth.cards import parse_cards
    from controller.games.uth.jackpot import JackpotEntry

    return [JackpotEntry(e["box"], parse_cards(e["cards"], count=5), e["wager"],
                         bool(e.get("folded", False)))
            for e in payload["entries"]]


def problems(payload: dict[str, Any], wagered: dict[str, Any] | None) -> list[str]:
    """Why this hit does not add up (empty: it does). `payload` has passed
    contract.check_outbox_payload; `wagered` is the round's ledgered increment payload
    ({boxes, wager, pool_id, cancelled}) or None."""
    from controller.games.uth.cards import parse_cards
    from controller.games.uth.evaluator import Category, category_of, hand_rank

    found: list[str] = []
    round_ = payload["round"]
    if wagered is None:
        found.append(f"no jackpot wagers ledgered from this table for round {round_}")
    elif wagered.get("cancelled"):
        found.append(f"the jackpot wagers of round {round_} were cancelled (15.3.1)")
    elif wagered.get("pool_id") != payload["pool_id"]:
        found.append(f"round {round_} wagered on pool {wagered.get('pool_id')!r},"
                     f" the hit names {payload['pool_id']!r}")
    boxes = [e["box"] for e in payload["entries"]]
    if len(set(boxes)) != len(boxes):
        found.append(f"a box appears twice: {boxes} (one jackpot wager per box, 5.6)")
    if wagered is not None:
        not_wagered = sorted(set(boxes) - set(wagered.get("boxes", [])))
        if not_wagered:
            found.append(f"boxes {not_wagered} made no jackpot wager in round {round_} (15.2.4)")
        wrong = sorted(e["box"] for e in payload["entries"] if e["wager"] != wagered.get("wager"))
        if wrong:
            found.append(f"boxes {wrong}: wager differs from the {wagered.get('wager')} ledgered")
    try:
        flop = parse_cards(payload.get("flop") or [], count=3)
    except (InputError, TypeError, AttributeError) as exc:
        return [*found, f"flop: {exc}"]
    seen: dict[int, int] = {c: 0 for c in flop}  # card -> box holding it (0: the flop)
    qualifying: set[int] = set()
    for e in payload["entries"]:
        try:
            cards = parse_cards(e["cards"], count=5)
        except InputError as exc:
            found.append(f"box {e['box']}: {exc}")
            continue
        if cards[2:] != flop:  # 15.2.6: two hole cards, then the flop
            found.append(f"box {e['box']}: the hand is not its 2 hole cards plus the flop")
        clash = sorted({seen[c] for c in cards[:2] if c in seen})
        if clash:
            where = ", ".join("the flop" if b == 0 else f"box {b}" for b in clash)
            found.append(f"box {e['box']}: a card also in {where} (one deck, rule 3.1)")
        seen.update(dict.fromkeys(cards[:2], e["box"]))
        if len(set(cards)) != 5:
            continue
        category = category_of(hand_rank(cards))
        claimed = e.get("category")
        if claimed is not None and claimed != category.label:
            found.append(f"box {e['box']}: claims {claimed!r}, the cards make {category.label}")
        if category >= Category.FLUSH:  # 15.2.8: the winning jackpot events
            qualifying.add(e["box"])
    if set(payload["hits"]) != qualifying:
        found.append(f"hits {sorted(set(payload['hits']))} are not the qualifying hands"
                     f" {sorted(qualifying)} (15.2.8)")
    return found


def needs_verification(policy: HitPolicy, payouts: list[dict[str, Any]]) -> str | None:
    """Why an award that adds up still waits for a person, or None."""
    from controller.games.uth.evaluator import Category

    if policy.verify_from is not None:
        limit = Category.from_label(policy.verify_from)
        big = [p for p in payouts
               if p["award"] in {c.label for c in Category if c >= limit}]
        if big:
            return (f"{hand_in_words(big[0]['award'])} award on box {big[0]['box']} waits for"
                    f" verification (at or above {hand_in_words(policy.verify_from)})")
    total = sum(p["amount"] for p in payouts)
    if policy.verify_above is not None and total > policy.verify_above:
        return (f"awards of {dollars(total)} exceed {dollars(policy.verify_above)}: wait for"
                " verification")
    # Dual control is for every award from its threshold, whatever hand made it: an award two
    # people must sign is never paid on the table's word alone (a Straight Flush on a large
    # meter, a threshold set below the Royal's minimum).
    if needs_two(policy, total):
        return (f"awards of {dollars(total)} reach the dual-control threshold of"
                f" {dollars(policy.dual_control_from or 0)}: two different approvers release"
                " them")
    return None


def hand_in_words(label: str | None) -> str:
    """A hand category as a person reads it: "royal_flush" -> "Royal Flush"."""
    if not label:
        return "no qualifying hand"
    return " ".join(w if w in ("of", "a") else w.capitalize() for w in label.split("_"))


def hands_of(payload: dict[str, Any]) -> list[dict[str, Any]]:
    """Each box of a hit as head office reads its cards: {box, cards (as sent), hand (in words:
    the category head office evaluates if it qualifies, 15.2.8, else "no qualifying hand";
    "unreadable cards" if they are not five distinct cards), qualifies, claimed (the table's
    category, as sent), wager, folded}."""
    from controller.games.uth.cards import parse_cards
    from controller.games.uth.evaluator import Category, category_of, hand_rank

    out = []
    for e in payload.get("entries") or []:
        hand, qualifies = "unreadable cards", False
        try:
            cards = parse_cards(e["cards"], count=5)
        except (InputError, KeyError, TypeError, AttributeError):
            cards = []
        if len(set(cards)) == 5:
            category = category_of(hand_rank(cards))
            qualifies = category >= Category.FLUSH  # 15.2.8: the winning jackpot events
            hand = hand_in_words(category.label if qualifies else None)
        out.append({"box": e.get("box"), "cards": list(e.get("cards") or []), "hand": hand,
                    "qualifies": qualifies, "claimed": e.get("category"),
                    "wager": e.get("wager"), "folded": bool(e.get("folded", False))})
    return out
