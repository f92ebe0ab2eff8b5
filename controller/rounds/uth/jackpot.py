"""The jackpot side of the UTH round machine: bet sensors and lamps, 5.5 lock, contributions,
cancellation (15.3.1), awards (15.2), and the pool's link status (11.11, issue 6).

Two modes (docs/rounds-uth.md):
- standalone (`config.linked` False): a local `PoolState`; contributions and awards are computed
  here with `jackpot.contribute` / `jackpot.award`.
- linked: head office owns the pool. The meter shows the last valid `ho.pool`; a hit goes out as
  a `jackpot_hit` outbox message and shows PENDING until `ho.award` answers.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from controller.events import OutboxType
from controller.games.uth.cards import format_cards
from controller.games.uth.deal import Deal
from controller.games.uth.evaluator import Category, category_of, hand_rank
from controller.games.uth.jackpot import JackpotEntry, award, contribute
from controller.rounds import fields
from controller.rounds.base import Effect, Now
from controller.rounds.uth import carded
from controller.rounds.uth import effects as fx
from controller.rounds.uth.state import (
    BET,
    IDLE,
    JSON,
    LOCKED,
    WIN,
    UthConfig,
    UthState,
    pool_display,
    pool_json,
    pool_state,
    replace,
)
from shared.errors import InputError

Result = tuple[UthState, list[Effect]]
Step = Callable[[UthConfig, UthState, Any, Now], Result]


# -- link status (11.11) ------------------------------------------------------------------------
# The longest a journaled pool value may say it stays valid (`fresh_ms`): the link journals the
# same value again at most every LinkOptions.pool_refresh_s (60 s) and says quiet at once.
MAX_FRESH_MS = 600_000


def live(config: UthConfig, state: UthState, now: Now) -> bool:
    """Whether new jackpot wagers are accepted at `now`. With the link: a valid ho.pool within
    its `fresh_ms` (the link's horizon: it journals an unchanged value only that often, and a
    `tick` saying head office went quiet ends it early), or within pool_timeout_ms for a value
    journaled without one (before 2026-11-27). A monotonic clock that went backwards means a
    reboot: stale until a fresh one."""
    jp = state.jackpot
    if jp["disabled"] or "meter_failed" in jp:  # 11.11: supervisor's switch, failed meter
        return False
    if "wager_mismatch" in jp:  # 15.2.5.3: not the pool's qualifying wager
        return False
    if not config.linked:
        return True
    last = jp["last_pool_ms"]
    horizon = jp.get("fresh_ms") or config.pool_timeout_ms
    return last is not None and 0 <= now.mono_ms - last <= horizon


def on_quiet(config: UthConfig, state: UthState, data: Any, now: Now) -> Result:
    """tick {pool_quiet_ms?}: the link has heard no pool value for that long (>= the timeout):
    the value held is stale (11.11) whatever its `fresh_ms`; refresh() then takes the jackpot
    offline. A plain tick (no field) only lets refresh() look at the clock."""
    quiet = fields.integer(data, "pool_quiet_ms", None)
    if quiet is None or not config.linked:
        return state, []
    if quiet < config.pool_timeout_ms:
        raise InputError(f"pool_quiet_ms {quiet} is under the pool timeout"
                         f" {config.pool_timeout_ms} ms")
    if state.jackpot["last_pool_ms"] is None:
        return state, []
    jp = {**state.jackpot, "last_pool_ms": None}
    return replace(state, jackpot=jp), [
        fx.log(f"no pool value from head office for {quiet} ms: the meter's value is stale"
               " (11.11)")]


def meter(config: UthConfig, state: UthState) -> int:
    return state.jackpot["amount"] if config.linked else state.pool["amount"]


def refresh(config: UthConfig, state: UthState, now: Now) -> Result:
    """Bring `jackpot.online` up to date with the clock; on a change, the meter and lamps follow."""
    online = live(config, state, now)
    if online == state.jackpot["online"]:
        return state, []
    jp = {**state.jackpot, "online": online}
    shown = pool_display(config, meter(config, state), online=online)
    state = replace(state, jackpot=jp, display=shown)
    effects = [fx.display(shown)]
    if online:
        effects.append(fx.log("jackpot online: jackpot wagers accepted again"))
    else:
        effects.append(
            fx.alarm(
                "technician",
                "jackpot offline: continuing without the jackpot; notify an inspector",
                "11.11",
            )
        )
    if not state.in_round:
        state, lamp_fx = relamp(config, state)
        effects += lamp_fx
    return state, effects


def relamp(config: UthConfig, state: UthState, keep: Sequence[int] = ()) -> Result:
    """Lamps between rounds: BET where a sensor is on and the jackpot is online; IDLE elsewhere;
    `keep` boxes (a WIN just shown) unchanged."""
    lamps = dict(state.lamps)
    effects: list[Effect] = []
    for box in range(1, config.boxes + 1):
        if box in keep:
            continue
        want = BET if box in state.sensors and state.jackpot["online"] else IDLE
        effects += _set_lamp(lamps, box, want)
    return replace(state, lamps=lamps), effects


def _set_lamp(lamps: dict[str, str], box: int, want: str) -> list[Effect]:
    if lamps.get(str(box), IDLE) == want:
        return []
    if want == IDLE:
        lamps.pop(str(box), None)
    else:
        lamps[str(box)] = want
    return [fx.lamp(box, want)]


# -- sensors -----------------------------------------------------------------------------------
def bet_on(config: UthConfig, state: UthState, box: int, now: Now) -> Result:
    sensors = sorted({*state.sensors, box})
    state = replace(state, sensors=sensors)
    if state.in_round:
        return state, [fx.log(f"box {box}: jackpot chip after the first card is no wager (5.5)")]
    if not live(config, state, now):
        return state, [fx.log(f"box {box}: jackpot offline, jackpot wager refused (11.11)")]
    lamps = dict(state.lamps)
    effects = _set_lamp(lamps, box, BET)
    return replace(state, lamps=lamps), effects


def bet_off(config: UthConfig, state: UthState, data: Any, now: Now) -> Result:
    """bet.off {box}: the box's jackpot sensor is clear; a locked jackpot wager stands (5.5)."""
    box = fields.box(data, config.boxes)
    state = replace(state, sensors=[b for b in state.sensors if b != box])
    if box in state.jackpot_boxes:
        return state, [fx.log(f"box {box}: jackpot wager locked, it stands (5.5)")]
    lamps = dict(state.lamps)
    effects = _set_lamp(lamps, box, IDLE)
    return replace(state, lamps=lamps), effects


# -- lock (5.5) --------------------------------------------------------------------------------
def lock(config: UthConfig, state: UthState, now: Now) -> Result:
    """The first card is out: the jackpot wagers are those sensed on a box with a hand (15.2.1)
    while the jackpot is live (11.11). Their contributions go to the pool now."""
    hands = {int(b) for b in state.wagers}
    online = live(config, state, now)
    over = carded.uncovered(config, state)  # a chip its card cannot cover (13.3)
    boxes = sorted(b for b in state.sensors if b in hands and b not in over) if online else []
    effects: list[Effect] = []
    for b in state.sensors:
        if b not in boxes:
            why = "no Ante/Blind (15.2.1)" if b not in hands else "jackpot offline (11.11)"
            why = "over the Player Card's Loss Limit (13.3)" if b in over and online else why
            effects.append(fx.log(f"box {b}: jackpot wager refused, {why}"))
    lamps = dict(state.lamps)
    for b in range(1, config.boxes + 1):
        effects += _set_lamp(lamps, b, LOCKED if b in boxes else IDLE)
    state = replace(state, lamps=lamps, jackpot_boxes=boxes)
    if not boxes:
        return state, effects
    amount = config.jackpot_wager * len(boxes)
    ledger = {**state.ledger, "wagered": state.ledger["wagered"] + amount}
    state = replace(state, ledger=ledger)
    if not config.linked:
        pool = contribute(pool_state(state.pool), [config.jackpot_wager] * len(boxes))
        state = replace(state, pool_at_lock=state.pool, pool=pool_json(pool))
        state, shown = show_pool(config, state)
        effects += shown
    effects.append(fx.outbox(OutboxType.JACKPOT_INCREMENT, _wagers_payload(config, state, boxes)))
    return state, effects


def _wagers_payload(config: UthConfig, state: UthState, boxes: Sequence[int]) -> JSON:
    return {
        "round": state.round,
        "pool_id": config.pool_id,
        "boxes": list(boxes),
        "wager": config.jackpot_wager,
        "wagers": len(boxes),
        "amount": config.jackpot_wager * len(boxes),
    }


def show_pool(config: UthConfig, state: UthState) -> Result:
    """The meter shows the pool as soon as its value is known; it may never show more than the
    pool (2.3, 2.4.3, 15.1.3, issue 13), so a lower value goes out marked `after_award`: the
    meter lowers its figure only for a value so marked (devices/meter.py)."""
    amount = meter(config, state)
    shown = pool_display(config, amount, online=state.jackpot["online"])
    if shown == state.display:
        return state, []
    before = state.display
    lower = isinstance(before.get("amount"), int) and amount < before["amount"]
    if before.get("mode") == "pool" and lower:
        shown = {**shown, "after_award": True}
    return replace(state, display=shown), [fx.display(shown)]


# -- void (15.3.1) -----------------------------------------------------------------------------
def cancel(config: UthConfig, state: UthState) -> Result:
    """The round is void: the locked jackpot wagers are cancelled and returned (15.3.1); the
    standalone pool goes back to its state before this round's contributions."""
    boxes = state.jackpot_boxes
    if not boxes:
        return state, []
    amount = config.jackpot_wager * len(boxes)
    ledger = {**state.ledger, "wagered": state.ledger["wagered"] - amount}
    state = replace(state, ledger=ledger)
    effects = [
        fx.outbox(OutboxType.JACKPOT_CANCEL,
                  {**_wagers_payload(config, state, boxes), "rule": "15.3.1"})
    ]
    if not config.linked and state.pool_at_lock is not None:
        state = replace(state, pool=state.pool_at_lock, pool_at_lock=None)
        state, shown = show_pool(config, state)
        effects += shown
    return state, effects


# -- awards (15.2) -----------------------------------------------------------------------------
def entries(config: UthConfig, state: UthState, deal: Deal, folded: set[int]) -> list[JackpotEntry]:
    """15.2.6: two hole cards + the flop; folded hands still qualify (9.6.2, 15.1.4)."""
    return [
        JackpotEntry(b, deal.jackpot_hand(b), config.jackpot_wager, b in folded)
        for b in state.jackpot_boxes
    ]


def settle(
    config: UthConfig, state: UthState, deal: Deal, folded: set[int]
) -> tuple[UthState, list[Effect], JSON]:
    """Award the round's jackpot hands; returns the state, effects and the summary's part."""
    items = entries(config, state, deal, folded)
    summary: JSON = {
        "boxes": list(state.jackpot_boxes),
        "wager": config.jackpot_wager,
        "amount": config.jackpot_wager * len(items),
        "hands": [_entry_json(e) for e in items],
    }
    if not items:
        return state, [], {**summary, ("pending" if config.linked else "payouts"): []}
    if config.linked:
        return _request_award(config, state, items, summary)
    return _award_locally(config, state, items, summary)


def _entry_json(e: JackpotEntry) -> JSON:
    category = category_of(hand_rank(e.cards))
    return {
        "box": e.box,
        "cards": format_cards(e.cards).split(),
        "category": category.name.lower(),
        "wager": e.wager,
        "folded": e.folded,
    }


def _award_locally(
    config: UthConfig, state: UthState, items: list[JackpotEntry], summary: JSON
) -> tuple[UthState, list[Effect], JSON]:
    result = award(pool_state(state.pool), items, config.jackpot_table)
    payouts = [p.as_json() for p in result.payouts]
    paid = sum(p["amount"] for p in payouts)
    ledger = {
        **state.ledger,
        "paid": state.ledger["paid"] + paid,
        "from_house": state.ledger["from_house"] + result.house_paid,
    }
    state = replace(state, pool=pool_json(result.state), ledger=ledger)
    effects = [fx.display({"mode": "win", "box": p["box"], "amount": p["amount"]}) for p in payouts]
    state, lamp_fx = _win_lamps(state, [p["box"] for p in payouts])
    state, shown = show_pool(config, state)
    summary = {**summary, "payouts": payouts, "seed_from_house": result.seed_from_house}
    return state, effects + lamp_fx + shown, summary


def _win_lamps(state: UthState, boxes: Sequence[int]) -> Result:
    lamps = dict(state.lamps)
    effects: list[Effect] = []
    for b in dict.fromkeys(boxes):
        effects += _set_lamp(lamps, b, WIN)
    return replace(state, lamps=lamps), effects


def _request_award(
    config: UthConfig, state: UthState, items: list[JackpotEntry], summary: JSON
) -> tuple[UthState, list[Effect], JSON]:
    hits = [
        e.box
        for e in items
        if category_of(hand_rank(e.cards)) >= Category.FLUSH  # 15.2.8
    ]
    if not hits:
        return state, [], {**summary, "pending": []}
    # Every entry goes with the hit: bonus jackpots go to all valid wagers (15.2.10.2).
    payload = {
        "round": state.round,
        "pool_id": config.pool_id,
        "flop": summary["hands"][0]["cards"][2:],
        "hits": hits,
        "entries": summary["hands"],
    }
    pending = {"round": state.round, "boxes": hits}
    state = replace(state, pending_hits=[*state.pending_hits, pending])
    effects = [fx.outbox(OutboxType.JACKPOT_HIT, payload)]
    effects += [fx.display({"mode": "pending", "box": b}) for b in hits]
    return state, effects, {**summary, "pending": hits}


def on_award(config: UthConfig, state: UthState, data: Any, now: Now) -> Result:
    """ho.award {round, payouts: [{box, award, amount}]}: resolves a PENDING hit."""
    if not config.linked:
        raise InputError("ho.award without a linked pool (standalone jackpot)")
    number = fields.integer(data, "round")
    hit = next((h for h in state.pending_hits if h["round"] == number), None)
    if hit is None:
        raise InputError(f"ho.award for round {number}: no pending jackpot hit")
    raw = data.get("payouts")
    if not isinstance(raw, list):
        raise InputError("ho.award: payouts must be a list")
    payouts = [_payout(config, p) for p in raw]
    paid = sum(p["amount"] for p in payouts)
    ledger = {**state.ledger, "paid": state.ledger["paid"] + paid}
    pending = [h for h in state.pending_hits if h is not hit]
    state = replace(state, pending_hits=pending, ledger=ledger)
    effects = [fx.display({"mode": "win", "box": p["box"], "amount": p["amount"]}) for p in payouts]
    if not state.in_round:
        state, lamp_fx = _win_lamps(state, [p["box"] for p in payouts])
        effects += lamp_fx
    effects.append(fx.log(f"round {number}: jackpot awarded by head office, {paid} cents"))
    state, shown = show_pool(config, state)
    return state, effects + shown


def verify(config: UthConfig, state: UthState, data: Any, now: Now) -> Result:
    """dealer.jackpot_verify {round, boxes?, operator}: an attendant verified, at the table, a
    hit still PENDING its award (rule 15: a large award waits for verification before the pool
    resets). Head office pays it only if it held the hit for its size alone."""
    if not config.linked:
        raise InputError("jackpot_verify without a linked pool (standalone jackpot)")
    number = fields.integer(data, "round")
    hit = next((h for h in state.pending_hits if h["round"] == number), None)
    if hit is None:
        raise InputError(f"round {number}: no jackpot hit pending its award")
    boxes = data.get("boxes", hit["boxes"])
    if (not isinstance(boxes, list) or not boxes
            or not all(isinstance(b, int) and not isinstance(b, bool) for b in boxes)
            or len(set(boxes)) != len(boxes) or not set(boxes) <= set(hit["boxes"])):
        raise InputError(f"round {number}: boxes {str(boxes)[:60]} are not among the hit's"
                         f" boxes {hit['boxes']}")
    who = fields.operator(data, "jackpot_verify: no attendant identified (control socket only)")
    assert who is not None  # required: refused above without one
    payload = {"round": number, "pool_id": config.pool_id, "boxes": sorted(boxes),
               "verified_by": who}
    return state, [fx.outbox(OutboxType.JACKPOT_VERIFIED, payload),
                   fx.log(f"round {number}: jackpot verified by {who['user']} (rule 15),"
                          " waiting for head office's award")]


def _payout(config: UthConfig, data: Any) -> JSON:
    if not isinstance(data, dict):
        raise InputError(f"ho.award: bad payout {data!r}")
    return {
        "box": fields.box(data, config.boxes),
        "award": fields.text(data, "award", "jackpot"),
        "amount": fields.cents(data, "amount"),
    }


def on_pool(config: UthConfig, state: UthState, data: Any, now: Now) -> Result:
    """ho.pool {pool, amount, version, awards?, wager?}: a valid, not older value refreshes the
    link (11.11) and the meter at once, lower values included (another table's hit). `awards`:
    head office's count of hits paid from the pool; a lower amount with no new award is shown
    (the meter never shows more than the pool) and logged. `wager`: the pool's qualifying
    wager; linked tables use the same one (15.2.5.3): a table whose wager differs takes no
    jackpot wagers."""
    if not config.linked:
        raise InputError("ho.pool ignored: standalone jackpot")
    pool = fields.text(data, "pool")
    if pool != config.pool_id:
        raise InputError(f"ho.pool for pool {pool!r}, this table is on {config.pool_id!r}")
    amount = fields.cents(data, "amount")
    version = fields.integer(data, "version")
    if version < state.jackpot["version"]:
        raise InputError(f"ho.pool version {version} older than {state.jackpot['version']}")
    awards = fields.integer(data, "awards", None)
    wager = fields.cents(data, "wager", None)
    fresh = fields.integer(data, "fresh_ms", None)  # the link's, never head office's
    if fresh is not None and not config.pool_timeout_ms <= fresh <= MAX_FRESH_MS:
        raise InputError(f"ho.pool fresh_ms {fresh} is not {config.pool_timeout_ms}.."
                         f"{MAX_FRESH_MS}")
    effects: list[Effect] = []
    jp = {**state.jackpot, "amount": amount, "version": version, "last_pool_ms": now.mono_ms,
          "fresh_ms": fresh}
    if awards is not None:
        if amount < state.jackpot["amount"] and awards <= state.jackpot.get("awards", -1):
            # Not an alarm: a linked table's void cancels its jackpot wagers (15.3.1) and an
            # operator may lower the ceiling, both lowering the pool with no award; an alarm on
            # every linked void would teach technicians to ignore alarms. Shown and logged.
            effects.append(fx.log(f"pool {config.pool_id} went down to {amount} with no award"
                                  " (a cancellation or an operator's change): the meter shows"
                                  " it (2.4.3, 15.1.3)"))
        jp["awards"] = awards
    if wager is not None and wager != config.jackpot_wager:
        if jp.get("wager_mismatch") != wager:
            effects.append(fx.alarm("technician", f"pool {config.pool_id} qualifies with"
                                    f" {wager} c, this table with {config.jackpot_wager} c:"
                                    " no jackpot wagers until they agree", "15.2.5.3"))
        jp["wager_mismatch"] = wager
    else:
        jp.pop("wager_mismatch", None)
    state = replace(state, jackpot=jp)
    if not state.jackpot["online"]:
        return state, effects  # refresh() shows the pool and relamps
    state, shown = show_pool(config, state)
    return state, effects + shown


def switch(enabled: bool) -> Step:
    """dealer.jackpot_off/on: the supervisor continues without the jackpot (11.11)."""

    def step(config: UthConfig, state: UthState, data: Any, now: Now) -> Result:
        if state.jackpot["disabled"] == (not enabled):
            raise InputError(f"jackpot already {'enabled' if enabled else 'disabled'}")
        jp = {**state.jackpot, "disabled": not enabled}
        return replace(state, jackpot=jp), [fx.log(f"jackpot {'on' if enabled else 'off'} (11.11)")]

    return step


def pool_status(config: UthConfig, state: UthState) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": config.pool_id,
        "mode": "linked" if config.linked else "standalone",
        "amount": meter(config, state),
        "pending": [dict(h) for h in state.pending_hits],
        "ledger": dict(state.ledger),
    }
    if config.linked:
        out["version"] = state.jackpot["version"]
        out["link"] = "up" if state.jackpot["link_up"] else "down"
    else:
        out["reserve"] = state.pool["reserve"]
        out["seed"] = state.pool["seed"]
    return out
