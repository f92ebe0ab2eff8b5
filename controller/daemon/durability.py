"""Which of the daemon's journal commits wait for their own fsync (docs/daemon.md "Fewer fsyncs
a round"): every one that moves money or tells head office anything; a few that do neither are
committed at `synchronous=NORMAL` and made durable by the next fsync'd commit, which comes
before anything that moves money is acted on."""

from __future__ import annotations

from collections.abc import Sequence

from controller.events import Kind
from controller.journal import Entry
from controller.journal.store import MONEY_EFFECTS

# Events committed without an fsync of their own (docs/daemon.md "Where the bytes of a round
# go"): they move no money, and the next fsync'd commit (before anything that does) makes them
# durable; a power cut in between costs a re-key, never money. UTH: wagers are placed, not
# locked, until the first card out of the shuffler (5.5), whose commit is fsync'd; the deal only
# asks the shuffler for that card. Any other event, or one of these whose effects include an
# outbox message or a round record (or a snapshot, or a shift's close), is fsync'd.
# Head office's pool value (`ho.pool`) and the pool timeout's `tick` move no money either: what
# the meter shows, and whether the jackpot is online; lost in a power cut, the reboot's clock
# makes the held value stale anyway (jackpot.live) until head office's next one.
UNSYNCED_EVENTS: dict[str, frozenset[str]] = {
    "uth": frozenset({Kind.DEALER_WAGER, Kind.BET_ON, Kind.BET_OFF, Kind.SHUFFLER_READY,
                      Kind.DEALER_DEAL, Kind.HO_POOL, Kind.TICK}),
}


def needs_fsync(game: str, entries: Sequence[Entry], meters_changed: bool) -> bool:
    """True unless every entry is one of the game's UNSYNCED_EVENTS with no outbox message,
    round record or snapshot, and no meters changed (a round or a shift closed)."""
    unsynced = UNSYNCED_EVENTS.get(game, frozenset())
    return meters_changed or not entries or any(
        e.event.kind not in unsynced or e.snapshot is not None
        or any(fx.kind in MONEY_EFFECTS for fx in e.effects) for e in entries)
