"""Checkpoints and fast start (issue 16): a writer opening with `fast=True` trusts the latest
checkpoint that checks out and verifies only what follows it; a checkpoint that does not check
out is refused and an older one (or the start) is verified from; the whole walk still checks
every checkpoint against the records it sums up."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from controller.journal import Entry, Journal, JournalError, checkpoint, verify_dir
from controller.rounds.base import Effect, Event
from tests.support.journal import GAME, TABLE, fill, now, raw


@pytest.fixture(autouse=True)
def small(monkeypatch: pytest.MonkeyPatch) -> None:
    """Checkpoints trusted from the first record (a table's: from checkpoint.WALK_WHOLE_BELOW)."""
    monkeypatch.setattr(checkpoint, "WALK_WHOLE_BELOW", 0)


def position(j: Journal) -> tuple[Any, ...]:
    return (j.last_seq, j.last_hash, j.last_round_number, j.last_event_round,
            j._next_outbox_id, j._acked_upto, j.replay_point()[0],
            [e.seq for e in j.replay_point()[1]])


@pytest.fixture
def jdir(tmp_path: Path) -> Path:
    """3 rounds (snapshots and checkpoints at seq 10, 20, 30), an ack, then 5 events more."""
    with Journal.open(tmp_path, table_id=TABLE, game=GAME) as j:
        fill(j)
        j.ack_outbox(5)
        for i in range(31, 36):
            j.append(Event("dealer.action", {"i": i}), now(i), round=4,
                     effects=[Effect("outbox", {"type": "increment", "payload": {"i": i}})])
    return tmp_path


def checkpoints(d: Path) -> dict[int, dict[str, Any]]:
    with raw(d) as c:
        return {seq: json.loads(body) for seq, body in c.execute(
            "SELECT seq, body FROM checkpoints ORDER BY seq")}


def test_a_young_journal_is_walked_whole_even_fast(jdir: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(checkpoint, "WALK_WHOLE_BELOW", 30)
    with Journal.open(jdir, table_id=TABLE, game=GAME, fast=True) as j:
        assert j.verified_from == 0
    monkeypatch.setattr(checkpoint, "WALK_WHOLE_BELOW", 29)
    with Journal.open(jdir, table_id=TABLE, game=GAME, fast=True) as j:
        assert j.verified_from == 30


def test_a_checkpoint_is_written_with_each_snapshot(jdir: Path) -> None:
    cps = checkpoints(jdir)
    assert sorted(cps) == [10, 20, 30]
    with Journal.open(jdir, table_id=TABLE, game=GAME) as j:
        at20 = next(e for e in j.iter_events(20, 20))
    assert cps[20]["hash"] == at20.hash
    assert (cps[20]["round"], cps[20]["completed"], cps[20]["voided"], cps[20]["out"]) == (
        2, 1, 1, 5)
    assert cps[30]["acked"] == 0  # the ack came after it


def test_fast_open_starts_from_the_latest_checkpoint_with_the_same_state(jdir: Path) -> None:
    with Journal.open(jdir, table_id=TABLE, game=GAME) as j:
        full = position(j)
        assert j.verified_from == 0
    with Journal.open(jdir, table_id=TABLE, game=GAME, fast=True) as j:
        assert j.verified_from == 30 and j.refused_checkpoints == []
        assert position(j) == full
        assert j.append(Event("x", {}), now(36), round=4) == 36
    assert verify_dir(jdir).ok


def test_an_edit_after_the_checkpoint_is_refused_at_fast_open(jdir: Path) -> None:
    with raw(jdir) as c:
        c.execute("UPDATE commits SET hash = zeroblob(32) WHERE seq = 33")
    with pytest.raises(JournalError, match="seq 33"):
        Journal.open(jdir, table_id=TABLE, game=GAME, fast=True)


def test_an_edit_before_the_checkpoint_is_left_to_the_whole_walk(jdir: Path) -> None:
    with raw(jdir) as c:
        c.execute("UPDATE commits SET hash = zeroblob(32) WHERE seq = 13")
    with Journal.open(jdir, table_id=TABLE, game=GAME, fast=True) as j:
        assert j.verified_from == 30
        assert any("seq 13" in e for e in j.verify().errors)
    assert any("seq 13" in e for e in verify_dir(jdir).errors)
    with pytest.raises(JournalError, match="seq 13"):
        Journal.open(jdir, table_id=TABLE, game=GAME)


def forge(d: Path, seq: int, **changes: Any) -> None:
    """Change a checkpoint's body, keeping its MAC (made without the key)."""
    with raw(d) as c:
        body = json.loads(c.execute("SELECT body FROM checkpoints WHERE seq = ?",
                                    (seq,)).fetchone()[0])
        body.update(changes)
        c.execute("UPDATE checkpoints SET body = ? WHERE seq = ?",
                  (json.dumps(body, sort_keys=True, separators=(",", ":")), seq))


def test_a_forged_checkpoint_is_refused_and_an_older_one_used(jdir: Path) -> None:
    forge(jdir, 30, acked=7)  # would hide two unacknowledged messages
    with Journal.open(jdir, table_id=TABLE, game=GAME, fast=True) as j:
        assert j.verified_from == 20
        assert j.refused_checkpoints == [
            "checkpoint at seq 30 refused: MAC mismatch (written without the table's key)"]
        assert j._acked_upto == 5
    assert verify_dir(jdir).errors == [
        "seq 30: checkpoint refused: MAC mismatch (written without the table's key)"]


def test_with_every_checkpoint_refused_the_whole_chain_is_walked(jdir: Path) -> None:
    with raw(jdir) as c:
        c.execute("UPDATE checkpoints SET mac = zeroblob(16)")
        c.execute("UPDATE checkpoints SET body = 'x' WHERE seq = 20")
    with Journal.open(jdir, table_id=TABLE, game=GAME, fast=True) as j:
        assert j.verified_from == 0
        assert [r.split(":")[0] for r in j.refused_checkpoints] == [
            "checkpoint at seq 30 refused", "checkpoint at seq 20 refused",
            "checkpoint at seq 10 refused"]
        assert j.last_seq == 35


def test_a_checkpoint_whose_snapshot_was_altered_is_refused(jdir: Path) -> None:
    with raw(jdir) as c:
        c.execute("UPDATE snapshots SET state = ? WHERE seq = 30", ('{"round":9}',))
    # Refused, the walk starts at seq 20 and finds the snapshot altered: out of service.
    with pytest.raises(JournalError, match=r"1 errors; first: seq 30: snapshot hash mismatch"):
        Journal.open(jdir, table_id=TABLE, game=GAME, fast=True)


def test_a_checkpoint_inside_a_batch(tmp_path: Path) -> None:
    with Journal.open(tmp_path, table_id=TABLE, game=GAME) as j:
        j.append_batch([Entry(Event("a", {"n": n}), now(n), 1, (), {"n": n} if n == 2 else None)
                        for n in range(1, 5)])
        full = position(j)
    assert sorted(checkpoints(tmp_path)) == [2]
    with Journal.open(tmp_path, table_id=TABLE, game=GAME, fast=True) as j:
        assert j.verified_from == 2
        assert position(j) == full
    with raw(tmp_path) as c:  # the records after it in the same commit are walked
        c.execute("UPDATE commits SET hash = zeroblob(32)")
    with pytest.raises(JournalError, match=r"seq 3\.\.4: hash mismatch"):
        Journal.open(tmp_path, table_id=TABLE, game=GAME, fast=True)
