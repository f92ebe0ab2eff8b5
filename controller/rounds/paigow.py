"""The Pai Gow round state machine: (state, event, now) -> (state, effects), pure.

closed -> betting (bank, OFF boxes, wagers) -> [NZ: cutting] -> shaking -> announced -> setting
-> completed (next round opens in betting); dealer.void from cutting..setting voids the round;
betting -> off_draw -> betting removes a box (NSW 15.9.3-15.9.4, NZ 12.10).

The rules come from controller/games/paigow (bank.py, dice.py, cuts.py, wagers.py, settlement.py);
this module only sequences them. docs/rounds-paigow.md is the event contract.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from controller.errors import InputError
from controller.games.paigow.bank import (
    HOUSE_BOX,
    BankHolder,
    BankState,
    Candidate,
    accepts_wager,
    after_round,
    bank_open,
    covers,
    house_banks,
    offer_order,
    start,
    take_bank,
)
from controller.games.paigow.cuts import (
    Cut,
    CutDecision,
    CutOption,
    CutSource,
    cut_spec,
    cut_table,
    decide_cut,
)
from controller.games.paigow.dice import (
    MAX_TOTAL,
    MIN_TOTAL,
    Shake,
    check_shake,
    check_steal,
    first_box_for_shake,
    off_box,
)
from controller.games.paigow.profiles import Profile
from controller.games.paigow.wagers import (
    MAX_PLAYERS_PER_BOX,
    accept,
    box_controller,
    cover_breach,
    layout_breach,
)
from controller.rounds.base import Effect, Event, Now
from controller.rounds.paigow_input import (
    get_bool,
    get_box,
    get_boxes,
    get_int,
    get_str,
    options_json,
    parse_cut_data,
    parse_shake,
    shake_json,
)
from controller.rounds.paigow_result import round_result, to_wager
from controller.rounds.paigow_state import (
    ANNOUNCED,
    BETTING,
    CLOSED,
    CUTTING,
    IN_ROUND,
    JSON,
    OFF_DRAW,
    SETTING,
    SHAKING,
    PaiGowConfig,
    PaiGowState,
    bank_json,
    bank_state,
    state_from_json,
    state_to_json,
)

Result = tuple[PaiGowState, list[Effect]]
Handler = Callable[[PaiGowState, Mapping[str, Any], Now], Result]

VOID_RULE = {Profile.NSW: "NSW 15.12", Profile.NZ: "NZ 12.13", Profile.ACT: "ACT 13.9"}
TILE_VOID_RULE = {Profile.NSW: "NSW 15.17.2"}  # missing or foreign tile; NZ and ACT say nothing
RESHAKE_RULE = {Profile.NSW: "NSW 8.3", Profile.NZ: "NZ 9.8", Profile.ACT: "ACT 13.1"}
HOUSE_BANKS_RULE = {Profile.NSW: "NSW 6.9", Profile.NZ: "NZ 5.6", Profile.ACT: "ACT 6.8"}
COVER_RULE = {Profile.NSW: "NSW 13.2.2", Profile.NZ: "NZ 11.2(b)", Profile.ACT: "ACT 6.4"}
LOCK_RULE = {Profile.NSW: "NSW 9.6-9.7", Profile.NZ: "NZ 9.4", Profile.ACT: "ACT 7.1"}
FIRST_BOX_RULE = {Profile.NSW: "NSW 8.4.1", Profile.NZ: "NZ 9.9", Profile.ACT: "ACT 4.2"}
OFFER_RULE = {Profile.NSW: "NSW 6.1", Profile.NZ: "NZ 5.2, 5.4", Profile.ACT: "ACT 6.7"}
OFF_RULE = "NSW 15.9.3-15.9.4, NZ 12.10"
HOUSE_BOX_RULE = "NSW 6.10, NZ 11.1(b), ACT 6.9"
BANKER_BOX_RULE = "NSW 9.16, NZ 6.5"
PLAYERS_RULE = "NSW 9.9, NZ 6.5, ACT 7.4"
_SOURCES = {
    "banker": CutSource.PLAYER_BANKER,
    "supervisor": CutSource.SUPERVISOR,
    "random": CutSource.RANDOM,
}
# Events of other games or of the link: nothing for a Pai Gow round to do.
IGNORED = frozenset({"tick", "link.up", "link.down", "ho.pool", "ho.award"})


class Refused(InputError):
    """An event refused in a way the dealer or a technician must see: an alarm, not a log line."""


def _log(text: str, **extra: Any) -> Effect:
    return Effect("log", {"text": text, **extra})


def _alarm(text: str, severity: str = "warning") -> Effect:
    return Effect("alarm", {"severity": severity, "text": text})


SHAKE = Effect("device", {"device": "shaker", "command": "shake", "args": {}})


class PaiGowMachine:
    """One table's Pai Gow rounds. Holds only configuration; every state is passed in."""

    game = "paigow"

    def __init__(self, config: PaiGowConfig) -> None:
        self.config = config
        self.profile = config.profile
        self._handlers: dict[str, Handler] = {
            "table.open": self._table_open,
            "table.close": self._table_close,
            "chung.on": self._chung_on,
            "chung.off": self._chung_off,
            "off.pressed": self._off_pressed,
            "off.released": self._off_released,
            "dealer.off_clear": self._off_clear,
            "dealer.off_draw": self._off_draw,
            "dealer.off_cancel": self._off_cancel,
            "dealer.bank": self._dealer_bank,
            "dealer.house_bank": self._dealer_house_bank,
            "dealer.wager": self._dealer_wager,
            "dealer.wager_remove": self._dealer_wager_remove,
            "dealer.cut": self._dealer_cut,
            "dealer.steal": self._dealer_steal,
            "dealer.no_more_bets": self._no_more_bets,
            "cut.selected": self._cut_selected,
            "dealer.shake": self._dealer_shake,
            "dice.not_flat": self._dice_not_flat,
            "dice.result": self._dice_result,
            "shaker.fault": self._shaker_fault,
            "meter.fault": self._meter_fault,
            "meter.ready": self._meter_ready,
            "dealer.delivered": self._delivered,
            "dealer.result": self._result,
            "dealer.void": self._void,
        }

    # -- the RoundMachine protocol ---------------------------------------------------------------

    def initial(self) -> PaiGowState:
        return PaiGowState()

    def step(self, state: PaiGowState, event: Event, now: Now) -> Result:
        if event.kind in IGNORED:
            return state, []
        handler = self._handlers.get(event.kind)
        if handler is None:
            text = f"{event.kind}: not a Pai Gow event, ignored"
            return state, [_log(text, event=event.kind, refused=True)]
        if not isinstance(event.data, Mapping):
            text = f"{event.kind}: data must be a JSON object"
            return state, [_log(text, event=event.kind, refused=True)]
        try:
            return handler(state, event.data, now)
        except Refused as e:
            alarm = _alarm(f"{event.kind} refused: {e}")
            return state, [Effect("alarm", {**alarm.data, "refused": True})]
        except InputError as e:
            return state, [_log(f"{event.kind} refused: {e}", event=event.kind, refused=True)]

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
            "banker": {**state.bank, "player": (state.banker or {}).get("player"),
                       "funds": (state.banker or {}).get("funds")},
            "bank_offer": self._offer(state) if state.phase == BETTING else [],
            "off_boxes": list(state.off_boxes),
            "open_boxes": [b for b in range(1, self.config.boxes + 1)
                           if b not in state.off_boxes and accepts_wager(bank, b)],
            "wagers": [dict(w) for w in state.wagers],
            "wager_total": sum(w["amount"] for w in state.wagers),
            "last_controllers": dict(state.last_round["controllers"]),
            "cut_choice": state.cut_choice,
            "steal": state.steal,
            "dice": state.dice,
            "reshakes": state.reshakes,
            "first_box": state.first_box,
            "cut": state.cut,
            "fault": state.fault,
            "display": dict(state.display),
        }

    def seat_view(self, state: PaiGowState) -> JSON:
        # The tiles are dealt by hand and never read: a seat sees nothing status does not.
        return self.status(state)

    def resume(self, state: PaiGowState) -> list[Effect]:
        effects = [Effect("display", dict(state.display))]
        if state.phase in (SHAKING, OFF_DRAW) and state.fault is None:
            effects.append(SHAKE)
        if state.phase == CUTTING:
            effects.append(self._select_cut_request())
        return effects

    # -- helpers -----------------------------------------------------------------------------------

    def _bank(self, state: PaiGowState) -> BankState:
        return bank_state(self.config, state.bank)

    def _awaiting(self, state: PaiGowState) -> str:
        if state.phase == CLOSED:
            return "table.open"
        if state.phase in (SHAKING, OFF_DRAW):
            return "dealer" if state.fault else "shaker"
        if state.phase == CUTTING:
            return "cut.selected"
        return "dealer"

    @staticmethod
    def _expect(state: PaiGowState, kind: str, *phases: str) -> None:
        if state.phase not in phases:
            raise InputError(f"not accepted in state {state.phase} (round {state.number})")

    @staticmethod
    def _show(state: PaiGowState, mode: str, text: str, **extra: Any) -> Result:
        display = {"mode": mode, "text": text, **extra}
        return replace(state, display=display), [Effect("display", display)]

    def _open(
        self, state: PaiGowState, number: int, bank: BankState, now: Now, last_round: JSON
    ) -> Result:
        """Round `number` opens for betting under `bank`."""
        bj = bank_json(bank)
        banker = None
        if bank.holder is not BankHolder.HOUSE and state.banker is not None:
            banker = {"player": state.banker.get("player"), "funds": None}  # a wager per round
        state = replace(
            state, phase=BETTING, number=number, bank=bj, bank_at_open=bj, banker=banker,
            banker_at_open=banker,
            last_round=last_round, opened_at=now.utc, wagers=[], cut_choice=None, steal=0,
            reshakes=0, dice=None, first_box=None, cut=None, off_rolls=[], fault=None,
        )
        state, effects = self._show(state, "betting", f"ROUND {number} PLACE YOUR BETS")
        if bank_open(bank):
            effects.append(_log(
                f"round {number}: bank offered counter-clockwise to boxes {self._offer(state)}"
                f" ({OFFER_RULE[self.profile]})"
            ))
        return state, effects

    def _offer(self, state: PaiGowState) -> list[int]:
        opening = bank_state(self.config, state.bank_at_open)
        if not bank_open(opening):
            return []
        lr = state.last_round
        if lr["recorded"]:
            occupied = {b for boxes in lr["players"].values() for b in boxes}
        else:
            occupied = set(range(1, self.config.boxes + 1))
        return offer_order(opening, occupied - set(state.off_boxes))

    def _returned(self, state: PaiGowState, keep: Callable[[JSON], bool], why: str) -> Result:
        """Drop the wagers `keep` rejects, with a log line each (the chips go back)."""
        kept = [w for w in state.wagers if keep(w)]
        effects = [
            _log(f"wager of {w['player']} on box {w['box']} ({w['amount']} c) returned: {why}")
            for w in state.wagers if not keep(w)
        ]
        return replace(state, wagers=kept), effects

    # -- table -----------------------------------------------------------------------------------

    def _table_open(self, state: PaiGowState, data: Mapping[str, Any], now: Now) -> Result:
        self._expect(state, "table.open", CLOSED)
        # NZ 5.2 and ACT 6.7: the house banks the first round when play (re)commences; NSW 6.6
        # lets a player bank at the commencement without a previous round.
        bank = start(self.profile, n_boxes=self.config.boxes,
                     max_banks_per_box=self.config.max_banks_per_box)
        state = replace(state, banker=None)
        last = {"recorded": False, "players": {}, "controllers": {}}
        return self._open(state, state.number, bank, now, last)

    def _table_close(self, state: PaiGowState, data: Mapping[str, Any], now: Now) -> Result:
        if state.phase in IN_ROUND:
            raise Refused(f"round {state.number} is in play: void it or enter its result first")
        self._expect(state, "table.close", BETTING, OFF_DRAW)
        state, effects = self._returned(state, lambda w: False, "table closed")
        state = replace(state, phase=CLOSED, off_rolls=[], fault=None)
        state, shown = self._show(state, "closed", "TABLE CLOSED")
        return state, [*effects, *shown, _log(f"table closed; round {state.number} not played")]

    # -- OFF boxes (NSW 15.9, NZ 12.9-12.11) -------------------------------------------------------

    def _off_pressed(self, state: PaiGowState, data: Mapping[str, Any], now: Now) -> Result:
        box = get_box(data, self.config.boxes)
        if box == self._bank(state).box:
            raise Refused(f"box {box} is the bank's box and cannot be OFF ({OFF_RULE})")
        if box in state.off_boxes:
            raise InputError(f"box {box} is already OFF")
        return self._set_off(state, box, "OFF button")

    def _set_off(self, state: PaiGowState, box: int, why: str) -> Result:
        state = replace(state, off_boxes=sorted([*state.off_boxes, box]))
        effects = [_log(f"box {box} OFF ({why}); removed from play until released ({OFF_RULE})")]
        if state.phase == BETTING:
            state, returned = self._returned(state, lambda w: w["box"] != box, f"box {box} OFF")
            effects += returned
        elif state.phase in IN_ROUND:
            effects.append(_log(f"box {box} OFF from round {state.number + 1} (NSW 15.9.2)"))
        return state, effects

    def _off_released(self, state: PaiGowState, data: Mapping[str, Any], now: Now) -> Result:
        box = get_box(data, self.config.boxes)
        if box not in state.off_boxes:
            raise InputError(f"box {box} is not OFF")
        off = [b for b in state.off_boxes if b != box]
        return replace(state, off_boxes=off), [
            _log(f"box {box} back in play (NSW 15.9.5, NZ 12.11)")
        ]

    def _off_clear(self, state: PaiGowState, data: Mapping[str, Any], now: Now) -> Result:
        if data.get("box") is not None:
            return self._off_released(state, data, now)
        if not state.off_boxes:
            raise InputError("no box is OFF")
        return replace(state, off_boxes=[]), [
            _log(f"boxes {state.off_boxes} back in play (NSW 15.9.5, NZ 12.11)")
        ]

    def _off_draw(self, state: PaiGowState, data: Mapping[str, Any], now: Now) -> Result:
        self._expect(state, "dealer.off_draw", BETTING)
        if state.off_boxes:
            raise InputError(
                f"boxes {state.off_boxes} are OFF: a draw needs all boxes in play"
                " (NSW 15.9.1, NZ 12.9(a))"
            )
        # off_box refuses ACT and a bank it does not apply to (NSW 15.9.1 house banking; NZ
        # 12.9(b) house alone or co-banking); every total 3..18 names some box, so nothing else.
        off_box(self._bank(state), range(MIN_TOTAL, MAX_TOTAL + 1))
        state = replace(state, phase=OFF_DRAW, off_rolls=[], fault=None)
        state, shown = self._show(state, "announce", "OFF BOX DRAW")
        return state, [*shown, SHAKE, _log(f"OFF-box draw ({OFF_RULE})")]

    def _off_cancel(self, state: PaiGowState, data: Mapping[str, Any], now: Now) -> Result:
        self._expect(state, "dealer.off_cancel", OFF_DRAW)
        state = replace(state, phase=BETTING, off_rolls=[], fault=None)
        state, shown = self._show(state, "betting", f"ROUND {state.number} PLACE YOUR BETS")
        return state, [*shown, _log("OFF-box draw cancelled")]

    def _off_drawn(self, state: PaiGowState, shake: Shake) -> Result:
        rolls = [*state.off_rolls, shake.total]
        try:
            drawn = off_box(self._bank(state), [shake.total])
        except InputError:  # the bank's box (or a missing box): roll again
            return replace(state, off_rolls=rolls), [
                _log(f"OFF draw total {shake.total} indicates the bank's box: roll again"
                     " (NSW 15.9.4, NZ 12.10)"),
                SHAKE,
            ]
        state = replace(state, phase=BETTING, off_rolls=[])
        state, effects = self._set_off(state, drawn.box, f"drawn with totals {rolls}")
        state, shown = self._show(state, "announce", f"BOX {drawn.box} OFF", box=drawn.box)
        if self.profile is Profile.NSW:
            shown.append(_alarm(
                f"box {drawn.box} removed from play by draw; notify the inspector (NSW 15.9.2)",
                "info",
            ))
        return state, [*effects, *shown]

    # -- the bank (NSW 6, NZ 5, ACT 6) -------------------------------------------------------------

    def _chung_on(self, state: PaiGowState, data: Mapping[str, Any], now: Now) -> Result:
        box = get_box(data, self.config.boxes)
        if state.phase != BETTING:
            return state, [_log(f"chung on box {box} during {state.phase}: no change")]
        if box == self._bank(state).box:
            return state, [_log(f"chung on box {box}: bank confirmed")]
        if box == HOUSE_BOX:
            return self._house_takes(state, "house chung on box 1")
        return self._take(state, box, BankHolder.PLAYER, data)

    def _chung_off(self, state: PaiGowState, data: Mapping[str, Any], now: Now) -> Result:
        box = get_box(data, self.config.boxes)
        bank = self._bank(state)
        if state.phase == BETTING and bank.holder is not BankHolder.HOUSE and box == bank.box:
            return self._house_takes(state, f"chung left box {box}")
        return state, [_log(f"chung off box {box}: no change")]

    def _dealer_bank(self, state: PaiGowState, data: Mapping[str, Any], now: Now) -> Result:
        self._expect(state, "dealer.bank", BETTING)
        box = get_box(data, self.config.boxes)
        try:
            holder = BankHolder(get_str(data, "holder", "player"))
        except ValueError:
            raise InputError(f"holder {data.get('holder')!r}: player, co-bank or house") from None
        if holder is BankHolder.HOUSE:
            return self._house_takes(state, "dealer")
        return self._take(state, box, holder, data)

    def _dealer_house_bank(self, state: PaiGowState, data: Mapping[str, Any], now: Now) -> Result:
        self._expect(state, "dealer.house_bank", BETTING)
        return self._house_takes(state, "dealer")

    def _house_takes(self, state: PaiGowState, why: str) -> Result:
        # Judged from the bank at the opening, so giving the bank up never resets a round limit.
        bank = house_banks(bank_state(self.config, state.bank_at_open))
        state = replace(state, bank=bank_json(bank), banker=None)
        state, effects = self._returned(
            state, lambda w: w["box"] != HOUSE_BOX, f"the house banks on box 1 ({HOUSE_BOX_RULE})"
        )
        return state, [_log(f"the house banks on box {HOUSE_BOX} ({why})"), *effects]

    def _take(
        self, state: PaiGowState, box: int, holder: BankHolder, data: Mapping[str, Any]
    ) -> Result:
        if box in state.off_boxes:
            raise Refused(f"box {box} is OFF ({OFF_RULE}): it cannot take the bank")
        funds = get_int(data, "funds", None)
        if funds is not None and funds < 0:
            raise InputError(f"funds {funds} are negative")
        player = get_str(data, "player", None) or state.last_round["controllers"].get(str(box))
        current = self._bank(state)
        opening = bank_state(self.config, state.bank_at_open)
        mid_bank = current == opening and not bank_open(opening)
        if mid_bank and current.holder is holder and current.box == box:
            # The holder declares this round's wager (NZ 11.2(b)); a finished bank asking for
            # another goes to take_bank, which applies the round limit (NSW 6.7).
            banker = {"player": player, "funds": funds}
            return replace(state, banker=banker), [_log(f"box {box} bank wager: {funds} c")]
        others = sum(w["amount"] for w in state.wagers if w["player"] != player)
        candidate = self._candidate(state, box, player, data, funds, others)
        try:
            bank = take_bank(opening, candidate, holder, other_wagers=others)
        except InputError as e:  # every refusal, each with its rule (bank.py)
            raise Refused(str(e)) from None
        state = replace(state, bank=bank_json(bank), banker={"player": player, "funds": funds})
        state, effects = self._returned(
            state,
            lambda w: w["box"] != box and (player is None or w["player"] != player),
            f"box {box} holds the bank ({BANKER_BOX_RULE})",
        )
        who = player or f"the player on box {box}"
        return state, [_log(f"{who} takes the bank on box {box} as {holder.value}"), *effects]

    def _candidate(
        self, state: PaiGowState, box: int, player: str | None, data: Mapping[str, Any],
        funds: int | None, others: int,
    ) -> Candidate:
        """The bank candidate from the previous round's wagers, or the dealer's word for it.

        Without recorded wagers the machine cannot know who played where: the dealer vouches
        (played_boxes/controls), by default for the requesting box itself.
        """
        n = self.config.boxes
        played = get_boxes(data, "played_boxes", n)
        controls = None if data.get("controls") is None else get_box(data, n, "controls")
        lr = state.last_round
        if played is None:
            played = lr["players"].get(player, []) if lr["recorded"] else [box]
        if controls is None:
            if lr["recorded"]:
                mine = [int(b) for b, p in lr["controllers"].items() if p == player]
                controls = mine[0] if mine else None
            else:
                controls = box
        # Undeclared funds: the dealer ascertains them (NSW 9.15); checked when declared.
        return Candidate(box, frozenset(played), controls, others if funds is None else funds)

    # -- wagers (optional data: the table has no chip sensors) ------------------------------------

    def _dealer_wager(self, state: PaiGowState, data: Mapping[str, Any], now: Now) -> Result:
        if state.phase in IN_ROUND:
            raise InputError(f"wagers are locked after no more bets ({LOCK_RULE[self.profile]})")
        self._expect(state, "dealer.wager", BETTING)
        row = {
            "box": get_box(data, self.config.boxes),
            "player": get_str(data, "player"),
            "amount": get_int(data, "amount"),
            "seated": get_bool(data, "seated", False),
            "distance_to_dealer": get_int(data, "distance_to_dealer", 0),
        }
        others = [w for w in state.wagers if (w["box"], w["player"]) != (row["box"], row["player"])]
        problem = self._wager_problem(state, self._bank(state), row, others)
        if problem:
            raise InputError(problem)
        state = replace(state, wagers=[*others, row])
        return state, [_log(f"wager of {row['player']} on box {row['box']}: {row['amount']} c")]

    def _wager_problem(
        self, state: PaiGowState, bank: BankState, row: JSON, others: list[JSON]
    ) -> str | None:
        box, player = row["box"], row["player"]
        if box in state.off_boxes:
            return f"box {box} is OFF ({OFF_RULE})"
        banker = (state.banker or {}).get("player")
        if bank.holder is not BankHolder.HOUSE and player == banker:
            return f"{player} holds the bank: the bank's wager is its own (NSW 9.15, NZ 11.2(b))"
        if not accepts_wager(bank, box):
            rule = HOUSE_BOX_RULE if bank.holder is BankHolder.HOUSE else BANKER_BOX_RULE
            return f"box {box} holds the bank's tiles: no wagers there ({rule})"
        players = {w["player"] for w in others if w["box"] == box} | {player}
        if len(players) > MAX_PLAYERS_PER_BOX:
            return f"box {box} already has {MAX_PLAYERS_PER_BOX} players ({PLAYERS_RULE})"
        try:
            accept(to_wager(row), self.profile, bank.holder, self.config.money,
                   self.config.multiples_notice)
        except InputError as e:
            return str(e)
        # The layout as a whole (NSW 9.14, ACT 7.3, NZ 5.1(c)/ACT 5.4): refused only if this
        # wager is what breaks it.
        if self._layout_breach(bank, others) is None:
            breach = self._layout_breach(bank, [*others, row])
            if breach is not None:
                return breach[1]
        return None

    def _layout_breach(self, bank: BankState, rows: list[JSON]) -> tuple[int, str] | None:
        wagers = [to_wager(r) for r in rows]
        money, notice = self.config.money, self.config.multiples_notice
        accepted = [accept(w, self.profile, bank.holder, money, notice) for w in wagers]
        return layout_breach(wagers, self.profile, bank.holder) or cover_breach(
            accepted, bank.holder, money)

    def _layout_returned(self, state: PaiGowState, bank: BankState) -> Result:
        """Return, one at a time, the wager each layout check names until none breaks it (a bank
        change or a withdrawal can leave one: NSW 9.14, ACT 7.3, NZ 5.1(c)/ACT 5.4)."""
        effects: list[Effect] = []
        while (breach := self._layout_breach(bank, state.wagers)) is not None:
            index, why = breach
            w = state.wagers[index]
            effects.append(_log(f"wager of {w['player']} on box {w['box']} ({w['amount']} c)"
                                f" returned: {why}"))
            state = replace(state, wagers=[r for i, r in enumerate(state.wagers) if i != index])
        return state, effects

    def _dealer_wager_remove(self, state: PaiGowState, data: Mapping[str, Any], now: Now) -> Result:
        if state.phase in IN_ROUND:
            raise InputError(f"wagers are locked after no more bets ({LOCK_RULE[self.profile]})")
        self._expect(state, "dealer.wager_remove", BETTING)
        box, player = get_box(data, self.config.boxes), get_str(data, "player")
        if not any((w["box"], w["player"]) == (box, player) for w in state.wagers):
            raise InputError(f"no wager of {player} on box {box}")
        return self._returned(
            state, lambda w: (w["box"], w["player"]) != (box, player), "withdrawn"
        )

    # -- cut and steal -----------------------------------------------------------------------------

    def _dealer_cut(self, state: PaiGowState, data: Mapping[str, Any], now: Now) -> Result:
        self._expect(state, "dealer.cut", BETTING, CUTTING, SHAKING)
        if self.profile is Profile.NZ and state.phase == SHAKING:
            raise InputError("the cut was decided before the dice (NZ 9.3A, 9.6)")
        by = get_str(data, "by", "banker")
        if by not in ("banker", "supervisor"):
            raise InputError(f"by {by!r}: banker or supervisor")
        choice = parse_cut_data(self.profile, data)
        holder = self._bank(state).holder
        # decide_cut applies who may choose: a player/banker (NSW 8.4.3, NZ 9.3A(a), ACT 8.4),
        # the NZ supervisor (9.3A(b)); approved cuts (NZ).
        decision = decide_cut(
            self.profile, holder,
            nominated=choice if by == "banker" else None,
            supervisor=choice if by == "supervisor" else None,
            approved=self.config.approved_cuts,
        )
        return self._cut_chosen(state, decision, by)

    def _cut_selected(self, state: PaiGowState, data: Mapping[str, Any], now: Now) -> Result:
        self._expect(state, "cut.selected", CUTTING)
        choice = parse_cut_data(self.profile, data)
        # Validated as a supervisor's choice would be (approved, options), then marked random.
        decision = decide_cut(self.profile, self._bank(state).holder, supervisor=choice,
                              approved=self.config.approved_cuts)
        return self._cut_chosen(state, replace(decision, source=CutSource.RANDOM), "random")

    def _cut_chosen(self, state: PaiGowState, decision: CutDecision, by: str) -> Result:
        choice = {"cut": decision.cut.value, "options": options_json(decision.options), "by": by}
        state = replace(state, cut_choice=choice)
        effects = [_log(f"cut {decision.cut.value} {choice['options']} chosen by {by}")]
        if state.phase == CUTTING:
            state = replace(state, phase=SHAKING)
            effects.append(SHAKE)
        return state, effects

    def _select_cut_request(self) -> Effect:
        approved = self.config.approved_cuts or [s.cut for s in cut_table(self.profile)]
        return Effect("device", {
            "device": "rng", "command": "select_cut",
            "args": {"profile": self.profile.value, "approved": [c.value for c in approved]},
        })

    def _dealer_steal(self, state: PaiGowState, data: Mapping[str, Any], now: Now) -> Result:
        self._expect(state, "dealer.steal", BETTING, CUTTING, SHAKING)
        value = check_steal(
            self.profile, get_int(data, "value"),
            player_banker=self._bank(state).holder is not BankHolder.HOUSE,
            steal_offered=self.config.steal_offered,
        )  # NSW 8.2, NZ 9.6; ACT has none
        return replace(state, steal=value), [_log(f"steal {value:+d} on the marker button")]

    # -- no more bets, the dice, the announcement -------------------------------------------------

    def _no_more_bets(self, state: PaiGowState, data: Mapping[str, Any], now: Now) -> Result:
        self._expect(state, "dealer.no_more_bets", BETTING)
        state, effects = self._settle_bank(state)
        bank = self._bank(state)
        state, returned = self._returned(
            state,
            lambda w: self._wager_problem(state, bank, w, []) is None,
            "not valid under the round's bank",
        )
        effects += returned
        state, returned = self._layout_returned(state, bank)
        effects += returned
        state, dropped = self._check_choices(state, bank)
        effects += dropped
        state, shown = self._show(state, "announce", "NO MORE BETS")
        effects += shown
        if self.profile is Profile.NZ and state.cut_choice is None:
            return replace(state, phase=CUTTING), [*effects, self._select_cut_request()]
        return replace(state, phase=SHAKING), [*effects, SHAKE]

    def _settle_bank(self, state: PaiGowState) -> Result:
        """Who finally banks: the house when a finished bank found no taker or a player/banker's
        declared funds do not cover the wagers."""
        bank = self._bank(state)
        if bank.holder is BankHolder.HOUSE:
            return state, []
        if bank_open(bank):  # two rounds done (NSW 6.7, NZ 5.4, ACT 6.7) and nobody took it
            rule = HOUSE_BANKS_RULE[self.profile]
            why = f"bank of box {bank.box} complete, nobody took it ({rule})"
            return self._house_takes(state, why)
        banker = state.banker or {}
        funds = banker.get("funds")
        others = sum(w["amount"] for w in state.wagers if w["player"] != banker.get("player"))
        if funds is not None and not covers(funds, others, bank.holder):
            state, effects = self._house_takes(state, f"banker's {funds} c do not cover {others} c")
            return state, [_alarm(f"box {bank.box} cannot cover the wagers: the house banks"
                                  f" ({COVER_RULE[self.profile]})"), *effects]
        return state, []

    def _check_choices(self, state: PaiGowState, bank: BankState) -> Result:
        """A nomination or steal made before the bank changed hands may no longer apply."""
        effects = []
        choice = state.cut_choice
        if choice and choice["by"] == "banker" and bank.holder is BankHolder.HOUSE:
            state = replace(state, cut_choice=None)
            effects.append(_log("cut nomination dropped: only a player/banker nominates"
                                " (NSW 8.4.3, NZ 9.3A(a), ACT 8.4)"))
        if state.steal:
            try:
                check_steal(self.profile, state.steal,
                            player_banker=bank.holder is not BankHolder.HOUSE,
                            steal_offered=self.config.steal_offered)
            except InputError as e:
                state = replace(state, steal=0)
                effects.append(_log(f"steal dropped: {e}"))
        return state, effects

    def _dealer_shake(self, state: PaiGowState, data: Mapping[str, Any], now: Now) -> Result:
        self._expect(state, "dealer.shake", SHAKING, OFF_DRAW)
        return replace(state, fault=None), [SHAKE, _log("shake again (dealer)")]

    def _dice_not_flat(self, state: PaiGowState, data: Mapping[str, Any], now: Now) -> Result:
        self._expect(state, "dice.not_flat", SHAKING, OFF_DRAW)
        return self._reshake(state)

    def _reshake(self, state: PaiGowState) -> Result:
        state = replace(state, reshakes=state.reshakes + 1, fault=None)
        rule = RESHAKE_RULE[self.profile]
        return state, [_log(f"a die is not flat: shake again ({rule})"), SHAKE]

    def _shaker_fault(self, state: PaiGowState, data: Mapping[str, Any], now: Now) -> Result:
        reason = str(data.get("reason", "unknown"))
        if state.phase not in (SHAKING, OFF_DRAW):
            return state, [_alarm(f"shaker fault while {state.phase}: {reason}")]
        return replace(state, fault=reason), [
            _alarm(f"shaker fault: {reason}; dealer.shake to retry or dealer.void")
        ]

    def _meter_fault(self, state: PaiGowState, data: Mapping[str, Any], now: Now) -> Result:
        """The table display is gone (unplugged): the dealer announces by voice meanwhile."""
        reason = str(data.get("reason", "meter fault"))[:200]
        return state, [_alarm(f"meter fault: {reason}; announce first box and cut by voice")]

    def _meter_ready(self, state: PaiGowState, data: Mapping[str, Any], now: Now) -> Result:
        return state, [_log("meter back: showing the table's display again")]

    def _dice_result(self, state: PaiGowState, data: Mapping[str, Any], now: Now) -> Result:
        self._expect(state, "dice.result", SHAKING, OFF_DRAW)
        try:
            shake = parse_shake(data)
        except InputError as e:
            raise Refused(f"unreadable dice: {e}") from None
        if shake.needs_reshake:
            return self._reshake(state)
        try:
            check_shake(self.profile, shake)
        except InputError as e:
            raise Refused(str(e)) from None
        if state.phase == OFF_DRAW:
            return self._off_drawn(state, shake)
        return self._announce(state, shake)

    def _announce(self, state: PaiGowState, shake: Shake) -> Result:
        bank = self._bank(state)
        decision = self._round_cut(state, bank, shake)
        first = first_box_for_shake(bank, shake, state.steal,
                                    steal_offered=self.config.steal_offered)
        options = options_json(decision.options)
        cut = {"cut": decision.cut.value, "options": options, "source": decision.source.value}
        english = cut_spec(self.profile, decision.cut).english.upper()
        words = " ".join(o.upper() for o in options or [])
        text = f"FIRST BOX {first} / CUT {english}" + (f" {words}" if words else "")
        state = replace(state, phase=ANNOUNCED, dice=shake_json(shake), first_box=first, cut=cut)
        state, shown = self._show(state, "announce", text, first_box=first, cut=cut)
        note = _log(
            f"dice {shake.describe()} total {shake.total} steal {state.steal:+d}: first box {first}"
            f" ({FIRST_BOX_RULE[self.profile]}); cut {decision.cut.value} by {decision.source}"
        )
        return state, [*shown, note]

    def _round_cut(self, state: PaiGowState, bank: BankState, shake: Shake) -> CutDecision:
        choice = state.cut_choice
        if self.profile is Profile.NZ:  # decided before the dice (9.3A), validated then
            if choice is None:
                raise Refused("no cut decided (NZ 9.3A)")
            options = frozenset(CutOption(o) for o in choice["options"])
            return CutDecision(Cut(choice["cut"]), options, _SOURCES[choice["by"]])
        nominated = None
        if choice is not None:
            nominated = (Cut(choice["cut"]), frozenset(CutOption(o) for o in choice["options"]))
        die = shake.cut_die  # an int here: needs_reshake was handled by the caller
        cut_die = die if isinstance(die, int) and nominated is None else None
        if self.profile is Profile.NSW and nominated is None and cut_die is None:
            raise Refused("the cut die decides this cut (NSW 8.4.3-8.4.4, Appendix 4) but the"
                          " shake has none: dealer.shake to shake again")
        return decide_cut(self.profile, bank.holder, nominated=nominated, cut_die=cut_die)

    # -- delivery, result, void -------------------------------------------------------------------

    def _delivered(self, state: PaiGowState, data: Mapping[str, Any], now: Now) -> Result:
        self._expect(state, "dealer.delivered", ANNOUNCED)
        state = replace(state, phase=SETTING)
        state, shown = self._show(state, "setting", "SET YOUR HANDS")
        return state, [*shown, _log(f"round {state.number}: tiles delivered")]

    def _result(self, state: PaiGowState, data: Mapping[str, Any], now: Now) -> Result:
        self._expect(state, "dealer.result", SETTING)
        bank = self._bank(state)
        try:
            result, alarms = round_result(
                self.config, bank, state.banker, state.wagers, state.off_boxes, data
            )
        except InputError as e:
            raise Refused(f"result not accepted: {e}") from None
        summary = {**self._summary(state, "completed", now), **result}
        effects = [_alarm(a) for a in alarms] + self._records(summary)
        history = self._history(state, bank)
        state, opened = self._open(state, state.number + 1, after_round(bank), now, history)
        return state, [*effects, *opened]

    def _void(self, state: PaiGowState, data: Mapping[str, Any], now: Now) -> Result:
        self._expect(state, "dealer.void", *IN_ROUND)
        kind = get_str(data, "kind", "distribution")
        rules = {"distribution": VOID_RULE, "tile": TILE_VOID_RULE}.get(kind)
        if rules is None or self.profile not in rules:
            raise InputError(f"kind {kind!r}: no void rule for it in profile {self.profile}")
        reason = get_str(data, "reason", "incorrect distribution")
        summary = {
            **self._summary(state, "voided", now),
            "reason": reason,
            "rule": rules[self.profile],
            "returned": [dict(w) for w in state.wagers],  # all monies returned
        }
        effects = self._records(summary)
        effects.append(_log(f"round {state.number} void ({rules[self.profile]}): {reason};"
                            " re-shuffle all 32 tiles"))
        # A void round is no round of play ("void: invalid with no result", NSW 1.1): the bank's
        # round count does not move, and a bank the house took over only for this round (a
        # finished bank without a taker, a banker who could not cover) stands as it opened, so
        # a void house round cannot split a box's consecutive rounds (NSW 6.7, NZ 5.4, ACT 6.7).
        # A player who took the bank in this round keeps it.
        bank = self._bank(state)
        if bank.holder is BankHolder.HOUSE:
            bank = bank_state(self.config, state.bank_at_open)
            state = replace(state, banker=state.banker_at_open)
        state, opened = self._open(state, state.number + 1, bank, now, state.last_round)
        return state, [*effects, *opened]

    def _summary(self, state: PaiGowState, status: str, now: Now) -> JSON:
        return {
            "number": state.number,
            "status": status,
            "game": self.game,
            "rules": self.profile.value,
            "opened_at": state.opened_at,
            "closed_at": now.utc,
            "banker": {**state.bank, "player": (state.banker or {}).get("player"),
                       "funds": (state.banker or {}).get("funds")},
            "off_boxes": list(state.off_boxes),
            "wagers": [dict(w) for w in state.wagers],
            "dice": state.dice,
            "reshakes": state.reshakes,
            "steal": state.steal,
            "first_box": state.first_box,
            "cut": state.cut,
        }

    @staticmethod
    def _records(summary: JSON) -> list[Effect]:
        number, status = summary["number"], summary["status"]
        return [
            Effect("round", {"number": number, "status": status, "summary": summary}),
            Effect("outbox", {"type": "round_result", "payload": summary}),
        ]

    def _history(self, state: PaiGowState, bank: BankState) -> JSON:
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
                controllers[str(box)] = box_controller([to_wager(r) for r in rows], self.profile)
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
