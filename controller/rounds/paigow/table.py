"""Opening and closing the table; OFF boxes and the OFF-box draw (NSW 15.9, NZ 12.9-12.11)."""

from __future__ import annotations

from dataclasses import replace

from controller.games.paigow.bank import start
from controller.games.paigow.dice import MAX_TOTAL, MIN_TOTAL, Shake, off_box
from controller.games.paigow.profiles import Profile
from controller.rounds import fields
from controller.rounds.base import Now
from controller.rounds.paigow.core import (
    OFF_DRAW_WHEN,
    OFF_RULE,
    SHAKE,
    Data,
    Refused,
    Result,
    alarm,
    bank_of,
    log,
    off_draw_refusal,
    open_round,
    return_wagers,
    show,
)
from controller.rounds.paigow.state import IN_ROUND, PaiGowConfig, PaiGowState, Phase
from shared.errors import InputError


def table_open(config: PaiGowConfig, state: PaiGowState, data: Data, now: Now) -> Result:
    # NZ 5.2 and ACT 6.7: the house banks the first round when play (re)commences; NSW 6.6
    # lets a player bank at the commencement without a previous round.
    bank = start(config.profile, n_boxes=config.boxes,
                 max_banks_per_box=config.max_banks_per_box)
    state = replace(state, banker=None)
    last = {"recorded": False, "players": {}, "controllers": {}}
    return open_round(config, state, state.number, bank, now, last)


def table_close(config: PaiGowConfig, state: PaiGowState, data: Data, now: Now) -> Result:
    state, effects = return_wagers(state, lambda w: False, "table closed")
    # ACT 5.1(c)'s advice was to the players at the table: a closed table starts afresh.
    state = replace(state, off_rolls=[], fault=None, advised=[])  # the route leads to closed
    state, shown = show(state, "closed", "TABLE CLOSED")
    return state, [*effects, *shown, log(f"table closed; round {state.number} not played")]


def off_pressed(config: PaiGowConfig, state: PaiGowState, data: Data, now: Now) -> Result:
    box = fields.box(data, config.boxes)
    if box == bank_of(config, state).box:
        raise Refused(f"box {box} is the bank's box and cannot be OFF ({OFF_RULE})")
    if box in state.off_boxes:
        raise InputError(f"box {box} is already OFF")
    return _set_off(state, box, "OFF button")


def _set_off(state: PaiGowState, box: int, why: str) -> Result:
    state = replace(state, off_boxes=sorted([*state.off_boxes, box]))
    effects = [log(f"box {box} OFF ({why}); removed from play until released ({OFF_RULE})")]
    if state.phase == Phase.BETTING:
        state, returned = return_wagers(state, lambda w: w["box"] != box, f"box {box} OFF")
        effects += returned
    elif state.phase in IN_ROUND:
        effects.append(log(f"box {box} OFF from round {state.number + 1} (NSW 15.9.2)"))
    return state, effects


def off_released(config: PaiGowConfig, state: PaiGowState, data: Data, now: Now) -> Result:
    box = fields.box(data, config.boxes)
    if box not in state.off_boxes:
        raise InputError(f"box {box} is not OFF")
    off = [b for b in state.off_boxes if b != box]
    return replace(state, off_boxes=off), [
        log(f"box {box} back in play (NSW 15.9.5, NZ 12.11)")
    ]


def off_clear(config: PaiGowConfig, state: PaiGowState, data: Data, now: Now) -> Result:
    if data.get("box") is not None:
        return off_released(config, state, data, now)
    if not state.off_boxes:
        raise InputError("no box is OFF")
    return replace(state, off_boxes=[]), [
        log(f"boxes {state.off_boxes} back in play (NSW 15.9.5, NZ 12.11)")
    ]


def off_draw(config: PaiGowConfig, state: PaiGowState, data: Data, now: Now) -> Result:
    if config.profile not in OFF_DRAW_WHEN:
        raise InputError(off_draw_refusal(config.profile, state.phase))
    if state.off_boxes:
        raise InputError(
            f"boxes {state.off_boxes} are OFF: a draw needs all boxes in play"
            " (NSW 15.9.1, NZ 12.9(a))"
        )
    # off_box refuses ACT and a bank it does not apply to (NSW 15.9.1 house banking; NZ
    # 12.9(b) house alone or co-banking); every total 3..18 names some box, so nothing else.
    off_box(bank_of(config, state), range(MIN_TOTAL, MAX_TOTAL + 1))
    state = replace(state, off_rolls=[], fault=None)  # the route leads to off_draw
    state, shown = show(state, "announce", "OFF BOX DRAW")
    return state, [*shown, SHAKE, log(f"OFF-box draw ({OFF_RULE})")]


def off_cancel(config: PaiGowConfig, state: PaiGowState, data: Data, now: Now) -> Result:
    state = replace(state, off_rolls=[], fault=None)  # the route leads to betting
    state, shown = show(state, "betting", f"ROUND {state.number} PLACE YOUR BETS")
    return state, [*shown, log("OFF-box draw cancelled")]


def off_drawn(config: PaiGowConfig, state: PaiGowState, shake: Shake) -> Result:
    rolls = [*state.off_rolls, shake.total]
    try:
        drawn = off_box(bank_of(config, state), [shake.total])
    except InputError:  # the bank's box (or a missing box): roll again
        return replace(state, off_rolls=rolls), [
            log(f"OFF draw total {shake.total} indicates the bank's box: roll again"
                " (NSW 15.9.4, NZ 12.10)"),
            SHAKE,
        ]
    state = replace(state, phase=Phase.BETTING, off_rolls=[])
    state, effects = _set_off(state, drawn.box, f"drawn with totals {rolls}")
    state, shown = show(state, "announce", f"BOX {drawn.box} OFF", box=drawn.box)
    if config.profile is Profile.NSW:
        shown.append(alarm(
            f"box {drawn.box} removed from play by draw; notify the inspector (NSW 15.9.2)",
            "info",
        ))
    return state, [*effects, *shown]
