"""Opening the table's journal at start and replaying it into the round machine's state: each
failure a reason and an error code for the daemon to go out of service with (never a fresh
journal, never a guessed state)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from controller.config import TableConfig
from controller.journal import Journal, JournalError
from controller.logs import event as log_event
from controller.rounds.base import RoundMachine
from controller.trialboot import BOOTLOADER, in_trial_boot
from shared.errors import TablectlError


class Unusable(TablectlError):
    """The journal cannot be opened or replayed: the daemon stays out of service with `code`."""

    def __init__(self, reason: str, code: str) -> None:
        super().__init__(reason)
        self.reason, self.code = reason, code


def open_journal(cfg: TableConfig, log: logging.Logger, *,
                 bootloader: Path = BOOTLOADER, mode: str = "production") -> Journal:
    # On the trial boot of an update the old software may boot again: the journal's format
    # stays what it can read (docs/journal.md, "Schema 4"); unknown counts as a trial.
    trial = in_trial_boot(bootloader)
    try:
        journal = Journal.open(
            cfg.service.state_dir, table_id=cfg.table_id, game=cfg.game,
            fast=True,  # from the latest checkpoint; the whole chain: look_after_journal
            segment_rounds=cfg.journal.segment_rounds,
            archive_dir=cfg.journal.archive_dir,
            full_wal=True,  # commits never grow the WAL: fewer writes to the card (walfile.py)
            upgrade=trial is False,
            fresh_ok=False,  # never silently a new journal where there was one (store.py)
            outside_mark=cfg.journal.outside_mark,
        )
    except JournalError as exc:
        # A loss (JournalLossError) names the mark's seq and the journal's last seq.
        raise Unusable(f"journal unusable: {exc}", "E101") from exc
    except OSError as exc:  # e.g. the state directory cannot be made on a read-only disk
        raise Unusable(f"journal unusable: {exc.filename}: {exc.strerror}", "E101") from exc
    if not journal.hashless:  # only when `trial` is not False
        why = ("a trial boot of an update: upgraded at the first start after it is committed"
               if trial else "the firmware's tryboot flag is unreadable: taken as a trial boot")
        log_event(log, logging.INFO if trial else logging.WARNING,
                  f"journal kept at schema 3 (its rows store their chain hash): {why}", schema=3)
    for why in journal.refused_checkpoints:  # damage or tampering: never trusted
        log_event(log, logging.WARNING, f"journal {why}; verified from an older one",
                  code="E104", verified_from=journal.verified_from)
    key = journal.key
    if key.dev:
        # Off play (simulation, development: `mode`) the state directory's key is what a bench
        # uses, a notice like the mode itself (E801, not counted as an error); in production
        # it is a fault of the installation (E107).
        log_event(
            log,
            logging.WARNING,
            f"JOURNAL KEY IS A DEVELOPMENT KEY ({key.source}), kept beside the journal: its "
            "MACs stop nobody who can write the state directory. A table in play gets its "
            "key through systemd LoadCredential= (docs/journal.md)",
            key_id=key.key_id, code="E107" if mode == "production" else "E801",
        )
    return journal


def replay(journal: Journal, machine: RoundMachine[Any]) -> tuple[Any, int]:
    """The state after the journal's last event (its latest snapshot, then the events after
    it) and how many events were replayed."""
    snapshot, events = journal.replay_point()
    try:
        state = machine.initial() if snapshot is None else machine.from_json(snapshot)
        for stored in events:
            state, _ = machine.step(state, stored.event, stored.now)
    except Exception as exc:  # a snapshot this build cannot read: never guess, never reset
        raise Unusable(f"journal replay failed ({type(exc).__name__}: {exc})", "E103") from exc
    return state, len(events)
