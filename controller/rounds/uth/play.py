"""The round itself: cards, deal mapping, decisions, settlement and voids (rules 5.5, 7, 9, 10,
11.1-11.7, 12.2, 15.3.1). Wagers and decisions are validated by the engine's `wagers.Round`,
rebuilt from the state on each event (it is a mutable object; the state is JSON).
"""

from __future__ import annotations

from typing import Any

from controller.events import EffectKind, OutboxType
from controller.games.uth.cards import Card, format_card, parse_card
from controller.games.uth.deal import Deal, DealMethod, cards_needed, deal
from controller.games.uth.evaluator import category_of
from controller.games.uth.settlement import RoundResult, settle_round
from controller.games.uth.wagers import Action, BoxWagers, Decision, Round, Street
from controller.rounds import fields
from controller.rounds.base import Effect, Now
from controller.rounds.uth import carded, jackpot
from controller.rounds.uth import effects as fx
from controller.rounds.uth.state import (
    BETTING,
    DEALING,
    FLOP,
    IN_PLAY,
    JSON,
    PHASES,
    PREFLOP,
    READY,
    RIVER,
    SHUFFLING,
    UthConfig,
    UthState,
    replace,
)
from shared.errors import InputError

Result = tuple[UthState, list[Effect]]

# dealer.decision actions per street (9.1-9.3); `None`: a check, no engine decision.
ACTIONS: dict[str, dict[str, Decision | None]] = {
    PREFLOP: {
        "play4": Decision.play(4),
        "play3": Decision.play(3),
        "check": None,
        "fold": Decision(Action.FOLD, Street.PREFLOP),
    },
    FLOP: {"play2": Decision.play(2), "check": None, "fold": Decision(Action.FOLD, Street.FLOP)},
    RIVER: {"play1": Decision.play(1), "fold": Decision(Action.FOLD, Street.RIVER)},
}


def engine_round(state: UthState) -> Round:
    """The engine's order-of-play machine at the state's point of the round."""
    rnd = Round()
    for box, (ante, blind, trips) in sorted(state.box_wagers().items()):
        rnd.place(box, BoxWagers(ante, blind, trips))
    if not state.in_round:
        return rnd
    rnd.start_deal()
    decided = [(int(b), Decision.parse(d)) for b, d in state.decisions.items()]
    steps = ((Street.PREFLOP, FLOP, rnd.reveal_flop), (Street.FLOP, RIVER, rnd.reveal_river))
    for street, after, advance in steps:
        for box, d in decided:
            if d.street is street:
                rnd.decide(box, d)
        if PHASES.index(state.phase) < PHASES.index(after):
            return rnd
        advance()
    for box, d in decided:
        if d.street is Street.RIVER:
            rnd.decide(box, d)
    return rnd


def needed(state: UthState) -> int:
    return cards_needed(len(state.wagers))


def deal_method(config: UthConfig, state: UthState) -> DealMethod:
    """The deal mapping: 7.3 for a shoe or the dealer's hand (12.2.3), else the table's."""
    return DealMethod.SHOE if state.dealt_by else config.deal_method


def the_deal(config: UthConfig, state: UthState) -> Deal:
    cards = [parse_card(c) for c in state.cards]
    return deal(cards, [int(b) for b in state.wagers], deal_method(config, state))


def any_play(state: UthState) -> bool:
    return any(Decision.parse(d).action is Action.PLAY for d in state.decisions.values())


def preflop_plays(state: UthState) -> bool:
    """A Play wager made before the flop was revealed (3x or 4x, 9.1.2)."""
    return any(
        (d := Decision.parse(t)).action is Action.PLAY and d.street is Street.PREFLOP
        for t in state.decisions.values()
    )


# -- cards ---------------------------------------------------------------------------------------
def on_card(config: UthConfig, state: UthState, data: Any, now: Now) -> Result:
    effects: list[Effect] = []
    if not state.in_round:
        state, effects = _first_card(config, state, now)
    raw = data.get("card")
    index = data.get("index", len(state.cards))
    if not isinstance(index, int) or isinstance(index, bool) or index < 0:
        raise InputError(f"card.dispensed: bad index {index!r}")
    if index < len(state.cards) and state.cards[index] == raw:
        return state, [*effects, fx.log(f"card {raw} #{index} delivered twice, ignored")]
    card = _card(raw)
    if card is None:
        text = f"foreign or unreadable card {raw!r} out of the shuffler"
        return _void_surveillance(config, state, effects, text)
    if format_card(card) in state.cards:
        text = f"card {format_card(card)} out of the shuffler twice: a card foreign to the deck"
        return _void_surveillance(config, state, effects, text)
    if index != len(state.cards):
        why = f"card #{index} after {len(state.cards)} cards: a card was missed"
        return void(config, state, [*effects, fx.alarm("technician", why, "11.1")], why, "11.1")
    if state.dealt:
        return _extra_card(config, state, effects, format_card(card))
    state = replace(state, cards=[*state.cards, format_card(card)])
    if len(state.cards) < needed(state):
        return state, effects
    the_deal(config, state)  # validates the mapping (7.2/7.3) before the state says dealt
    n = len(state.cards)
    return replace(state, dealt=True, phase=PREFLOP), [*effects, fx.log(f"dealt: {n} cards")]


def _card(raw: Any) -> Card | None:
    if not isinstance(raw, str):
        return None
    try:
        return parse_card(raw)
    except InputError:
        return None


def _first_card(config: UthConfig, state: UthState, now: Now) -> Result:
    """5.5: the first card out of the shuffler locks every wager and the jackpot wagers."""
    if state.phase not in (BETTING, DEALING):
        raise InputError(f"card out of the shuffler while {state.phase}")
    if not state.wagers:
        raise InputError("card out of the shuffler with no hand in play (5.3): not dealt")
    if not deck_usable(state):
        raise InputError(f"card out of deck {state.deck}, which is {state.deck_status} (4.1)")
    status = state.deck_status if state.dealt_by else IN_PLAY  # 12.2.3: no shuffler deck
    state = replace(state, phase=DEALING, deck_status=status, checks=[])
    state, effects = jackpot.lock(config, state, now)
    return state, [fx.log(f"round {state.round}: first card out, wagers locked (5.5)"), *effects]


def deck_usable(state: UthState) -> bool:
    if state.dealt_by:  # a shoe or the dealer's hand (12.2.3): the dealer's own cards
        return True
    return state.deck_status == READY and state.deck not in state.suspect


def _extra_card(config: UthConfig, state: UthState, effects: list[Effect], card: str) -> Result:
    """A card too many is a wrong count (11.1): the round is void (11.3) whatever was played;
    the 11.4.2 exception covers only the dealer's own hole cards."""
    why = f"card {card} out after the deal was complete"
    return void(config, state, [*effects, fx.alarm("technician", why, "11.1")], why, "11.1")


def _void_surveillance(
    config: UthConfig, state: UthState, effects: list[Effect], why: str
) -> Result:
    # 11.7.3: the deck is checked (the shuffler's deck check or the dealer's confirmation)
    # before it is used again; it stays out of play until then.
    text = (f"{why}: round void, notify surveillance (11.7.4); deck {state.deck} to be checked"
            " before it is used again (11.7.3)")
    alarm = fx.alarm("surveillance", text, "11.7")
    state = replace(state, suspect=sorted({*state.suspect, state.deck}))
    return void(config, state, [*effects, alarm], why, "11.7")


def on_dealt(config: UthConfig, state: UthState, data: Any, now: Now) -> Result:
    """dealer.dealt: the dealer says the deal is complete; too few cards is a misdeal (11.1)."""
    if state.dealt:
        return state, [fx.log("deal confirmed")]
    if not state.in_round:
        raise InputError("dealer.dealt: no card has been dealt")
    why = f"{len(state.cards)} cards dealt, {needed(state)} needed"
    return void(config, state, [fx.alarm("technician", why, "11.1")], why, "11.1")


# -- decisions and streets (9.1-9.3) ---------------------------------------------------------
def on_decision(config: UthConfig, state: UthState, data: Any, now: Now) -> Result:
    box = fields.box(data, config.boxes)
    action = fields.text(data, "action")
    allowed = ACTIONS[state.phase]
    if action not in allowed:
        raise InputError(f"box {box}: {action!r} not allowed {state.phase}: {sorted(allowed)}")
    decision = allowed[action]
    if str(box) in state.decisions:
        raise InputError(f"box {box} already decided ({state.decisions[str(box)]}) (9.2.3.1, 9.5)")
    if str(box) not in state.wagers:
        raise InputError(f"box {box} has no hand this round")
    if decision is None:
        if box in state.checks:
            raise InputError(f"box {box} already checked")
        return replace(state, checks=sorted({*state.checks, box})), [fx.log(f"box {box}: check")]
    engine_round(state).decide(box, decision)  # the engine's order of play decides legality
    decisions = {**state.decisions, str(box): str(decision)}
    return replace(state, decisions=decisions), [fx.log(f"box {box}: {decision}")]


# The street revealed from each phase: dealer.flop is accepted in preflop only and leads to flop,
# dealer.turn_river in flop only and leads to river (machine.py's routes).
NEXT_STREET = {PREFLOP: FLOP, FLOP: RIVER}


def on_street(config: UthConfig, state: UthState, data: Any, now: Now) -> Result:
    """dealer.flop (9.2) / dealer.turn_river (9.3): undecided boxes have checked (9.1.3, 9.2.2)."""
    rnd = engine_round(state)
    rnd.reveal_flop() if state.phase == PREFLOP else rnd.reveal_river()
    return replace(state, checks=[]), [fx.log(f"{NEXT_STREET[state.phase]} revealed")]


# -- settlement (10) -------------------------------------------------------------------------
def on_dealer_hand(config: UthConfig, state: UthState, data: Any, now: Now) -> Result:
    """dealer.dealer_hand {conceded?: [boxes]} (10.1): undecided boxes fold (11.10); boxes that
    conceded once the dealer made their hand lose every wager (10.5, entered from the keypad);
    settle; jackpot; next round."""
    rnd = engine_round(state)
    rnd.reveal_dealer()
    for box in fields.boxes(data, "conceded", config.boxes) or []:
        played = state.decisions.get(str(box))
        made = Decision.parse(played) if played else None
        if made is None or made.action is not Action.PLAY:
            raise InputError(f"box {box} has no Play wager to concede (10.5)")
        rnd.decide(box, Decision(Action.CONCEDE, made.street, made.multiple))  # engine checks
    plays = rnd.plays()
    d = the_deal(config, state)
    result = settle_round(d, plays, config.rules)
    # A conceded hand was folded (10.5): for the jackpot it counts as folded does (15.1.4).
    folded = {p.box for p in plays if p.decision.action in (Action.FOLD, Action.CONCEDE)}
    state, jp_fx, jp_summary = jackpot.settle(config, state, d, folded)
    summary = _summary(state, d, result, {p.box: str(p.decision) for p in plays})
    # Each box as its Player Card allows (11.16.2, 11.17); card_settled per card.
    summary["boxes"], card_fx = carded.settle_boxes(config, state, summary["boxes"])
    summary["house_net"] = -sum(b["net"] for b in summary["boxes"])
    jp_fx = [*jp_fx, *card_fx]
    if state.jackpot_owners:  # 15.2.1.1: whose jackpot wager each such box carried
        jp_summary = {**jp_summary, "owners": dict(state.jackpot_owners)}
    summary["jackpot"] = jp_summary
    return next_round(config, state, "completed", summary, jp_fx)


def _summary(state: UthState, d: Deal, result: RoundResult, decisions: dict[int, str]) -> JSON:
    boxes = []
    for b in result.boxes:
        spots = [s.as_json() for s in b.spots]
        boxes.append(
            {
                "box": b.box,
                "hole": [format_card(c) for c in d.boxes[b.box]],
                "decision": decisions[b.box],
                "category": b.category.name.lower(),
                "placed": sum(s.placed for s in b.spots),
                "returned": sum(s.returned for s in b.spots),
                "net": b.net,
                "spots": spots,
            }
        )
    return {
        "round": state.round,
        "deck": state.deck,
        "cards": list(state.cards),
        "community": [format_card(c) for c in d.community],
        "dealer": {
            "cards": [format_card(c) for c in d.dealer],
            "category": category_of(result.dealer_rank).name.lower(),
            "qualifies": result.dealer_qualifies,
        },
        "boxes": boxes,
        "house_net": result.house_net,
        **({"void_hands": list(state.void_hands)} if state.void_hands else {}),  # 11.6.2
    }


# -- void (11.1-11.7, 12.2, 15.3.1) ----------------------------------------------------------
def void(
    config: UthConfig, state: UthState, effects: list[Effect], reason: str, rule: str,
    record: JSON | None = None, forfeit: frozenset[int] = frozenset(),
) -> Result:
    """The round is void: every wager goes back (11.3, 11.7.2, 12.2.1), jackpot wagers are
    cancelled and returned (15.3.1); the deck is reshuffled and the next round opens.
    `forfeit`: boxes whose Ante, Blind, Play and Trips the supervisor forfeited (13.10), kept by
    the house; their jackpot wagers still go back (15.3.1). `record`: more of the round record
    (an invalidation's kind, cause, who)."""
    returned, forfeited = [], []
    for box, (ante, blind, trips) in sorted(state.box_wagers().items()):
        made = state.decisions.get(str(box))
        play = ante * Decision.parse(made).multiple if made else 0
        jp = config.jackpot_wager if box in state.jackpot_boxes else 0
        main = {"box": box, "ante": ante, "blind": blind, "trips": trips, "play": play}
        if box in forfeit:
            forfeited.append(main)
            main = {**main, "ante": 0, "blind": 0, "trips": 0, "play": 0}
        row = {**main, "jackpot": jp}
        if str(box) in state.patrons:
            row["card"] = state.patrons[str(box)]["card"]
        returned.append(row)
    state, cancel_fx = jackpot.cancel(config, state)
    lost = {str(w["box"]): w["ante"] + w["blind"] + w["trips"] + w["play"] for w in forfeited}
    cancel_fx = [*cancel_fx, *carded.voided(config, state, lost)]
    summary = {
        "round": state.round,
        "deck": state.deck,
        "cards": list(state.cards),
        **(record or {}),
        "reason": reason,
        "rule": rule,
        "returned": returned,
    }
    if forfeited:
        summary |= {"forfeited": forfeited, "house_net": sum(
            w["ante"] + w["blind"] + w["trips"] + w["play"] for w in forfeited)}
    return next_round(config, state, "voided", summary, [*effects, *cancel_fx])


def next_round(
    config: UthConfig, state: UthState, status: str, summary: JSON, effects: list[Effect]
) -> Result:
    """Record the round (committed with the event) and open the next one on the next deck,
    which the shuffler is told to shuffle (4.1.2, 4.2)."""
    number = state.round
    if state.dealt_by:  # 12.2.3: the shuffler is out of use, its decks stay as they are
        summary = {**summary, "dealt_by": state.dealt_by}
    deck = state.deck if state.dealt_by else config.next_deck(state.deck)
    # Head office gets the round's own record: one document, stored once by the journal.
    summary = {**summary, "round": number, "status": status}
    effects = [
        *effects,
        Effect(EffectKind.ROUND, {"number": number, "status": status, "summary": summary}),
        fx.outbox(OutboxType.ROUND_RESULT, summary),
        *([] if state.dealt_by else [fx.shuffle(deck)]),
    ]
    winners = [int(b) for b, lamp in state.lamps.items() if lamp == jackpot.WIN]
    state = replace(
        state,
        phase=BETTING,
        round=number + 1,
        deck=deck,
        deck_status=state.deck_status if state.dealt_by else SHUFFLING,
        wagers={},
        cards=[],
        dispense=0,
        dealt=False,
        jackpot_boxes=[],
        decisions={},
        checks=[],
        pool_at_lock=None,
        void_hands=[],
        jackpot_owners={},
        patrons=carded.next_patrons(state),
    )
    state, lamp_fx = jackpot.relamp(config, state, keep=winners)
    return state, [*effects, *lamp_fx]
