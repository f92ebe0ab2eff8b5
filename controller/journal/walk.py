"""The record-by-record checks of verification (verify.py walks the chain and calls these) and
the report they fill in."""

from __future__ import annotations

import sqlite3
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

from controller.journal import checkpoint
from controller.journal.chain import snapshot_hash
from controller.journal.codec import snapshot_text
from controller.journal.mac import JournalKey
from controller.journal.records import fx_items

MAX_ERRORS = 50  # a wrecked file must not produce a million-line report


@dataclass
class VerifyReport:
    records: int = 0
    rounds_completed: int = 0
    rounds_voided: int = 0
    errors: list[str] = field(default_factory=list)
    # Not part of the CLI's JSON; what the writer needs to continue the chain.
    last_seq: int = 0
    last_hash: str = ""
    last_event_round: int = 0
    next_outbox_id: int = 1
    acked_upto: int = 0
    error_count: int = 0
    # How the MACs were checked ("checked with key ...", or why not) and the high-water mark
    # (verify_dir); shown by `tablectl journal verify`, not part of as_json().
    macs: str = "not a keyed journal (schema 1 or 2)"
    mark: str = "not checked"
    checkpoint_seq: int = 0  # walked from the checkpoint at this seq (0: from the start)
    pruned_through: int = 0  # records up to this seq were pruned (retention.py)
    pruned_hash: str = ""  # the chain hash there
    # The segments' archives (verify_dir): how many were checked, and what is wrong with any
    # (each also an error): the background pass alarms on these alone, and does not take the
    # table out of service for them (docs/journal.md, "Archives are checked").
    archives: str = "not checked"
    archive_faults: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.error_count == 0

    @property
    def last_round_number(self) -> int:
        return self.rounds_completed + self.rounds_voided

    def error(self, text: str) -> None:
        self.error_count += 1
        if self.error_count <= MAX_ERRORS:
            self.errors.append(text)
        elif self.error_count == MAX_ERRORS + 1:
            self.errors.append(f"... more errors not listed (stopped listing at {MAX_ERRORS})")

    def archive_fault(self, text: str) -> None:
        self.archive_faults.append(text)
        self.error(text)

    def as_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "records": self.records, "rounds_completed": self.rounds_completed,
                "rounds_voided": self.rounds_voided, "errors": list(self.errors)}


@dataclass(frozen=True)
class Macs:
    """What the MACs of a schema-3 journal are checked with (docs/journal.md, "Keyed chain")."""

    key: JournalKey
    table_id: str
    game: str
    since: int  # every commit and snapshot after this seq carries a MAC

    def check(self, mac: Any, domain: str, *fields: Any) -> bool:
        return self.key.check(mac, domain, self.table_id, self.game, *fields)


class Walk:
    """The checks along the chain, record by record, with the side tables walked in step."""

    def __init__(self, conn: sqlite3.Connection, rep: VerifyReport, genesis: str,
                 macs: Macs | None = None, keyed: bool = False, after: int = 0,
                 passed: Collection[int] = ()) -> None:
        self.rep = rep
        self.macs = macs
        self.passed = passed
        # Side tables, each ordered by its key, from the records after seq `after` (0: all).
        # `outbox` and `rounds` index schema-1 records only.
        self.pending = conn.execute("SELECT id, seq FROM outbox WHERE seq > ? ORDER BY id",
                                    (after,))
        self.rounds = conn.execute("SELECT number, status, seq FROM rounds WHERE seq > ? "
                                   "ORDER BY number", (after,))
        self.snaps = conn.execute(
            f"SELECT seq, state, hash, {'mac' if keyed else 'NULL'} FROM snapshots WHERE seq > ? "
            "ORDER BY seq", (after,))
        self.cps = conn.execute("SELECT seq, body, mac FROM checkpoints WHERE seq > ? ORDER BY "
                                "seq", (after,)) if checkpoint.has_table(conn) else iter(())
        self.p_row = self.pending.fetchone()
        self.r_row = self.rounds.fetchone()
        self.s_row = self.snaps.fetchone()
        self.c_row = next(self.cps, None)
        # The hash of the snapshot at the record just walked ("": none; None: a bad one).
        self.snap_here: str | None = ""
        # The hash of a checkpoint at the record just walked that checks out on its own but
        # not against the recomputed chain (None: none such): verify.py goes on from it.
        self.resync: str | None = None
        self.may_resync = False  # set by verify.py for commits that store no chain hash
        self.prev = genesis
        self.expected = 1
        self.next_out, self.next_round = 1, 1

    def resume(self, cp: checkpoint.Checkpoint) -> None:
        """Walk on from a checkpoint: the position it sums up."""
        rep = self.rep
        self.prev, self.expected = cp.hash, cp.seq + 1
        self.next_out, self.next_round = cp.out + 1, cp.completed + cp.voided + 1
        rep.last_seq, rep.last_hash, rep.last_event_round = cp.seq, cp.hash, cp.round
        rep.rounds_completed, rep.rounds_voided = cp.completed, cp.voided
        rep.checkpoint_seq = cp.seq

    def gap(self, first: int, last: int) -> None:
        """The next records are seq first..last: report what is missing or out of place."""
        if first > self.expected:
            gap = f"seq {self.expected}" if first == self.expected + 1 else \
                f"seq {self.expected}..{first - 1}"
            self.rep.error(f"{gap} missing (records deleted or reordered; next is seq {first})")
        elif first < self.expected:
            self.rep.error(f"seq {first}..{last} out of order (expected seq {self.expected} next)")

    def record(self, seq: int, rnd: Any, fx: Any, h: str, indexed: bool) -> None:
        """One record; `fx` parsed (None: no effects); `h` its chain hash; `indexed`: a
        schema-1 record, whose outbox messages and round records have rows in the side tables."""
        rep = self.rep
        rep.records += 1
        self.resync = None
        if self.may_resync and self.c_row is not None and self.c_row[0] == seq \
                and seq not in self.passed:
            cp = self._parse(seq, self.c_row[1], self.c_row[2])
            if cp is not None and cp.hash != h:
                # The recomputed chain went wrong before here (verify.py reports it): the
                # checkpoint, which checks out on its own, says where it stands.
                self.resync = h = cp.hash
        if not isinstance(rnd, int) or rnd < rep.last_event_round:
            rep.error(f"seq {seq}: round {rnd!r} goes back from round {rep.last_event_round}")
        else:
            rep.last_event_round = rnd
        if fx is not None:
            try:
                outs, rnds = fx_items(fx)
            except (ValueError, TypeError, AttributeError, KeyError):
                rep.error(f"seq {seq}: journaled effects are malformed")
                outs, rnds = [], []
            for oid, _type, _payload in outs:
                self._message(seq, oid, indexed)
            for number, status, _summary in rnds:
                self._round(seq, number, status, indexed)
        while self.s_row is not None and self.s_row[0] < seq:
            rep.error(f"snapshot at seq {self.s_row[0]} has no event")
            self.s_row = self.snaps.fetchone()
        errors = rep.error_count
        if self.s_row is not None and self.s_row[0] == seq:
            try:
                ok = snapshot_hash(h, snapshot_text(self.s_row[1])) == self.s_row[2]
            except ValueError:
                ok = False
            if not ok:
                rep.error(f"seq {seq}: snapshot hash mismatch (snapshot altered)")
            elif self.macs is not None:
                mac = self.s_row[3]
                if mac is not None and not self.macs.check(mac, "snapshot", seq, self.s_row[2]):
                    rep.error(f"seq {seq}: snapshot MAC mismatch (snapshot rewritten without the "
                              "table's key)")
                elif mac is None and seq > self.macs.since:
                    rep.error(f"seq {seq}: snapshot has no MAC (every snapshot after seq "
                              f"{self.macs.since} has one)")
            # Its checkpoint is then not compared: the snapshot's error names the seq already.
            self.snap_here = self.s_row[2] if rep.error_count == errors else None
            self.s_row = self.snaps.fetchone()
        else:
            self.snap_here = ""
        self._checkpoint(seq, h)

    def _checkpoint(self, seq: int, h: str) -> None:
        """A checkpoint at this record must sum up exactly the records walked so far."""
        rep = self.rep
        while self.c_row is not None and self.c_row[0] < seq:
            rep.error(f"checkpoint at seq {self.c_row[0]} has no record")
            self.c_row = next(self.cps, None)
        if self.c_row is None or self.c_row[0] != seq:
            return
        _seq, body, tag = self.c_row
        self.c_row = next(self.cps, None)
        if seq in self.passed:
            return
        try:
            cp = self._check(seq, body, tag)
        except ValueError as exc:
            rep.error(f"seq {seq}: checkpoint refused: {exc}")
            return
        if self.snap_here is None:
            return
        here = checkpoint.Checkpoint(seq, h, rep.last_event_round, rep.rounds_completed,
                                     rep.rounds_voided, self.next_out - 1, cp.acked,
                                     self.snap_here)
        if cp != here or cp.acked > rep.acked_upto:
            rep.error(f"seq {seq}: checkpoint does not match the records it sums up")

    def _check(self, seq: int, body: Any, tag: Any) -> checkpoint.Checkpoint:
        if self.macs is not None:
            return checkpoint.check_row(self.macs.key, self.macs.table_id, self.macs.game, seq,
                                        body, tag)
        return checkpoint.Checkpoint.parse(body if isinstance(body, str) else "")

    def _parse(self, seq: int, body: Any, tag: Any) -> checkpoint.Checkpoint | None:
        try:
            return self._check(seq, body, tag)
        except ValueError:
            return None  # refused: _checkpoint reports it

    def _message(self, seq: int, oid: int, indexed: bool) -> None:
        rep = self.rep
        if oid != self.next_out:
            rep.error(f"seq {seq}: outbox message id {oid}, expected {self.next_out}")
        self.next_out = oid + 1
        while self.p_row is not None and (self.p_row[0] < oid
                                          or (not indexed and self.p_row[0] == oid)):
            rep.error(f"outbox row id {self.p_row[0]} (seq {self.p_row[1]}) matches no message")
            self.p_row = self.pending.fetchone()
        if not indexed:
            return  # pending: every id above the last ack (the chain is the queue)
        if oid <= rep.acked_upto:
            if self.p_row is not None and self.p_row[0] == oid:
                rep.error(f"outbox row id {oid} is acknowledged but still pending")
                self.p_row = self.pending.fetchone()
        elif self.p_row is None or self.p_row[0] != oid:
            rep.error(f"seq {seq}: outbox message {oid} not acknowledged but missing from the "
                      "outbox")
        else:
            if self.p_row[1] != seq:
                rep.error(f"outbox row id {oid} points at seq {self.p_row[1]}, its message is "
                          f"in seq {seq}")
            self.p_row = self.pending.fetchone()

    def _round(self, seq: int, number: int, status: str, indexed: bool) -> None:
        rep = self.rep
        if number != self.next_round:
            rep.error(f"seq {seq}: round {number} recorded, expected round {self.next_round}")
        self.next_round = number + 1
        if status == "completed":
            rep.rounds_completed += 1
        elif status == "voided":
            rep.rounds_voided += 1
        else:
            rep.error(f"seq {seq}: round {number} has unknown status {status!r}")
        while self.r_row is not None and (self.r_row[0] < number
                                          or (not indexed and self.r_row[0] == number)):
            rep.error(f"rounds row {self.r_row[0]} (seq {self.r_row[2]}) matches no round "
                      "record")
            self.r_row = self.rounds.fetchone()
        if not indexed:
            return
        if self.r_row is None or self.r_row[0] != number:
            rep.error(f"seq {seq}: round {number} missing from the rounds table")
        else:
            if (self.r_row[1], self.r_row[2]) != (status, seq):
                rep.error(f"rounds row {number} says {self.r_row[1]} at seq {self.r_row[2]}, "
                          f"seq {seq} records {status}")
            self.r_row = self.rounds.fetchone()

    def finish(self) -> None:
        rep = self.rep
        while self.p_row is not None:
            rep.error(f"outbox row id {self.p_row[0]} (seq {self.p_row[1]}) matches no message")
            self.p_row = self.pending.fetchone()
        while self.r_row is not None:
            rep.error(f"rounds row {self.r_row[0]} (seq {self.r_row[2]}) matches no round record")
            self.r_row = self.rounds.fetchone()
        while self.s_row is not None:
            rep.error(f"snapshot at seq {self.s_row[0]} is after the last event "
                      f"(seq {rep.last_seq})")
            self.s_row = self.snaps.fetchone()
        while self.c_row is not None:
            rep.error(f"checkpoint at seq {self.c_row[0]} is after the last event "
                      f"(seq {rep.last_seq})")
            self.c_row = next(self.cps, None)
        if rep.acked_upto >= self.next_out:
            rep.error(f"outbox acknowledged up to {rep.acked_upto}, but the last message is "
                      f"{self.next_out - 1}")
        rep.next_outbox_id = self.next_out
        if rep.last_round_number != self.next_round - 1:  # a bad status was not counted
            rep.error(f"rounds counted {rep.last_round_number}, recorded {self.next_round - 1}")
