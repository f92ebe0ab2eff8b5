"""The vocabulary between the outside world and a round machine: Event, Effect, Now, and the
three registries of kinds: event kinds (`Kind`: who emits each, its fields, what it means),
effect kinds (`EffectKind`) and outbox message types (`OutboxType`, the MQTT contract's).

Every kind string is inside the journal's hash chain (and an outbox type on head office's wire):
its text never changes. Code refers to a kind by its name here (`Kind.DICE_RESULT`,
`EffectKind.DISPLAY`, `OutboxType.ROUND_RESULT`), never by repeating the literal
(tests/test_kind_registry.py parses controller/ and headoffice/ for one; devices/ keeps its own
events, cross-checked against `Kind` by tests/rounds/test_rounds_contract.py). Each is a
`StrEnum`: a member is its string, so it compares, hashes and serialises as the plain text.

docs/events.md is generated from this module: `python -m controller.events --markdown`.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from shared.link.outbox import OutboxType

JSON = dict[str, Any]


class EffectKind(StrEnum):
    """What `step` asks of the outside (controller/daemon/effects.py carries each out)."""

    DEVICE = "device"  # a command to a device
    DISPLAY = "display"  # what the meter / table display shows
    OUTBOX = "outbox"  # a message to head office, journaled with the event
    ROUND = "round"  # a closed round's record, journaled with the event
    ALARM = "alarm"  # an alarm for the dealer, supervisor or technician
    LOG = "log"  # a log line


EFFECT_KINDS: frozenset[str] = frozenset(EffectKind)
JOURNALED_EFFECTS: frozenset[str] = frozenset({EffectKind.OUTBOX, EffectKind.ROUND})


@dataclass(frozen=True, slots=True)
class Event:
    kind: str
    data: Mapping[str, Any] = field(default_factory=dict)

    def as_json(self) -> JSON:
        return {"kind": self.kind, "data": dict(self.data)}


@dataclass(frozen=True, slots=True)
class Effect:
    kind: str
    data: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.kind not in EFFECT_KINDS:
            raise ValueError(f"unknown effect kind {self.kind!r}")

    def as_json(self) -> JSON:
        return {"kind": self.kind, "data": dict(self.data)}


@dataclass(frozen=True, slots=True)
class Now:
    """The injected clock: UTC wall time for records, monotonic milliseconds for timeouts."""

    utc: str  # ISO 8601, e.g. "2026-11-25T21:40:00.123Z"
    mono_ms: int


class Source(StrEnum):
    """Who puts an event into the journal."""

    DEVICE = "device"  # a device driver (devices/), or its simulator
    DEALER = "dealer"  # the dealer keypad or the control socket (`tablectl dealer`)
    LINK = "link"  # the head-office link (controller/link/)
    SERVICE = "service"  # the daemon itself


class Kind(StrEnum):
    """Every event kind. The values are byte-identical to the journals' (hash chain)."""

    TABLE_OPEN = "table.open"
    TABLE_CLOSE = "table.close"
    CHUNG_ON = "chung.on"
    CHUNG_OFF = "chung.off"
    OFF_PRESSED = "off.pressed"
    OFF_RELEASED = "off.released"
    BET_ON = "bet.on"
    BET_OFF = "bet.off"
    DICE_RESULT = "dice.result"
    DICE_NOT_FLAT = "dice.not_flat"
    SHAKER_FAULT = "shaker.fault"
    METER_FAULT = "meter.fault"
    METER_READY = "meter.ready"
    METER_COMMAND_FAILED = "meter.command_failed"
    SHUFFLER_READY = "shuffler.ready"
    SHUFFLER_JAM = "shuffler.jam"
    SHUFFLER_FAULT = "shuffler.fault"
    CARD_DISPENSED = "card.dispensed"
    DECK_CHECK = "deck.check"
    CUT_SELECTED = "cut.selected"
    LINK_UP = "link.up"
    LINK_DOWN = "link.down"
    HO_POOL = "ho.pool"
    HO_AWARD = "ho.award"
    HO_CARD = "ho.card"
    CARDREADER_READ = "cardreader.read"
    CARDREADER_UNREADABLE = "cardreader.unreadable"
    CARDREADER_REMOVED = "cardreader.removed"
    CARDREADER_FAULT = "cardreader.fault"
    TICK = "tick"
    JOURNAL_LOSS_ACCEPTED = "journal.loss_accepted"
    METERS_CLOSE_SHIFT = "meters.close_shift"
    # The dealer keypad: `dealer.<action>`. Pai Gow.
    DEALER_OFF_CLEAR = "dealer.off_clear"
    DEALER_OFF_DRAW = "dealer.off_draw"
    DEALER_OFF_CANCEL = "dealer.off_cancel"
    DEALER_BANK = "dealer.bank"
    DEALER_HOUSE_BANK = "dealer.house_bank"
    DEALER_WAGER_REMOVE = "dealer.wager_remove"
    DEALER_CUT = "dealer.cut"
    DEALER_STEAL = "dealer.steal"
    DEALER_NO_MORE_BETS = "dealer.no_more_bets"
    DEALER_SHAKE = "dealer.shake"
    DEALER_DELIVERED = "dealer.delivered"
    DEALER_RESULT = "dealer.result"
    DEALER_HAND_VOID = "dealer.hand_void"
    DEALER_HANDS_MIXED = "dealer.hands_mixed"
    DEALER_CONTROL = "dealer.control"
    DEALER_MISCOUNT = "dealer.miscount"
    DEALER_LAJA = "dealer.laja"
    DEALER_RESHUFFLE = "dealer.reshuffle"
    # Both games.
    DEALER_WAGER = "dealer.wager"
    DEALER_VOID = "dealer.void"
    # UTH.
    DEALER_WITHDRAW = "dealer.withdraw"
    DEALER_DEAL = "dealer.deal"
    DEALER_DEAL_METHOD = "dealer.deal_method"
    DEALER_CARD = "dealer.card"
    DEALER_DECK_CHECK = "dealer.deck_check"
    DEALER_DECK_CONFIRMED = "dealer.deck_confirmed"
    DEALER_DEALT = "dealer.dealt"
    DEALER_MISDEAL = "dealer.misdeal"
    DEALER_DECISION = "dealer.decision"
    DEALER_FLOP = "dealer.flop"
    DEALER_TURN_RIVER = "dealer.turn_river"
    DEALER_DEALER_HAND = "dealer.dealer_hand"
    DEALER_JACKPOT_VERIFY = "dealer.jackpot_verify"
    DEALER_JACKPOT_OTHER = "dealer.jackpot_other"
    DEALER_JACKPOT_OFF = "dealer.jackpot_off"
    DEALER_JACKPOT_ON = "dealer.jackpot_on"
    # Carded play, both games (issue 29).
    DEALER_PLAYER_CARD = "dealer.player_card"
    DEALER_CARD_INVALID = "dealer.card_invalid"
    DEALER_CARD_RESTRICT = "dealer.card_restrict"
    DEALER_CHIPS_DECLARED = "dealer.chips_declared"


DEALER_PREFIX = "dealer."  # a keypad action `x` is the event `dealer.x`


@dataclass(frozen=True, slots=True)
class KindSpec:
    kind: Kind
    source: Source
    emitter: str  # the module or device that emits it
    fields: str  # the `data` object, informally
    meaning: str  # one line


def _dev(kind: Kind, emitter: str, fields: str, meaning: str) -> KindSpec:
    return KindSpec(kind, Source.DEVICE, emitter, fields, meaning)


def _dealer(kind: Kind, fields: str, meaning: str) -> KindSpec:
    return KindSpec(kind, Source.DEALER, "keypad / tablectl dealer", fields, meaning)


def _link(kind: Kind, fields: str, meaning: str) -> KindSpec:
    return KindSpec(kind, Source.LINK, "controller/link", fields, meaning)


_SPECS = (
    _dev(Kind.TABLE_OPEN, "sensors (key switch) / tablectl table open", "{operator?}",
         "the table is opened (by the supervisor's command: `operator` names who)"),
    _dev(Kind.TABLE_CLOSE, "sensors (key switch) / tablectl table close", "{operator?}",
         "the table is closed (by the supervisor's command: `operator` names who)"),
    _dev(Kind.CHUNG_ON, "sensors", "{box}", "Pai Gow: the chung (bank marker) is on a box"),
    _dev(Kind.CHUNG_OFF, "sensors", "{box}", "Pai Gow: the chung left a box"),
    _dev(Kind.OFF_PRESSED, "sensors", "{box}", "Pai Gow: a box's OFF button is pressed"),
    _dev(Kind.OFF_RELEASED, "sensors", "{box}", "Pai Gow: a box's OFF button is released"),
    _dev(Kind.BET_ON, "sensors", "{box}", "UTH: a chip is on a box's jackpot bet sensor"),
    _dev(Kind.BET_OFF, "sensors", "{box}", "UTH: a box's jackpot bet sensor is clear"),
    _dev(Kind.DICE_RESULT, "shaker", "{box_dice: [a, b, c], cut_die: n or null}",
         "Pai Gow: the dice of one shake (a die may read \"not_flat\")"),
    _dev(Kind.DICE_NOT_FLAT, "shaker", "{}", "Pai Gow: a die is not lying flat: shake again"),
    _dev(Kind.SHAKER_FAULT, "shaker", "{reason}",
         "the shaker failed (cover open, motor, no answer, \"disconnected: ...\")"),
    _dev(Kind.METER_FAULT, "meter", "{reason}", "the meter / table display is gone"),
    _dev(Kind.METER_READY, "meter", "{}", "the meter is back"),
    KindSpec(Kind.METER_COMMAND_FAILED, Source.SERVICE, "daemon (a meter command raised)",
             "{command, reason}", "a command to the meter failed (UTH 11.11: jackpot offline)"),
    _dev(Kind.SHUFFLER_READY, "shuffler", "{deck}", "UTH: a deck is shuffled and ready"),
    _dev(Kind.SHUFFLER_JAM, "shuffler", "{reason}", "UTH: the shuffler jammed"),
    _dev(Kind.SHUFFLER_FAULT, "shuffler", "{reason}", "UTH: the shuffler malfunctioned"),
    _dev(Kind.CARD_DISPENSED, "shuffler", "{card, index}",
         "UTH: one card out of the shuffler, in order"),
    _dev(Kind.DECK_CHECK, "shuffler",
         "{deck?, ok, missing: [..], extra: [..], duplicate: [..], unreadable: n}",
         "UTH: the shuffler read a whole deck"),
    _dev(Kind.CARDREADER_READ, "cardreader", "{box, card}",
         "a Player Card read at a box (its opaque id): as `dealer.player_card` (UTH 13.1)"),
    _dev(Kind.CARDREADER_UNREADABLE, "cardreader", "{box}",
         "a card inserted that could not be read: the dealer keys it"),
    _dev(Kind.CARDREADER_REMOVED, "cardreader", "{box}", "the card taken out of a box's reader"),
    _dev(Kind.CARDREADER_FAULT, "cardreader", "{reason}",
         "the card reader failed or its port went: the dealer keys cards"),
    _dev(Kind.CUT_SELECTED, "rng", "{cut, options: [..]}",
         "Pai Gow NZ: the random cut selection (9.3A(c))"),
    _link(Kind.LINK_UP, "{}", "the head-office link is up"),
    _link(Kind.LINK_DOWN, "{reason}", "the head-office link is down"),
    _link(Kind.HO_POOL, "{pool, amount, version, awards?, wager?, fresh_ms?}",
          "UTH: head office's jackpot pool value (fresh_ms: the link's, how long it holds)"),
    _link(Kind.HO_AWARD, "{round, payouts: [{box, award, amount}]}",
          "UTH: head office's award for a pending jackpot hit"),
    _link(Kind.HO_CARD,
          "{req, card, valid, reason?, limit?, remaining?, restricted?, granted?} or"
          " {req, card, offline: true}",
          "head office's answer about a Player Card (or none within [cards] answer_s)"),
    _link(Kind.TICK, "{pool_quiet_ms?}",
          "the clock moved (the pool's timeout); pool_quiet_ms: head office quiet that long"),
    KindSpec(Kind.JOURNAL_LOSS_ACCEPTED, Source.SERVICE, "controller/journal", "{..}",
             "a technician accepted lost journal records (docs/journal.md); written offline,"
             " the machines step it at replay: round_next (base.skip_rounds), held_wagers"
             " (UTH's jackpot ledger)"),
    KindSpec(Kind.METERS_CLOSE_SHIFT, Source.SERVICE, "daemon (tablectl meters close-shift)",
             "{operator?}", "the shift's meters close (a `shift_meters` outbox message);"
             " the machine ignores it"),
    _dealer(Kind.DEALER_OFF_CLEAR, "{box?}", "Pai Gow: OFF boxes back in play"),
    _dealer(Kind.DEALER_OFF_DRAW, "{}", "Pai Gow: draw a box to remove (NSW 15.9.3, NZ 12.10)"),
    _dealer(Kind.DEALER_OFF_CANCEL, "{}", "Pai Gow: cancel the OFF-box draw"),
    _dealer(Kind.DEALER_BANK,
            "{box, holder, player?, funds?, played_boxes?, controls?, shared_with?}",
            "Pai Gow: a player takes (or co-banks) the bank"),
    _dealer(Kind.DEALER_HOUSE_BANK, "{}", "Pai Gow: the house takes the bank"),
    _dealer(Kind.DEALER_WAGER,
            "Pai Gow {box, player, amount, seated?, distance_to_dealer?};"
            " UTH {box, ante, blind?, trips?}", "a wager keyed"),
    _dealer(Kind.DEALER_WAGER_REMOVE, "{box, player}", "Pai Gow: a wager withdrawn"),
    _dealer(Kind.DEALER_CUT, "{cut, options?, by}", "Pai Gow: the banker's or supervisor's cut"),
    _dealer(Kind.DEALER_STEAL, "{value}", "Pai Gow: the steal on the marker button"),
    _dealer(Kind.DEALER_NO_MORE_BETS, "{make_up?}",
            "Pai Gow: no more bets (make_up: what the banker added, NSW 13.2.2)"),
    _dealer(Kind.DEALER_SHAKE, "{}", "Pai Gow: shake again"),
    _dealer(Kind.DEALER_DELIVERED, "{}", "Pai Gow: the tiles are delivered"),
    _dealer(Kind.DEALER_RESULT, "{bank_hand, hands}", "Pai Gow: the round's result"),
    _dealer(Kind.DEALER_HAND_VOID, "{box, exposed}",
            "Pai Gow: a player calls their hand void after the dealer exposed 2+ tiles"),
    _dealer(Kind.DEALER_HANDS_MIXED, "{boxes}",
            "Pai Gow NZ: hands mixed beyond reconstruction are void (12.15)"),
    _dealer(Kind.DEALER_CONTROL, "{player, box}",
            "Pai Gow NZ: the one box a player controlling several chose (7.2)"),
    _dealer(Kind.DEALER_MISCOUNT, "{box, player, amount}",
            "Pai Gow NZ: a wager miscounted at no more bets, as recounted (12.17)"),
    _dealer(Kind.DEALER_LAJA, "{by: player|banker|dealer, approved?, exposed?}",
            "Pai Gow: a laja before the cut (NSW 7.3, 15.1-15.2; NZ 9.2-9.3, 12.1-12.2)"),
    _dealer(Kind.DEALER_RESHUFFLE, "{by: supervisor|dealer|banker, exposed?}",
            "Pai Gow: all 32 tiles re-shuffled before the deal (NSW 15.4, NZ 12.7, ACT 13.2-13.3)"),
    _dealer(Kind.DEALER_VOID,
            "{reason?, rule? (UTH); Pai Gow: kind?, handled?, reconstructed?;"
            " kind: invalidated, cause, forfeit?}",
            "the round is void (Pai Gow NSW: not after 15.11 / 15.13); invalidated by a"
            " supervisor: NSW 16.5-16.6, ACT 15.3-15.4, UTH 13.9-13.10"),
    _dealer(Kind.DEALER_WITHDRAW, "{box}", "UTH: a box's wagers withdrawn"),
    _dealer(Kind.DEALER_DEAL, "{}", "UTH: no more bets, deal"),
    _dealer(Kind.DEALER_DEAL_METHOD, "{method: shuffler, shoe or hand}",
            "UTH: the supervisor switches the deal method (12.2.3)"),
    _dealer(Kind.DEALER_CARD, "{card}", "UTH: a card dealt from a shoe or by hand (12.2.3)"),
    _dealer(Kind.DEALER_DECK_CHECK, "{deck?}", "UTH: ask the shuffler to read a deck"),
    _dealer(Kind.DEALER_DECK_CONFIRMED, "{deck?}",
            "UTH: the dealer checked a flagged deck by hand and found it complete (11.7.3)"),
    _dealer(Kind.DEALER_DEALT, "{}", "UTH: the deal is complete"),
    _dealer(Kind.DEALER_MISDEAL, "{reason, box?, handled?}",
            "UTH: a misdeal or card exposure, by cause (11.1-11.6)"),
    _dealer(Kind.DEALER_DECISION, "{box, action}", "UTH: a box's play, check or fold"),
    _dealer(Kind.DEALER_FLOP, "{}", "UTH: the flop is revealed"),
    _dealer(Kind.DEALER_TURN_RIVER, "{}", "UTH: the turn and river are revealed"),
    _dealer(Kind.DEALER_DEALER_HAND, "{conceded?: [boxes]}",
            "UTH: the dealer's hand is revealed: concessions (10.5), settle"),
    _dealer(Kind.DEALER_JACKPOT_VERIFY, "{round, boxes?, operator}",
            "UTH: an attendant verified a pending jackpot hit"),
    _dealer(Kind.DEALER_JACKPOT_OTHER, "{box, player}",
            "UTH: a jackpot wager on another player's box, supervisor allowed (15.2.1.1)"),
    _dealer(Kind.DEALER_JACKPOT_OFF, "{}", "UTH: the supervisor takes the jackpot out (11.11)"),
    _dealer(Kind.DEALER_JACKPOT_ON, "{}", "UTH: the jackpot back in"),
    _dealer(Kind.DEALER_PLAYER_CARD, "UTH {box, card}; Pai Gow {box, player, card}",
            "a Player Card at a box, read or keyed (UTH 13.1, Pai Gow 9.1): head office checks it"),
    _dealer(Kind.DEALER_CARD_INVALID, "UTH {box, reason?}; Pai Gow {box, player, reason?}",
            "a card found invalid (not the player's own: Pai Gow 16.1; UTH 11.16.1-11.16.2)"),
    _dealer(Kind.DEALER_CARD_RESTRICT, "{card, by (keypad; the CLI's login instead), reason?}",
            "a supervisor restricts a player until the Loss Limit period resets (UTH 13.4)"),
    _dealer(Kind.DEALER_CHIPS_DECLARED, "{card, amount, kind: purchase|brought}",
            "chips a player declared, bought at or brought to the table (UTH 13.2)"),
)
REGISTRY: Mapping[str, KindSpec] = {s.kind: s for s in _SPECS}


def by_source(source: Source) -> frozenset[str]:
    return frozenset(s.kind for s in _SPECS if s.source is source)


# The device-emitted kinds: what `tablectl devices watch` shows (controller/extensions/devices.py).
DEVICE_KINDS: frozenset[str] = by_source(Source.DEVICE)


def spec(kind: str) -> KindSpec | None:
    return REGISTRY.get(kind)


def markdown() -> str:
    """docs/events.md, generated (a test fails when the committed page differs)."""
    lines = [
        "# Event kinds",
        "",
        "Generated by `python -m controller.events --markdown` from `controller/events.py`;"
        " do not edit.",
        "",
        "An event is `{kind, data}`: `kind` a string below, `data` a JSON object. Every kind is"
        " inside the journal's hash chain: its text never changes. The daemon steps the round"
        " machine first and then journals the event with the effects (safe because `step` is"
        " pure: replaying the journal rebuilds the same state). A keypad action `x` is the"
        f" event `{DEALER_PREFIX}x`.",
        "",
        "| kind | name | source | emitted by | data | meaning |",
        "|---|---|---|---|---|---|",
    ]
    for s in _SPECS:
        lines.append(f"| `{s.kind.value}` | `Kind.{s.kind.name}` | {s.source.value} | {s.emitter}"
                     f" | `{s.fields}` | {s.meaning} |")
    lines += [
        "",
        "Effect kinds (what `step` asks of the outside): "
        + ", ".join(f"`{k}`" for k in sorted(EFFECT_KINDS))
        + "; `outbox` and `round` commit in the event's own transaction.",
        "",
        "Outbox message types (an `outbox` effect's `type`, docs/mqtt.md): "
        + ", ".join(f"`{t}`" for t in OutboxType) + ".",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    if sys.argv[1:] != ["--markdown"]:
        sys.exit("usage: python -m controller.events --markdown")
    sys.stdout.write(markdown())


# The events whose `card` is a card as it leaves the shuffler or the shoe (UTH), face down:
# `tablectl watch`, `devices watch`, and `journal tail`/`round show` of a round in play show them
# without it, as status shows no hole card (controller/rounds/uth/status.py); the journal and
# the closed round's record keep every card for the audit.
FACE_DOWN_KINDS = frozenset({Kind.CARD_DISPENSED.value, Kind.DEALER_CARD.value})
HIDDEN = "hidden"


def face_down(item: JSON) -> JSON:
    """A processed event (`{event, effects, ...}`) as a terminal may show it live: a dealt
    card's value `hidden`."""
    event = item.get("event") or {}
    shown = face_down_record(event)
    return item if shown is event else {**item, "event": shown}


def face_down_record(record: JSON) -> JSON:
    """A journaled event (`kind`, `data`) of a round still in play, as a terminal may show it:
    a dealt card's value `hidden` (the same object when there is nothing to hide)."""
    data = record.get("data") or {}
    if record.get("kind") not in FACE_DOWN_KINDS or "card" not in data:
        return record
    return {**record, "data": {**data, "card": HIDDEN}}
