"""Carded play, shared by both round machines (issue 29): the Player Card that placed each
wager, head office's answer about it, and what a round owes each card at settlement.

Pure: the machines keep one `patrons` map in their JSON state (a seat key -> a card record) and
call these functions. A card is only its opaque id (never a name). Head office is asked through
a `patron` device effect (`card_check` / `card_reserve`, the patron contract); its answer, or
the daemon's word that none came within `[cards] answer_s`, returns as the `ho.card` event, so
the journal holds every answer and a replay decides the same.

The clauses: UTH 13.1 / Pai Gow 9.1, 16.1 (a valid card at the commencement of play, the
player's own); UTH 11.16.1 (a wager without one refused before the deal), 11.16.2 (found invalid
during a hand: returned, winnings not paid), 11.16.3 / 11.17.2 (earlier rounds stand), 13.3 (no
wager over the remaining Loss Limit), 11.17 / 11.17.1 (over the limit after the deal: valid up to
the limit, the excess returned in reverse order of the bets placed), 13.4 (a supervisor's
restriction), 13.2 (declared chips).

A card record: {"card", "status", "req", "asked", "granted", "remaining", "limit", "offline",
"reason", "found"}; status is CHECKING (card_check out), RESERVING (card_reserve out), VALID,
REFUSED (the wager went back before the deal: `reason` says why) or INVALID (11.16.2: found
invalid in the hand). `found` is set when head office granted less than was wagered after the
deal (11.17): the limit the round settles up to.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from controller.events import EffectKind, OutboxType
from controller.rounds import fields
from controller.rounds.base import Effect
from shared.errors import InputError
from shared.money import dollars

CARD_ID = re.compile(r"[A-Za-z0-9_-]{4,32}")  # the patron contract's opaque id
CHECKING, RESERVING, VALID, REFUSED, INVALID = (
    "checking", "reserving", "valid", "refused", "invalid")
PENDING = (CHECKING, RESERVING)
REFUSE, ALLOWANCE = "refuse", "allowance"
OFFLINE_REASON = "head office cannot confirm the card (UTH 13.1)"
NO_SERVICE_REASON = (
    "no patron service: this table is not linked to head office, so no Player Card can be"
    " confirmed (NSW Pai Gow 9.1, 16.1; UTH 13.1); link it ([link] enabled) or configure"
    " [cards] required = false")

JSON = dict[str, Any]


@dataclass(frozen=True)
class CardsConfig:
    """[cards] (docs/configuration.md). required: every wager needs a valid card (NSW Pai Gow
    9.1, 16.1; UTH 13.1). local: no head office (a standalone table). simulated: a standalone
    simulated table (`--simulate`, `./dev run`) has the simulated patron service: a well-formed
    card is a demo card, valid with no Loss Limit, answered at once by the table itself; a real
    standalone table that requires cards has no patron service and refuses every wager, saying
    why (NO_SERVICE_REASON). offline: what no answer within answer_ms means: REFUSE (strict)
    or ALLOWANCE (up to offline_allowance cents per card, journaled). departure: the line
    logged at start when a profile's rule is switched off (`required = false` on NSW)."""

    required: bool = False
    local: bool = True
    answer_ms: int = 2000
    offline: str = REFUSE
    offline_allowance: int = 0
    simulated: bool = False
    departure: str | None = None

    @property
    def asks(self) -> bool:
        """Head office is asked: cards required on a linked table. Not required, a card given
        is recorded with the wager and nothing is asked (NZ, ACT: no such rule)."""
        return self.required and not self.local

    @property
    def unserved(self) -> bool:
        """Cards required on a real standalone table: nobody can confirm a card (no link, not
        simulated), so every wager is refused with NO_SERVICE_REASON."""
        return self.required and self.local and not self.simulated

    def __post_init__(self) -> None:
        if self.offline not in (REFUSE, ALLOWANCE):
            raise InputError(f"cards offline must be {REFUSE!r} or {ALLOWANCE!r}")
        if self.answer_ms <= 0 or self.offline_allowance < 0:
            raise InputError("cards answer_ms must be positive, offline_allowance >= 0")


def card_id(data: Mapping[str, Any], key: str = "card") -> str | None:
    """The event's card id (opaque), None when absent; a malformed one is refused."""
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not CARD_ID.fullmatch(value):
        raise InputError(f"{key} must be a Player Card id (4-32 letters, digits, _ or -),"
                         f" got {value!r}")
    return value


def request(command: str, req: str, card: str, *, round_: int | None = None,
            amount: int | None = None) -> Effect:
    """Ask head office (the daemon's `patron` device sends it over the link)."""
    args: JSON = {"req": req, "card": card}
    if command == "card_reserve":
        args |= {"round": round_, "amount": amount}
    return Effect(EffectKind.DEVICE, {"device": "patron", "command": command, "args": args})


def present(config: CardsConfig, patrons: JSON, seat: str, card: str, req: str, *,
            check: bool = True) -> tuple[JSON, list[Effect]]:
    """A card at a seat (the reader's or the dealer's keyed id): head office checks it (not when
    `check` is False: a reservation follows at once, and its answer says whether it is valid)."""
    old = patrons.get(seat)
    if old is not None and old["card"] == card and old["status"] in (VALID, *PENDING):
        return patrons, []
    if not config.asks:
        record = _record(card, VALID)
        return {**patrons, seat: record}, []
    record = {**_record(card, CHECKING), "req": req}
    return {**patrons, seat: record}, [request("card_check", req, card)] if check else []


def _record(card: str, status: str) -> JSON:
    return {"card": card, "status": status, "req": None, "asked": 0, "granted": None,
            "remaining": None, "limit": None, "offline": False, "reason": None, "found": None}


def usable(config: CardsConfig, patrons: JSON, seat: str, what: str, rule: str) -> JSON | None:
    """The seat's card record for a wager, or InputError when the profile requires a valid card
    and there is none (refused before the deal: UTH 11.16.1 / Pai Gow 16.1)."""
    if config.unserved:
        raise InputError(f"{what}: {NO_SERVICE_REASON}")
    record = patrons.get(seat)
    if record is None or record["status"] in (REFUSED, INVALID):
        if not config.required:
            return None
        why = "" if record is None else f": {record['reason']}"
        raise InputError(f"{what} has no valid Player Card{why} ({rule})")
    return record


def reserve(config: CardsConfig, patrons: JSON, seat: str, amount: int, round_: int,
            req: str) -> tuple[JSON, list[Effect]]:
    """Reserve the most the seat's card can lose this round before the first card: refused at
    the keypad when head office already said less remains (UTH 13.3)."""
    record = patrons[seat]
    remaining = record["remaining"]
    if remaining is not None and amount > remaining:
        raise InputError(f"over the Loss Limit: {dollars(remaining)} remains, this wager"
                         f" risks {dollars(amount)} (UTH 13.3)")
    if not config.asks:
        return {**patrons, seat: {**record, "status": VALID, "asked": amount,
                                  "granted": amount}}, []
    others = held_elsewhere(patrons, seat, record["card"])
    record = {**record, "status": RESERVING, "req": req, "asked": amount, "granted": None,
              "others": others}
    return {**patrons, seat: record}, [request("card_reserve", req, record["card"],
                                               round_=round_, amount=others + amount)]


def held_elsewhere(patrons: JSON, seat: str, card: str) -> int:
    """What the card's other seats at this table hold or ask this round. Head office keeps one
    reservation per card, table and round (a repeat replaces it: headoffice/ledger/cards.py),
    so a card on two boxes (or a box and a jackpot wager on another's box, or a Pai Gow player
    on two boxes) asks for its total: each request is the seat's own plus this."""
    total = 0
    for s, r in patrons.items():
        if s == seat or r["card"] != card:
            continue
        if r["status"] == VALID:
            total += r["granted"] or 0
        elif r["status"] == RESERVING:
            total += r["asked"] or 0
    return total


def top_up(config: CardsConfig, patrons: JSON, seat: str, amount: int, round_: int,
           req: str) -> tuple[JSON, list[Effect]]:
    """The seat's reservation raised to `amount` for the round (a chip added to the seat's
    wagers after they were reserved: UTH 15.2.4 with 13.3). Head office's reservation of a
    round replaces its earlier one; should it refuse, the earlier grant stands (`topup`
    remembers it) and only the added chip is refused (Answer.chip)."""
    record = patrons[seat]
    base = record["granted"] if record["status"] == VALID else None
    if not config.asks:
        return {**patrons, seat: {**record, "status": VALID, "asked": amount,
                                  "granted": amount}}, []
    others = held_elsewhere(patrons, seat, record["card"])
    record = {**record, "status": RESERVING, "req": req, "asked": amount, "granted": None,
              "topup": base, "others": others}
    return {**patrons, seat: record}, [request("card_reserve", req, record["card"],
                                               round_=round_, amount=others + amount)]


@dataclass(frozen=True)
class Answer:
    """What head office's answer (or its silence) means for one seat."""

    seat: str
    record: JSON
    refused: str | None = None  # before the deal: the seat's wager goes back, with this reason
    invalid: str | None = None  # during the hand: 11.16.2
    capped: int | None = None  # during the hand: valid only up to this (UTH 11.17)
    chip: str | None = None  # a top-up refused: the added chip goes back, the rest stands


def answer(config: CardsConfig, patrons: JSON, data: Mapping[str, Any], offline_used: JSON,
           in_hand: bool) -> Answer | None:
    """Apply `ho.card` {req, card, valid, reason?, limit?, remaining?, restricted?, granted?} or
    {req, card, offline: true}. None: no seat waits for this request (a repeat, or an answer
    about a round already settled, which stands: 11.16.3, 11.17.2)."""
    req = fields.text(data, "req")
    card = card_id(data)
    seat = next((s for s, r in patrons.items() if r["req"] == req and r["card"] == card), None)
    if seat is None:
        return None
    record = dict(patrons[seat])
    asked = record["asked"]
    reserving = record["status"] == RESERVING or (record["offline"] and asked)
    if fields.flag(data, "offline", False):
        return _offline(config, seat, record, offline_used)
    record |= {"req": None, "offline": False}
    valid = fields.flag(data, "valid", False)
    restricted = fields.flag(data, "restricted", False)
    for key in ("limit", "remaining"):
        record[key] = fields.cents(data, key, None)
    if not valid or restricted:
        why = _why(data, "restricted (UTH 13.4)" if restricted else "card not valid")
        record |= {"status": INVALID if in_hand else REFUSED, "reason": why}
        if in_hand:
            return Answer(seat, record, invalid=why)
        return Answer(seat, record, refused=why)
    if not reserving:
        record["status"] = VALID
        return Answer(seat, record)
    total = fields.cents(data, "granted", 0)  # the card's whole reservation at this table
    granted = max(total - (record.pop("others", None) or 0), 0) if total else 0
    base = record.pop("topup", None)
    if granted >= asked:
        record |= {"status": VALID, "granted": granted}
        return Answer(seat, record)
    why = _why(data, f"over the Loss Limit: {dollars(granted)} can be risked (UTH 13.3)")
    if base is not None:  # a top-up refused: head office keeps the earlier grant (UTH 13.3)
        record |= {"status": VALID, "granted": base, "asked": base}
        return Answer(seat, record, chip=why)
    if in_hand:  # UTH 11.17: found over the limit after the deal
        record |= {"status": VALID, "granted": granted, "found": granted, "reason": why}
        return Answer(seat, record, capped=granted)
    record |= {"status": REFUSED, "granted": 0, "asked": 0, "reason": why}
    return Answer(seat, record, refused=why)


def _why(data: Mapping[str, Any], default: str) -> str:
    """Head office's reason, or ours when it gave none (`reason: null` in the contract)."""
    return fields.reason(data, default) if data.get("reason") else default


def _offline(config: CardsConfig, seat: str, record: JSON, offline_used: JSON) -> Answer:
    """No answer within answer_s. Strict (the default): refused. Allowance: up to what is left
    of the card's offline allowance, the request kept open for head office's late answer."""
    if record["status"] not in PENDING:
        return Answer(seat, record)  # already decided: the silence changes nothing
    used = offline_used.get(record["card"], 0)
    asked = record["asked"]
    if config.offline == ALLOWANCE and used + asked <= config.offline_allowance:
        record |= {"status": VALID, "offline": True, "granted": asked}
        return Answer(seat, record)
    why = OFFLINE_REASON
    if config.offline == ALLOWANCE:
        left = config.offline_allowance - used
        why = f"{OFFLINE_REASON}; offline allowance left {dollars(max(left, 0))}"
    record |= {"status": REFUSED, "req": None, "asked": 0, "granted": None, "reason": why}
    return Answer(seat, record, refused=why)


def reissue(patrons: JSON, round_: int) -> list[Effect]:
    """After a restart: the requests head office has not answered are asked again (the same
    `req`: head office answers a repeat the same, the patron contract)."""
    out = []
    for r in patrons.values():
        if r["status"] == CHECKING and r["req"]:
            out.append(request("card_check", r["req"], r["card"]))
        elif r["status"] == RESERVING and r["req"]:
            out.append(request("card_reserve", r["req"], r["card"], round_=round_,
                               amount=r["asked"]))
    return out


def pending(patrons: JSON, seats: list[str]) -> list[str]:
    """Seats with wagers still waiting for head office: no deal until they are answered."""
    return [s for s in seats if s in patrons and patrons[s]["status"] in PENDING]


def return_excess(bets: list[tuple[str, int]], valid: int) -> tuple[list[tuple[str, int]],
                                                                    list[tuple[str, int]]]:
    """11.17, 11.17.1: the bets (in the order placed) valid up to `valid` cents in all; the
    excess returned in reverse order of the bets placed. Returns (kept, returned), each
    [(bet, cents)] in placing order, with kept[i] + returned[i] == bets[i]."""
    excess = max(sum(a for _, a in bets) - valid, 0)
    back: dict[str, int] = {}
    for name, amount in reversed(bets):
        take = min(amount, excess)
        back[name] = take
        excess -= take
    kept = [(n, a - back.get(n, 0)) for n, a in bets]
    return kept, [(n, back.get(n, 0)) for n, a in bets]


def settled(round_: int, record: JSON, wagered: int, net: int, returned: int,
            void: bool) -> Effect:
    """card_settled: head office records the round's net for the card and releases its
    reservation (the patron contract). A void round's net is 0, or minus what a supervisor
    forfeited after an invalidation for fraud (UTH 13.10, NSW Pai Gow 16.6: the house keeps
    it, a loss like any other toward the Loss Limit); `wagered` is then the forfeited amount."""
    payload = {"round": round_, "card": record["card"], "reserved": record.get("granted") or 0,
               "wagered": wagered, "net": net, "returned": returned, "void": void}
    return Effect(EffectKind.OUTBOX, {"type": OutboxType.CARD_SETTLED, "payload": payload})


def settled_cards(round_: int, rows: list[tuple[JSON, int, int, int]],
                  void: bool) -> list[Effect]:
    """card_settled once per card, its seats summed: head office settles a card's round at a
    table once, releasing the one reservation (`held_elsewhere`). rows: (record, wagered,
    net, returned) per seat."""
    totals: dict[str, list[int]] = {}
    for record, wagered, net, returned in rows:
        t = totals.setdefault(record["card"], [0, 0, 0, 0])
        for i, v in enumerate((record.get("granted") or 0, wagered, net, returned)):
            t[i] += v
    return [settled(round_, {"card": card, "granted": t[0]}, t[1], t[2], t[3], void)
            for card, t in totals.items()]


def after_round(patrons: JSON) -> JSON:
    """The next round: the players keep their cards; reservations are released at settlement
    (head office's remaining changes with the round's net, so it is asked again)."""
    out = {}
    for seat, r in patrons.items():
        if r["status"] in (REFUSED, INVALID):
            continue  # the player must present a valid card again
        out[seat] = {**_record(r["card"], VALID)}
    return out


def who(data: Mapping[str, Any]) -> str:
    """Who restricted a card (UTH 13.4): the control socket's peer (`tablectl dealer`, its login,
    journaled by the daemon as `operator`), else the supervisor's id keyed as `by`."""
    operator = data.get("operator")
    if isinstance(operator, Mapping) and isinstance(operator.get("user"), str) and (
            operator["user"]):
        return str(operator["user"])[:64]
    return str(fields.text(data, "by"))[:64]


def restricted(card: str, by: str, reason: str) -> Effect:
    """13.4: a supervisor restricts the player until the Loss Limit period resets."""
    payload = {"card": card, "by": by[:64], "reason": reason[:200]}
    return Effect(EffectKind.OUTBOX, {"type": OutboxType.CARD_RESTRICTED, "payload": payload})


def declared(round_: int | None, card: str, amount: int, kind: str) -> Effect:
    """13.2: the chips a player declared (bought at the table or brought to it)."""
    if kind not in ("purchase", "brought"):
        raise InputError(f"kind must be 'purchase' or 'brought', got {kind!r}")
    payload = {"round": round_, "card": card, "amount": amount, "kind": kind}
    return Effect(EffectKind.OUTBOX, {"type": OutboxType.CHIPS_DECLARED, "payload": payload})
