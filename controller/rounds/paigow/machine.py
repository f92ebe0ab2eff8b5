"""The Pai Gow round state machine: (state, event, now) -> (state, effects), pure.

closed -> betting (bank, OFF boxes, wagers) -> [NZ: cutting] -> shaking -> announced -> setting
-> completed (next round opens in betting); dealer.void from cutting..setting voids the round;
betting -> off_draw -> betting removes a box (NSW 15.9.3-15.9.4, NZ 12.10).

The rules come from controller/games/paigow (bank.py, dice.py, cuts.py, wagers.py, settlement.py);
this package only sequences them, one concern per module (table, bank, wagers, cut, dice,
ending), each a set of steps mixed into `PaiGowMachine`. `ROUTES` below is the event contract:
each event kind, its step, the phases it is accepted in and the phases it may lead to
(docs/rounds-paigow.md prints the table and draws the graph).
"""

from __future__ import annotations

from collections.abc import Mapping

from controller.events import EffectKind, Kind
from controller.games.paigow.bank import accepts_wager
from controller.rounds import cards
from controller.rounds.base import Effect, Event, Guarded, Now, Route, skip_rounds
from controller.rounds.paigow.bank import BankSteps
from controller.rounds.paigow.carded import CardSteps
from controller.rounds.paigow.core import (
    LOCK_RULE,
    SHAKE,
    Refused,
    Result,
    alarm,
    banker_json,
    log,
    off_draw_refusal,
)
from controller.rounds.paigow.cut import CutSteps
from controller.rounds.paigow.dice import DiceSteps
from controller.rounds.paigow.ending import RoundEnd
from controller.rounds.paigow.lajas import LajaSteps
from controller.rounds.paigow.state import (
    IN_ROUND,
    JSON,
    PHASES,
    PaiGowConfig,
    PaiGowState,
    Phase,
    state_from_json,
    state_to_json,
)
from controller.rounds.paigow.table import TableSteps
from controller.rounds.paigow.wagers import WagerSteps
from shared.errors import InputError

# Events of other games or of the link: nothing for a Pai Gow round to do.
IGNORED = frozenset({Kind.TICK, Kind.LINK_UP, Kind.LINK_DOWN, Kind.HO_POOL, Kind.HO_AWARD})
# Device events of the other game: refused with a log line ("not a Pai Gow event").
OTHER_GAME = frozenset({
    Kind.BET_ON, Kind.BET_OFF, Kind.SHUFFLER_READY, Kind.SHUFFLER_JAM, Kind.SHUFFLER_FAULT,
    Kind.CARD_DISPENSED, Kind.DECK_CHECK,
})

ANY = PHASES
BETTING = (Phase.BETTING,)
DICE = (Phase.SHAKING, Phase.OFF_DRAW)
BEFORE_DICE = (Phase.BETTING, Phase.CUTTING, Phase.SHAKING)
ENDS = (Phase.BETTING,)  # the round ends: the next one opens in betting (or the draw ends)
# Each event kind: its step (a method of one of the mixins, named here, never looked up by a
# string), the phases it is accepted in, the phases it may lead to (staying is always declared).
# docs/rounds-paigow.md draws the graph.
ROUTES: tuple[Route, ...] = (
    Route(Kind.TABLE_OPEN, TableSteps._table_open, (Phase.CLOSED,), to=BETTING),
    Route(Kind.TABLE_CLOSE, TableSteps._table_close, (Phase.BETTING, Phase.OFF_DRAW),
          to=(Phase.CLOSED,)),
    Route(Kind.CHUNG_ON, BankSteps._chung_on, ANY),
    Route(Kind.CHUNG_OFF, BankSteps._chung_off, ANY),
    Route(Kind.OFF_PRESSED, TableSteps._off_pressed, ANY),
    Route(Kind.OFF_RELEASED, TableSteps._off_released, ANY),
    Route(Kind.DEALER_OFF_CLEAR, TableSteps._off_clear, ANY),
    # NSW 15.9.3-15.9.4, NZ 12.10: the OFF-box draw, between rounds.
    Route(Kind.DEALER_OFF_DRAW, TableSteps._off_draw, BETTING, to=(Phase.OFF_DRAW,)),
    Route(Kind.DEALER_OFF_CANCEL, TableSteps._off_cancel, (Phase.OFF_DRAW,), to=BETTING),
    Route(Kind.DEALER_BANK, BankSteps._dealer_bank, BETTING),
    Route(Kind.DEALER_HOUSE_BANK, BankSteps._dealer_house_bank, BETTING),
    Route(Kind.DEALER_WAGER, WagerSteps._dealer_wager, BETTING),
    Route(Kind.DEALER_WAGER_REMOVE, WagerSteps._dealer_wager_remove, BETTING),
    Route(Kind.DEALER_CUT, CutSteps._dealer_cut, BEFORE_DICE, to={Phase.CUTTING: (Phase.SHAKING,)}),
    Route(Kind.DEALER_STEAL, CutSteps._dealer_steal, BEFORE_DICE),
    # NZ 9.3A: the cut is chosen before the dice (cutting); elsewhere straight to the shaker.
    Route(Kind.DEALER_NO_MORE_BETS, DiceSteps._no_more_bets, BETTING,
          to=(Phase.CUTTING, Phase.SHAKING)),
    Route(Kind.CUT_SELECTED, CutSteps._cut_selected, (Phase.CUTTING,), to=(Phase.SHAKING,)),
    Route(Kind.DEALER_SHAKE, DiceSteps._dealer_shake, DICE),
    Route(Kind.DICE_NOT_FLAT, DiceSteps._dice_not_flat, DICE),
    # The round's dice announce the first box and cut; the OFF draw's remove a box.
    Route(Kind.DICE_RESULT, DiceSteps._dice_result, DICE,
          to={Phase.SHAKING: (Phase.ANNOUNCED,), Phase.OFF_DRAW: BETTING}),
    Route(Kind.SHAKER_FAULT, DiceSteps._shaker_fault, ANY),
    Route(Kind.METER_FAULT, DiceSteps._meter_fault, ANY),
    Route(Kind.METER_READY, DiceSteps._meter_ready, ANY),
    Route(Kind.METER_COMMAND_FAILED, DiceSteps._meter_fault, ANY),
    Route(Kind.DEALER_DELIVERED, RoundEnd._delivered, (Phase.ANNOUNCED,), to=(Phase.SETTING,)),
    Route(Kind.DEALER_RESULT, RoundEnd._result, (Phase.SETTING,), to=ENDS),
    Route(Kind.DEALER_VOID, RoundEnd._void, IN_ROUND, to=ENDS),
    Route(Kind.DEALER_HAND_VOID, RoundEnd._hand_void, (Phase.ANNOUNCED, Phase.SETTING), to=ENDS),
    Route(Kind.DEALER_HANDS_MIXED, RoundEnd._hands_mixed, (Phase.SETTING,), to=ENDS),
    Route(Kind.DEALER_CONTROL, WagerSteps._dealer_control, BETTING),
    Route(Kind.DEALER_MISCOUNT, RoundEnd._miscount, (Phase.ANNOUNCED, Phase.SETTING)),
    Route(Kind.DEALER_LAJA, LajaSteps._laja, BEFORE_DICE),
    Route(Kind.DEALER_RESHUFFLE, LajaSteps._reshuffle, BEFORE_DICE),
    Route(Kind.HO_CARD, CardSteps._ho_card, ANY),
    Route(Kind.DEALER_PLAYER_CARD, CardSteps._player_card, BETTING),
    Route(Kind.DEALER_CARD_INVALID, CardSteps._card_invalid, BETTING),
    Route(Kind.DEALER_CARD_RESTRICT, CardSteps._card_restrict, ANY),
    Route(Kind.DEALER_CHIPS_DECLARED, CardSteps._chips_declared, ANY),
    Route(Kind.CARDREADER_READ, CardSteps._card_read, ANY),
    Route(Kind.CARDREADER_UNREADABLE, CardSteps._card_read, ANY),
    Route(Kind.CARDREADER_REMOVED, CardSteps._card_read, ANY),
    Route(Kind.CARDREADER_FAULT, CardSteps._card_read, ANY),
)


class PaiGowMachine(
    TableSteps, BankSteps, WagerSteps, CardSteps, CutSteps, DiceSteps, LajaSteps, RoundEnd,
    Guarded[PaiGowState],
):
    """One table's Pai Gow rounds. Holds only configuration; every state is passed in."""

    phases = PHASES

    def __init__(self, config: PaiGowConfig) -> None:
        super().__init__(config)
        self.bind(ROUTES, self)

    # -- the RoundMachine protocol ---------------------------------------------------------------

    def initial(self) -> PaiGowState:
        return PaiGowState()

    def step(self, state: PaiGowState, event: Event, now: Now) -> Result:
        if event.kind == Kind.JOURNAL_LOSS_ACCEPTED:
            return skip_rounds(state, "number", event.data), []
        if event.kind in IGNORED:
            return state, []
        if event.kind not in self.routes:
            text = f"{event.kind}: not a Pai Gow event, ignored"
            return state, [log(text, event=event.kind, refused=True)]
        if not isinstance(event.data, Mapping):
            text = f"{event.kind}: data must be a JSON object"
            return state, [log(text, event=event.kind, refused=True)]
        try:
            return self.dispatch(state, event, now)
        except Refused as e:
            refused = alarm(f"{event.kind} refused: {e}")
            return state, [Effect(EffectKind.ALARM, {**refused.data, "refused": True})]
        except InputError as e:
            return state, [log(f"{event.kind} refused: {e}", event=event.kind, refused=True)]
        except Exception as e:  # a bug: journaled with an alarm, the round kept as it was
            self.failed(e)
            text = f"{event.kind}: internal error {type(e).__name__}: {e}"
            return state, [Effect(EffectKind.ALARM, {"severity": "technician", "text": text})]

    def phase_of(self, state: PaiGowState) -> str:
        return state.phase

    def refusal(self, state: PaiGowState, kind: str) -> Exception:
        """An event outside its phases, in the words the dealer has always seen."""
        if kind == Kind.TABLE_CLOSE and state.phase in IN_ROUND:
            return Refused(f"round {state.number} is in play: void it or enter its result first")
        if kind == Kind.DEALER_OFF_DRAW:
            return InputError(off_draw_refusal(self.profile, state.phase))
        if kind in (Kind.DEALER_WAGER, Kind.DEALER_WAGER_REMOVE) and state.phase in IN_ROUND:
            return InputError(f"wagers are locked after no more bets ({LOCK_RULE[self.profile]})")
        return InputError(f"not accepted in state {state.phase} (round {state.number})")

    def to_json(self, state: PaiGowState) -> JSON:
        return state_to_json(state)

    def from_json(self, data: JSON) -> PaiGowState:
        return state_from_json(data)

    def status(self, state: PaiGowState) -> JSON:
        bank = self._bank(state)
        return {
            "game": self.game,
            "rules": self.profile.value,
            "state": state.phase,
            "round": state.number,
            "awaiting": self._awaiting(state),
            "boxes": self.config.boxes,
            "table": {
                "minimum": self.config.money.minimum,
                "maximum": self.config.money.maximum,
                "chip_unit": self.config.money.chip_unit,
            },
            "banker": {**state.bank, **banker_json((state.banker or {}).get("player"),
                                                  (state.banker or {}).get("funds"),
                                                  (state.banker or {}).get("shared_with") or [])},
            "bank_offer": self._offer(state) if state.phase == Phase.BETTING else [],
            "off_boxes": list(state.off_boxes),
            "open_boxes": [b for b in range(1, self.config.boxes + 1)
                           if b not in state.off_boxes and accepts_wager(bank, b)],
            "wagers": [dict(w) for w in state.wagers],
            "wager_total": sum(w["amount"] for w in state.wagers),
            "controls": dict(state.controls),
            "house_way_boxes": {str(b): p for b, p in self._house_way_boxes(state).items()},
            "last_controllers": dict(state.last_round["controllers"]),
            "cut_choice": state.cut_choice,
            "steal": state.steal,
            "dice": state.dice,
            "reshakes": state.reshakes,
            "first_box": state.first_box,
            "delivery": [d.as_json() for d in self._delivery(state)],
            "cut": state.cut,
            "fault": state.fault,
            "display": dict(state.display),
        }

    def seat_view(self, state: PaiGowState) -> JSON:
        # The tiles are dealt by hand and never read: a seat sees nothing status does not.
        return self.status(state)

    def resume(self, state: PaiGowState) -> list[Effect]:
        effects = [Effect(EffectKind.DISPLAY, dict(state.display))]
        if state.phase in (Phase.SHAKING, Phase.OFF_DRAW) and state.fault is None:
            effects.append(SHAKE)
        if state.phase == Phase.CUTTING:
            effects.append(self._select_cut_request())
        return [*effects, *cards.reissue(state.patrons, state.number)]  # unanswered card asks

    def _awaiting(self, state: PaiGowState) -> str:
        if state.phase == Phase.CLOSED:
            return Kind.TABLE_OPEN
        if state.phase in (Phase.SHAKING, Phase.OFF_DRAW):
            return "dealer" if state.fault else "shaker"
        if state.phase == Phase.CUTTING:
            return Kind.CUT_SELECTED
        return "dealer"
