"""Delivery, the result, voids and the round records."""

from __future__ import annotations

from dataclasses import replace

from controller.events import EffectKind, OutboxType
from controller.games.paigow.bank import BankHolder, BankState, after_round
from controller.games.paigow.profiles import Profile
from controller.games.paigow.wagers import accept, box_controller, cover_breach
from controller.rounds import fields
from controller.rounds.base import Effect, Now
from controller.rounds.paigow.carded import cards_adjust, cards_settled
from controller.rounds.paigow.core import (
    BANKER_VOID_RULE,
    FORFEIT_RULE,
    GAME,
    HAND_VOID_RULE,
    HOUSE_EXPOSED_RULE,
    INVALIDATED_RULE,
    TILE_VOID_RULE,
    UNDER_MINIMUM_RULE,
    VOID_RULE,
    Data,
    Refused,
    Result,
    alarm,
    bank_of,
    banker_json,
    bankers,
    house_way_by_dealer,
    log,
    open_round,
    show,
)
from controller.rounds.paigow.result import round_result, to_wager
from controller.rounds.paigow.state import JSON, PaiGowConfig, PaiGowState, bank_state
from shared.errors import InputError


def delivered(config: PaiGowConfig, state: PaiGowState, data: Data, now: Now) -> Result:
    house_way = house_way_by_dealer(config, state)
    if house_way:  # NZ 7.2: the dealer sets these boxes; their players may not
        boxes = ", ".join(str(b) for b in house_way)
        state, shown = show(state, "setting", f"SET YOUR HANDS / HOUSE WAY BOX {boxes}",
                            house_way=list(house_way))
    else:
        state, shown = show(state, "setting", "SET YOUR HANDS")
    return state, [*shown, log(f"round {state.number}: tiles delivered")]


def miscount(config: PaiGowConfig, state: PaiGowState, data: Data, now: Now) -> Result:
    """dealer.miscount {box, player, amount}: NZ 12.17, the dealer counted the bets wrongly
    at no more bets; `amount` is the wager as recounted (the chips on the layout, which stay
    as they are). The result then settles it; a player/banker's bank that no longer covers
    the winners is made up by the player/banker (a co-bank: equally with the house)."""
    if config.profile is not Profile.NZ and not config.miscount_make_up:
        raise InputError(
            f"profile {config.profile} has no miscount rule (NZ 12.17): the round settles the"
            " wagers as keyed; a wrong payment is put right by people, under the rules on"
            " over- and underpayment"
        )
    box = fields.box(data, config.boxes)
    player = fields.text(data, "player")
    amount = fields.integer(data, "amount")
    rows = [w for w in state.wagers if (w["box"], w["player"]) == (box, player)]
    if not rows:
        raise InputError(f"{player} has no wager on box {box}: nothing to recount")
    keyed = rows[0]["amount"]
    if amount == keyed:
        raise InputError(f"wager of {player} on box {box} is already {amount} c")
    fixed = {**rows[0], "amount": amount}
    wagers = [fixed if w is rows[0] else w for w in state.wagers]
    bank = bank_of(config, state)
    problem = _recount_problem(config, bank, fixed, wagers)
    if problem:
        raise Refused(f"recounted wager not accepted: {problem}; void the round (NZ 12.13)"
                      " or re-enter the count")
    rule = "NZ 12.17" if config.profile is Profile.NZ else "NZ 12.17 by the table's option"
    miscount = {"box": box, "player": player, "keyed": keyed, "counted": amount,
                "rule": rule}
    state = replace(state, wagers=wagers, miscounts=[*state.miscounts, miscount])
    return state, [log(f"wager of {player} on box {box} recounted: {keyed} c keyed,"
                       f" {amount} c on the layout ({rule})")]


def _recount_problem(
    config: PaiGowConfig, bank: BankState, row: JSON, wagers: list[JSON]
) -> str | None:
    money, notice = config.money, config.multiples_notice
    try:
        accepted = [accept(to_wager(w), config.profile, bank.holder, money, notice)
                    for w in wagers]
    except InputError as e:
        return str(e)
    breach = cover_breach(accepted, bank.holder, money)  # NZ 5.1(c): the house's half
    return None if breach is None else breach[1]


def enter_result(config: PaiGowConfig, state: PaiGowState, data: Data, now: Now) -> Result:
    bank = bank_of(config, state)
    try:
        result, alarms = round_result(
            config, bank, state.banker, state.wagers, state.off_boxes, data,
            house_way_boxes=house_way_by_dealer(config, state), miscounted=bool(state.miscounts),
            advised=frozenset(state.advised),
        )
    except InputError as e:
        raise Refused(f"result not accepted: {e}") from None
    advise = _to_advise(config, result)
    summary = {**_summary(config, state, "completed", now), **result,
               **({"advised": advise} if advise else {})}
    house_alone = bank.holder is BankHolder.HOUSE and not (
        (result.get("settlement") or {}).get("banker_net"))
    summary, card_fx = cards_adjust(state, summary, house_alone)  # NSW 16.1
    effects = [alarm(a) for a in alarms] + card_fx + _records(summary)
    effects += [alarm(f"advise {p}: further wagers under the minimum are returned regardless"
                      f" of the result ({UNDER_MINIMUM_RULE})", "info") for p in advise]
    effects += cards_settled(config, state, summary, False)
    state = replace(state, advised=sorted({*state.advised, *advise}))
    history = _history(config, state, bank)
    state, opened = open_round(config, state, state.number + 1, after_round(bank), now, history)
    return state, [*effects, *opened]


def _to_advise(config: PaiGowConfig, result: JSON) -> list[str]:
    """ACT 5.1(c): the owners of wagers under the minimum paid or collected this round, to
    be advised that further ones are returned regardless of the result."""
    if config.profile is not Profile.ACT or result["settlement"] is None:
        return []
    minimum = config.money.minimum
    return sorted({r["player"] for r in result["settlement"]["results"]
                   if r["amount"] < minimum and r["action"] > 0})


def void_round(config: PaiGowConfig, state: PaiGowState, data: Data, now: Now) -> Result:
    kind = fields.text(data, "kind", "distribution")
    if kind == "invalidated":
        return _invalidated(config, state, data, now)
    rules = {"distribution": VOID_RULE, "tile": TILE_VOID_RULE,
             "banker_exposed": BANKER_VOID_RULE,
             "mixed": {Profile.NZ: "NZ 12.15"}}.get(kind)
    if rules is None or config.profile not in rules:
        raise InputError(f"kind {kind!r}: no void rule for it in profile {config.profile}")
    if kind == "distribution" and config.profile is Profile.NSW:
        # NSW 15.11/15.13: reconstructed before the tiles were handled, or noticed only
        # after: the round goes on (NZ 12.13 and ACT 13.9 void it whatever happened).
        if fields.flag(data, "handled", False):
            return state, [log("incorrect distribution noticed after the tiles were handled:"
                               " the round is played to a conclusion (NSW 15.13)")]
        if fields.flag(data, "reconstructed", False):
            return state, [log("incorrect distribution reconstructed before the tiles were"
                               " handled: the round goes on (NSW 15.11)")]
    reason = fields.text(data, "reason", "incorrect distribution")
    record = {"reason": reason, "rule": rules[config.profile],
              "returned": [dict(w) for w in state.wagers]}  # all monies returned
    return _voided(config, state, record, data, now)


def _invalidated(config: PaiGowConfig, state: PaiGowState, data: Data, now: Now) -> Result:
    """dealer.void {kind: "invalidated", cause: "disruption"|"fraud", reason, forfeit?:
    [players]}: a casino supervisor invalidates the round's outcome (NSW 16.5, ACT 15.3),
    whatever was handled; the wagers are refunded (NSW 16.6, ACT 15.4) but those of the
    players named in `forfeit`, who perpetrated the fraud (NSW 16.6 only)."""
    rules = INVALIDATED_RULE.get(config.profile)
    if rules is None:
        raise InputError(f"profile {config.profile} has no rule invalidating a game's outcome"
                         " (NSW 16.5, ACT 15.3): void the round for its own cause")
    fields.operator(data, "a casino supervisor invalidates the outcome (NSW 16.5, ACT 15.3):"
                          " through the control socket, `tablectl dealer void"
                          " kind=invalidated ...`, which names who; not from the keypad")
    cause = fields.text(data, "cause")
    if cause not in rules:
        raise InputError(f"cause {cause!r}: one of {sorted(rules)}")
    forfeit = _forfeit(config, state, data, cause)
    returned = [dict(w) for w in state.wagers if w["player"] not in forfeit]
    record: JSON = {"kind": "invalidated", "cause": cause,
                    "reason": fields.text(data, "reason"), "rule": rules[cause],
                    "returned": returned}
    if forfeit:
        forfeited = [dict(w) for w in state.wagers if w["player"] in forfeit]
        record |= {"forfeited": forfeited,
                   "house_net": sum(w["amount"] for w in forfeited)}  # the house keeps them
    return _voided(config, state, record, data, now)


def _forfeit(config: PaiGowConfig, state: PaiGowState, data: Data, cause: str) -> set[str]:
    raw = data.get("forfeit")
    if raw is None:
        return set()
    if not isinstance(raw, list) or not all(isinstance(n, str) and n.strip() for n in raw):
        raise InputError(f"forfeit must be a list of player names, got {str(raw)[:80]}")
    rule = FORFEIT_RULE.get(config.profile)
    if rule is None:  # ACT (NZ has no invalidation at all)
        raise InputError("no wager is forfeited: every wager is refunded (ACT 15.4)")
    if cause != "fraud":
        raise InputError(f"only the wagers of a fraud's perpetrators are forfeited ({rule},"
                         " NSW 16.5.2): cause must be fraud")
    names = {n.strip() for n in raw}
    holders = bankers(state)
    for name in sorted(names):
        if name in holders:
            raise InputError(f"{name} holds the bank: only keyed wagers are forfeited; the"
                             " supervisor settles the bank's wager by hand")
        if not any(w["player"] == name for w in state.wagers):
            raise InputError(f"{name} has no wager this round to forfeit")
    return names


def _voided(config: PaiGowConfig, state: PaiGowState, record: JSON, data: Data,
            now: Now) -> Result:
    """Round N ends void with `record` (reason, rule, returned, ...) and N+1 opens; the
    round record names who voided it when the control socket said (`operator`)."""
    who = fields.operator(data)
    summary = {**_summary(config, state, "voided", now), **record,
               **({"voided_by": who} if who else {})}
    effects = _records(summary) + cards_settled(config, state, summary, True)
    effects.append(log(f"round {state.number} void ({record['rule']}): {record['reason']};"
                       " re-shuffle all 32 tiles"))
    # A void round is no round of play ("void: invalid with no result", NSW 1.1): the bank's
    # round count does not move, and a bank the house took over only for this round (a
    # finished bank without a taker, a banker who could not cover) stands as it opened, so
    # a void house round cannot split a box's consecutive rounds (NSW 6.7, NZ 5.4, ACT 6.7).
    # A player who took the bank in this round keeps it.
    bank = bank_of(config, state)
    if bank.holder is BankHolder.HOUSE:
        bank = bank_state(config, state.bank_at_open)
        state = replace(state, banker=state.banker_at_open)
    state, opened = open_round(config, state, state.number + 1, bank, now, state.last_round)
    return state, [*effects, *opened]


def hand_void(config: PaiGowConfig, state: PaiGowState, data: Data, now: Now) -> Result:
    """dealer.hand_void {box, exposed}: the dealer exposed `exposed` (2 or more) tiles of a
    box's hand and its player calls the hand void before viewing the rest (NSW 15.3.1,
    NZ 12.3(a), ACT 13.7): that box's wagers go back, the round goes on. On the
    player/banker's box the round is void and the tiles reshuffled (NSW 15.3.2, NZ 12.3(b));
    the house's hand is played (NSW 15.5, NZ 12.5, ACT 13.4)."""
    box = fields.box(data, config.boxes)
    exposed = fields.integer(data, "exposed")
    if exposed < 2:
        single = {Profile.NZ: " (NZ 12.4)", Profile.ACT: " (ACT 13.6)"}.get(config.profile, "")
        raise InputError(f"{exposed} tile(s) exposed: the hand is played{single}; the option"
                         f" needs two or more ({HAND_VOID_RULE[config.profile]})")
    bank = bank_of(config, state)
    if box == bank.box:
        if bank.holder is BankHolder.HOUSE:
            raise InputError(f"box {box} holds the house's hand: it is played"
                             f" ({HOUSE_EXPOSED_RULE[config.profile]})")
        if config.profile not in BANKER_VOID_RULE:
            raise InputError(f"profile {config.profile} gives the player/banker no such option"
                             f" ({HAND_VOID_RULE[config.profile]} is a player's)")
        reason = f"player/banker on box {box} called the hand void: {exposed} tiles exposed"
        return void_round(config, state, {"kind": "banker_exposed", "reason": reason}, now)
    returned = [w for w in state.wagers if w["box"] == box]
    if not returned:
        raise InputError(f"box {box} has no wager: no hand to call void")
    rule = HAND_VOID_RULE[config.profile]
    void = {"box": box, "exposed": exposed, "rule": rule, "returned": returned}
    state = replace(state, wagers=[w for w in state.wagers if w["box"] != box],
                    void_hands=[*state.void_hands, void])
    total = sum(w["amount"] for w in returned)
    return state, [log(f"box {box}: hand called void after {exposed} tiles exposed ({rule});"
                       f" {total} c returned")]


def hands_mixed(config: PaiGowConfig, state: PaiGowState, data: Data, now: Now) -> Result:
    """dealer.hands_mixed {boxes}: tiles of two or more hands mixed beyond reconstruction:
    the hands involved are void (NZ 12.15): their wagers go back. The bank's hand among
    them leaves nothing to play against: the round is void."""
    if config.profile is not Profile.NZ:
        raise InputError(f"mixed hands are NZ 12.15; profile {config.profile} has no such rule")
    boxes = fields.boxes(data, "boxes", config.boxes) or []
    if len(boxes) < 2:
        raise InputError("boxes: the two or more hands whose tiles were mixed (NZ 12.15)")
    if bank_of(config, state).box in boxes:
        reason = f"hands of boxes {boxes} mixed, the bank's among them"
        return void_round(config, state, {"kind": "mixed", "reason": reason}, now)
    voids, kept = [], list(state.wagers)
    for box in boxes:
        returned = [w for w in kept if w["box"] == box]
        kept = [w for w in kept if w["box"] != box]
        voids.append({"box": box, "rule": "NZ 12.15", "returned": returned})
    state = replace(state, wagers=kept, void_hands=[*state.void_hands, *voids])
    return state, [log(f"hands of boxes {boxes} mixed beyond reconstruction: void,"
                       " wagers returned (NZ 12.15)")]


def _summary(config: PaiGowConfig, state: PaiGowState, status: str, now: Now) -> JSON:
    return {
        "number": state.number,
        "status": status,
        "game": GAME,
        "rules": config.profile.value,
        "opened_at": state.opened_at,
        "closed_at": now.utc,
        "banker": {**state.bank, **banker_json((state.banker or {}).get("player"),
                                              (state.banker or {}).get("funds"),
                                              (state.banker or {}).get("shared_with") or [])},
        "off_boxes": list(state.off_boxes),
        "wagers": [dict(w) for w in state.wagers],
        "dice": state.dice,
        "reshakes": state.reshakes,
        "steal": state.steal,
        "first_box": state.first_box,
        "cut": state.cut,
        **({"void_hands": [dict(v) for v in state.void_hands]} if state.void_hands else {}),
        **({"house_way_boxes": {str(b): p for b, p in house_way.items()}}
           if (house_way := house_way_by_dealer(config, state)) else {}),
        **({"miscounts": [dict(m) for m in state.miscounts]} if state.miscounts else {}),
        **({"lajas": [dict(x) for x in state.lajas]} if state.lajas else {}),
    }


def _records(summary: JSON) -> list[Effect]:
    number, status = summary["number"], summary["status"]
    return [
        Effect(EffectKind.ROUND, {"number": number, "status": status, "summary": summary}),
        Effect(EffectKind.OUTBOX, {"type": OutboxType.ROUND_RESULT, "payload": summary}),
    ]


def _history(config: PaiGowConfig, state: PaiGowState, bank: BankState) -> JSON:
    """Who played where this round: the next bank offer's eligibility (NSW 6.3-6.6, NZ 5.3,
    ACT 6.3). The player/banker played on the bank's box."""
    players: dict[str, set[int]] = {}
    by_box: dict[int, list[JSON]] = {}
    for w in state.wagers:
        players.setdefault(w["player"], set()).add(w["box"])
        by_box.setdefault(w["box"], []).append(w)
    controllers: dict[str, str] = {}
    for box, rows in sorted(by_box.items()):
        try:
            controllers[str(box)] = box_controller([to_wager(r) for r in rows], config.profile)
        except InputError:  # ACT 7.4(c): a tie nobody nominated; nobody controls it
            continue
    banker = (state.banker or {}).get("player")
    if bank.holder is not BankHolder.HOUSE and banker is not None:
        players.setdefault(banker, set()).add(bank.box)
        controllers[str(bank.box)] = banker
    return {
        "recorded": bool(state.wagers),
        "players": {p: sorted(b) for p, b in sorted(players.items())},
        "controllers": controllers,
    }
