"""Ultimate Texas Hold'em round state machine (issue 4; docs/rounds-uth.md is its contract).

betting -> dealer.deal (7.1) -> dealing: the first card out locks every wager and the jackpot
wagers (5.5) -> deal mapping (7.2/7.3) -> preflop / flop / river decisions (9.1-9.3) ->
dealer.dealer_hand: settlement (10), jackpot (15.2) -> next round, the used deck reshuffled (4.1.2)
while the other is dealt (4.2). Irregularities: misdeal (11.1-11.4), missing or foreign card
(11.7), shuffler malfunction (12.1 / 12.2), jackpot equipment failure (11.11).

The steps live by concern: betting.py (table, wagers, sensors, deal), shuffler.py (decks),
keypad.py (misdeals, voids), link.py (the link's state, the meter), play.py (the round's cards,
decisions, streets and settlement), jackpot.py (head office's pool and awards, the switch),
status.py. Each route names the function that does the work. `ROUTES` is the event contract: each
kind, its step, the phases it is accepted in and the phases it may lead to (docs/rounds-uth.md
prints the table and draws the graph).

`step` is pure: it reads only (state, event, now) and never raises on input from outside.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from controller.events import Kind
from controller.games.uth.evaluator import build_tables
from controller.rounds.base import JSON, Effect, Event, Guarded, Now, Route, skip_rounds
from controller.rounds.uth import betting, carded, jackpot, keypad, link, shuffler
from controller.rounds.uth import effects as fx
from controller.rounds.uth import play as rnd
from controller.rounds.uth.state import (
    PHASES,
    Phase,
    UthConfig,
    UthState,
    initial_state,
    state_from_json,
    state_to_json,
)
from controller.rounds.uth.status import resume, status
from shared.errors import InputError

Result = tuple[UthState, list[Effect]]

__all__ = ["OTHER_GAME", "ROUTES", "UthConfig", "UthMachine", "UthState"]

ANY = PHASES
IN_ROUND = (Phase.DEALING, Phase.PREFLOP, Phase.FLOP, Phase.RIVER)
BETTING = (Phase.BETTING,)
DECIDING = (Phase.PREFLOP, Phase.FLOP, Phase.RIVER)
# Where a round ends: the next round opens in betting (a settlement, a void, a misdeal).
ENDS = (Phase.BETTING,)
# A card out of the shuffler (or dealt by hand, 12.2.3): the first locks the wagers (5.5), the
# last completes the deal (7.2), a foreign, repeated or missed one voids the round (11.1, 11.7).
CARD_TO = {
    Phase.BETTING: (Phase.DEALING,),
    Phase.DEALING: (Phase.PREFLOP, Phase.BETTING),
    **{p: ENDS for p in DECIDING},
}
# 12.1: before the round's first card the deck is reshuffled and dealing starts again from
# betting; 12.2 (mid-round), 11.7.2 (a bad deck): the round is void.
VOIDS = {p: ENDS for p in IN_ROUND}
# Each event kind: its step, the phases it is accepted in, and where it leads: `then` the phase
# the guard sets when the step returns, `to` the phases the step chooses among (staying is
# always declared). The wording of a refusal: `_REFUSALS`. docs/rounds-uth.md draws the graph.
ROUTES: tuple[Route, ...] = (
    Route(Kind.TABLE_OPEN, betting.open_table, (Phase.CLOSED,), then=Phase.BETTING),
    Route(Kind.TABLE_CLOSE, betting.close_table, BETTING, then=Phase.CLOSED),
    Route(Kind.DEALER_WAGER, betting.wager, BETTING),
    Route(Kind.DEALER_WITHDRAW, betting.withdraw, BETTING),
    Route(Kind.BET_ON, betting.bet_on, ANY),
    Route(Kind.BET_OFF, jackpot.bet_off, ANY),
    Route(Kind.DEALER_DEAL, betting.deal, (Phase.BETTING, Phase.DEALING), then=Phase.DEALING),
    Route(Kind.DEALER_DEAL_METHOD, betting.switch_method, BETTING),
    Route(Kind.DEALER_CARD, betting.dealer_card, ANY, to=CARD_TO),
    Route(Kind.DEALER_JACKPOT_OTHER, betting.jackpot_other, BETTING),
    Route(Kind.SHUFFLER_READY, shuffler.ready, ANY),
    Route(Kind.SHUFFLER_JAM, shuffler.malfunction, ANY, to=VOIDS),
    Route(Kind.SHUFFLER_FAULT, shuffler.malfunction, ANY, to=VOIDS),
    Route(Kind.DECK_CHECK, shuffler.deck_check, ANY, to=VOIDS),
    Route(Kind.DEALER_DECK_CHECK, shuffler.check_deck, (Phase.CLOSED, *BETTING, Phase.DEALING)),
    Route(Kind.DEALER_DECK_CONFIRMED, shuffler.deck_confirmed, ANY),
    Route(Kind.CARD_DISPENSED, keypad.card, ANY, to=CARD_TO),
    # Too few cards when the dealer says the deal is complete: a misdeal (11.1).
    Route(Kind.DEALER_DEALT, rnd.on_dealt, IN_ROUND, to={Phase.DEALING: ENDS}),
    Route(Kind.DEALER_MISDEAL, keypad.misdeal, IN_ROUND, to=ENDS),
    Route(Kind.DEALER_VOID, keypad.void, IN_ROUND, to=ENDS),
    Route(Kind.DEALER_DECISION, rnd.on_decision, DECIDING),
    Route(Kind.DEALER_FLOP, rnd.on_street, (Phase.PREFLOP,), then=Phase.FLOP),
    Route(Kind.DEALER_TURN_RIVER, rnd.on_street, (Phase.FLOP,), then=Phase.RIVER),
    Route(Kind.DEALER_DEALER_HAND, rnd.on_dealer_hand, (Phase.RIVER,), to=ENDS),
    Route(Kind.HO_POOL, jackpot.on_pool, ANY),
    Route(Kind.HO_AWARD, jackpot.on_award, ANY),
    Route(Kind.DEALER_JACKPOT_VERIFY, jackpot.verify, ANY),
    Route(Kind.LINK_UP, link.link(True), ANY),
    Route(Kind.LINK_DOWN, link.link(False), ANY),
    Route(Kind.DEALER_JACKPOT_OFF, jackpot.switch(False), ANY),
    Route(Kind.DEALER_JACKPOT_ON, jackpot.switch(True), ANY),
    Route(Kind.METER_FAULT, link.meter_fault, ANY),
    Route(Kind.METER_READY, link.meter_ready, ANY),
    Route(Kind.METER_COMMAND_FAILED, link.meter_command_failed, ANY),
    Route(Kind.TICK, jackpot.on_quiet, ANY),
    Route(Kind.HO_CARD, carded.ho_card, ANY),
    Route(Kind.DEALER_PLAYER_CARD, carded.player_card, ANY),
    Route(Kind.DEALER_CARD_INVALID, carded.card_invalid, ANY),
    Route(Kind.DEALER_CARD_RESTRICT, carded.restrict, ANY),
    Route(Kind.DEALER_CHIPS_DECLARED, carded.chips_declared, ANY),
    Route(Kind.CARDREADER_READ, carded.player_card, ANY),
    Route(Kind.CARDREADER_UNREADABLE, carded.unreadable, ANY),
    Route(Kind.CARDREADER_REMOVED, carded.removed, ANY),
    Route(Kind.CARDREADER_FAULT, carded.reader_fault, ANY),
)
EVENT_KINDS = frozenset(r.kind for r in ROUTES)
# Device events of the other game: refused with a log line ("not part of the UTH vocabulary").
OTHER_GAME = frozenset({
    Kind.CHUNG_ON, Kind.CHUNG_OFF, Kind.OFF_PRESSED, Kind.OFF_RELEASED, Kind.DICE_RESULT,
    Kind.DICE_NOT_FLAT, Kind.SHAKER_FAULT, Kind.CUT_SELECTED,
})
_REFUSALS: dict[str, str] = {
    Kind.TABLE_OPEN: "the table is already open",
    Kind.TABLE_CLOSE: betting.CLOSE_BETWEEN_ROUNDS,
    Kind.DEALER_MISDEAL: "no round in progress",
    Kind.DEALER_VOID: "no round in progress",
    Kind.DEALER_DECISION: "no decision while {phase}",
    Kind.DEALER_DEALT: "dealer.dealt: no card has been dealt",
    Kind.DEALER_DECK_CHECK: "no deck check during a round",
}


class UthMachine(Guarded[UthState]):
    """The `RoundMachine` for UTH. Holds configuration only; all state is in `UthState`."""

    game = "uth"
    phases = PHASES

    def __init__(self, config: UthConfig | None = None) -> None:
        self.config = config or UthConfig()
        # The hand evaluator's tables now, while the daemon starts: built at the first
        # showdown they would stall the event loop (~0.6 s here, tens of seconds under the
        # VM's TCG: past the watchdog). Importing the game's modules no longer builds them.
        build_tables()
        self.bind(ROUTES, self.config)

    def initial(self) -> UthState:
        return initial_state(self.config)

    def step(self, state: UthState, event: Event, now: Now) -> Result:
        if event.kind == Kind.JOURNAL_LOSS_ACCEPTED:  # recover.py: held_wagers stand at HO
            held = event.data.get("held_wagers") if isinstance(event.data, Mapping) else None
            if self.config.linked and type(held) is int and held > 0:  # its cancel not sent
                state = replace(state, ledger={**state.ledger,
                                               "wagered": state.ledger["wagered"] + held})
            return skip_rounds(state, "round", event.data), []
        try:
            if event.kind not in self.routes:
                raise InputError(f"event {event.kind!r} is not part of the UTH vocabulary")
            if not isinstance(event.data, Mapping):
                raise InputError(f"{event.kind}: data must be an object")
            new, effects = self.dispatch(state, event, now)
        except InputError as exc:
            new, effects = state, [fx.log(f"{event.kind} refused: {exc}", refused=True)]
        except Exception as exc:  # a bug must not crash-loop the daemon on replay
            self.failed(exc)
            text = f"{event.kind}: internal error {type(exc).__name__}: {exc}"
            new, effects = state, [fx.alarm("technician", text)]
        new, clock_fx = jackpot.refresh(self.config, new, now)
        return new, effects + clock_fx

    def phase_of(self, state: UthState) -> str:
        return state.phase

    def refusal(self, state: UthState, kind: str) -> Exception:
        """An event outside its phases, in the words the dealer has always seen."""
        if kind in (Kind.DEALER_WAGER, Kind.DEALER_WITHDRAW):
            if state.in_round:  # the engine words the lock (5.5)
                what = "placed or changed" if kind == Kind.DEALER_WAGER else "withdrawn"
                try:
                    rnd.engine_round(state).check_open(what)
                except InputError as exc:
                    return exc
            return InputError(f"betting is closed ({state.phase}; 7.1 no more bets)")
        wording = _REFUSALS.get(kind, "{kind} while {phase}")
        return InputError(wording.format(kind=kind, phase=state.phase))

    def to_json(self, state: UthState) -> JSON:
        return state_to_json(state)

    def from_json(self, data: JSON) -> UthState:
        return state_from_json(data)

    def status(self, state: UthState) -> JSON:
        return status(self.config, state)

    def seat_view(self, state: UthState) -> JSON:
        return status(self.config, state, hole_cards=True)

    def resume(self, state: UthState) -> list[Effect]:
        return resume(self.config, state)
