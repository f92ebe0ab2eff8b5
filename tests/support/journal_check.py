"""Checks of a played table's journal, shared by the crash tests and the soak."""

from __future__ import annotations

from pathlib import Path

from controller.config import TableConfig
from controller.config.machine import build_machine
from controller.journal import Journal, verify_dir


def check_journal(state_dir: Path, table_id: str, game: str) -> None:
    report = verify_dir(state_dir)
    assert report.ok, report.errors
    with Journal.open(state_dir, table_id=table_id, game=game) as journal:
        numbers = []
        # Every outbox message ever written (a linked table's acknowledged ones included).
        for message in (m for e in journal.iter_events() for m in e.outbox):
            if message.type == "round_result":
                payload = message.payload  # Pai Gow names it "number", UTH "round"
                numbers.append(payload.get("number", payload.get("round")))
        records = [journal.round_record(n) for n in range(1, journal.last_round_number + 1)]
    # Round numbers contiguous, each round (completed or voided) recorded once and reported to
    # head office exactly once.
    assert all(r is not None for r in records)
    assert sorted(numbers) == [r.number for r in records if r is not None]
    assert len(set(numbers)) == len(numbers)
    assert report.rounds_completed + report.rounds_voided == len(records) > 0


def status_from_journal(cfg: TableConfig) -> dict:
    """The status of the table configured by `cfg`, from its journal alone."""
    machine = build_machine(cfg)
    with Journal.open(cfg.service.state_dir, table_id=cfg.table_id, game=cfg.game) as journal:
        snapshot, events = journal.replay_point()
    state = machine.initial() if snapshot is None else machine.from_json(snapshot)
    for stored in events:
        state, _ = machine.step(state, stored.event, stored.now)
    return machine.status(state)
