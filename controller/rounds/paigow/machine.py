"""The Pai Gow round state machine: (state, event, now) -> (state, effects), pure.

closed -> betting (bank, OFF boxes, wagers) -> [NZ: cutting] -> shaking -> announced -> setting
-> completed (next round opens in betting); dealer.void from cutting..setting voids the round;
betting -> off_draw -> betting removes a box (NSW 15.9.3-15.9.4, NZ 12.10).

The rules come from controller/games/paigow (bank.py, dice.py, cuts.py, wagers.py, settlement.py);
this package only sequences them, one concern per module (table, bank, wagers, cut, dice,
lajas, carded, ending), each a set of functions over the configuration and a state. `ROUTES`
below is the event contract: each event kind, the function that does the work, the phases it is
accepted in and the phases it may lead to (docs/rounds-paigow.md prints the table and draws the
graph).
"""

from __future__ import annotations

from collections.abc import Mapping

from controller.events import EffectKind, Kind
from controller.games.paigow.bank import accepts_wager
from controller.rounds import cards
from controller.rounds.base import Effect, Event, Guarded, Now, Route, skip_rounds
from controller.rounds.paigow import bank, carded, cut, dice, ending, lajas, table, wagers
from controller.rounds.paigow.core import (
    GAME,
    LOCK_RULE,
    SHAKE,
    Refused,
    Result,
    alarm,
    bank_of,
    bank_offer,
    banker_json,
    delivery_of,
    house_way_by_dealer,
    log,
    off_draw_refusal,
)
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
# Each event kind: its step (a function of the configuration, state, data and now, in the module
# of its concern), the phases it is accepted in, and where it leads: `then` the phase the guard
# sets when the step returns, `to` the phases the step chooses among (staying is always declared).
# docs/rounds-paigow.md draws the graph.
ROUTES: tuple[Route, ...] = (
    Route(Kind.TABLE_OPEN, table.table_open, (Phase.CLOSED,), to=BETTING),
    Route(Kind.TABLE_CLOSE, table.table_close, (Phase.BETTING, Phase.OFF_DRAW),
          then=Phase.CLOSED),
    Route(Kind.CHUNG_ON, bank.chung_on, ANY),
    Route(Kind.CHUNG_OFF, bank.chung_off, ANY),
    Route(Kind.OFF_PRESSED, table.off_pressed, ANY),
    Route(Kind.OFF_RELEASED, table.off_released, ANY),
    Route(Kind.DEALER_OFF_CLEAR, table.off_clear, ANY),
    # NSW 15.9.3-15.9.4, NZ 12.10: the OFF-box draw, between rounds.
    Route(Kind.DEALER_OFF_DRAW, table.off_draw, BETTING, then=Phase.OFF_DRAW),
    Route(Kind.DEALER_OFF_CANCEL, table.off_cancel, (Phase.OFF_DRAW,), then=Phase.BETTING),
    Route(Kind.DEALER_BANK, bank.dealer_bank, BETTING),
    Route(Kind.DEALER_HOUSE_BANK, bank.dealer_house_bank, BETTING),
    Route(Kind.DEALER_WAGER, wagers.dealer_wager, BETTING),
    Route(Kind.DEALER_WAGER_REMOVE, wagers.dealer_wager_remove, BETTING),
    Route(Kind.DEALER_CUT, cut.dealer_cut, BEFORE_DICE, then={Phase.CUTTING: Phase.SHAKING}),
    Route(Kind.DEALER_STEAL, cut.dealer_steal, BEFORE_DICE),
    # NZ 9.3A: the cut is chosen before the dice (cutting); elsewhere straight to the shaker.
    Route(Kind.DEALER_NO_MORE_BETS, dice.no_more_bets, BETTING,
          to=(Phase.CUTTING, Phase.SHAKING)),
    Route(Kind.CUT_SELECTED, cut.cut_selected, (Phase.CUTTING,), then=Phase.SHAKING),
    Route(Kind.DEALER_SHAKE, dice.dealer_shake, DICE),
    Route(Kind.DICE_NOT_FLAT, dice.dice_not_flat, DICE),
    # The round's dice announce the first box and cut; the OFF draw's remove a box.
    Route(Kind.DICE_RESULT, dice.dice_result, DICE,
          to={Phase.SHAKING: (Phase.ANNOUNCED,), Phase.OFF_DRAW: BETTING}),
    Route(Kind.SHAKER_FAULT, dice.shaker_fault, ANY),
    Route(Kind.METER_FAULT, dice.meter_fault, ANY),
    Route(Kind.METER_READY, dice.meter_ready, ANY),
    Route(Kind.METER_COMMAND_FAILED, dice.meter_fault, ANY),
    Route(Kind.DEALER_DELIVERED, ending.delivered, (Phase.ANNOUNCED,), then=Phase.SETTING),
    Route(Kind.DEALER_RESULT, ending.enter_result, (Phase.SETTING,), to=ENDS),
    Route(Kind.DEALER_VOID, ending.void_round, IN_ROUND, to=ENDS),
    Route(Kind.DEALER_HAND_VOID, ending.hand_void, (Phase.ANNOUNCED, Phase.SETTING), to=ENDS),
    Route(Kind.DEALER_HANDS_MIXED, ending.hands_mixed, (Phase.SETTING,), to=ENDS),
    Route(Kind.DEALER_CONTROL, wagers.dealer_control, BETTING),
    Route(Kind.DEALER_MISCOUNT, ending.miscount, (Phase.ANNOUNCED, Phase.SETTING)),
    Route(Kind.DEALER_LAJA, lajas.laja, BEFORE_DICE),
    Route(Kind.DEALER_RESHUFFLE, lajas.reshuffle, BEFORE_DICE),
    Route(Kind.HO_CARD, carded.ho_card, ANY),
    Route(Kind.DEALER_PLAYER_CARD, carded.player_card, BETTING),
    Route(Kind.DEALER_CARD_INVALID, carded.card_invalid, BETTING),
    Route(Kind.DEALER_CARD_RESTRICT, carded.card_restrict, ANY),
    Route(Kind.DEALER_CHIPS_DECLARED, carded.chips_declared, ANY),
    Route(Kind.CARDREADER_READ, carded.card_read, ANY),
    Route(Kind.CARDREADER_UNREADABLE, carded.card_read, ANY),
    Route(Kind.CARDREADER_REMOVED, carded.card_read, ANY),
    Route(Kind.CARDREADER_FAULT, carded.card_read, ANY),
)


class PaiGowMachine(Guarded[PaiGowState]):
    """One table's Pai Gow rounds. Holds only configuration; every state is passed in."""

    game = GAME
    phases = PHASES

    def __init__(self, config: PaiGowConfig) -> None:
        self.config = config
        self.profile = config.profile
        self.bind(ROUTES, config)

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
        held = bank_of(self.config, state)
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
            "bank_offer": bank_offer(self.config, state) if state.phase == Phase.BETTING else [],
            "off_boxes": list(state.off_boxes),
            "open_boxes": [b for b in range(1, self.config.boxes + 1)
                           if b not in state.off_boxes and accepts_wager(held, b)],
            "wagers": [dict(w) for w in state.wagers],
            "wager_total": sum(w["amount"] for w in state.wagers),
            "controls": dict(state.controls),
            "house_way_boxes": {str(b): p
                                for b, p in house_way_by_dealer(self.config, state).items()},
            "last_controllers": dict(state.last_round["controllers"]),
            "cut_choice": state.cut_choice,
            "steal": state.steal,
            "dice": state.dice,
            "reshakes": state.reshakes,
            "first_box": state.first_box,
            "delivery": [d.as_json() for d in delivery_of(self.config, state)],
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
            effects.append(cut.select_cut_request(self.config))
        return [*effects, *cards.reissue(state.patrons, state.number)]  # unanswered card asks

    def _awaiting(self, state: PaiGowState) -> str:
        if state.phase == Phase.CLOSED:
            return Kind.TABLE_OPEN
        if state.phase in (Phase.SHAKING, Phase.OFF_DRAW):
            return "dealer" if state.fault else "shaker"
        if state.phase == Phase.CUTTING:
            return Kind.CUT_SELECTED
        return "dealer"
