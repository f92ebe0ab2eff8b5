"""Journals written by the old code (schema 1, one row per event) open, verify and go on.

`tests/journal/journal_v1.py` is a frozen copy of the journal module as tables ran it; these
tests write with it, then read, verify, upgrade and append with the current one. Tampering with
the schema-1 rows is still detected, before and after the upgrade.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controller import journal as jmod
from controller.journal import JOURNAL_FILE, Journal, JournalError, verify_dir
from controller.journal import schema as jschema
from controller.rounds.base import Effect, Event, Now
from tests.journal import journal_v1
from tests.support.journal import GAME, TABLE, errors_of, fill, now, raw


@pytest.fixture
def v1(tmp_path: Path) -> Path:
    """A schema-1 journal: 3 rounds of 10 events (see test_journal.fill), 7 outbox messages."""
    with journal_v1.Journal.open(tmp_path, table_id=TABLE, game=GAME) as j:
        fill(j)  # type: ignore[arg-type]
    return tmp_path


@pytest.fixture(params=["schema1", "upgraded"])
def vdir(request: pytest.FixtureRequest, v1: Path) -> Path:
    """The schema-1 journal as the old code left it, or after the current code opened it."""
    if request.param == "upgraded":
        Journal.open(v1, table_id=TABLE, game=GAME).close()
        assert schema(v1) == jmod.SCHEMA_VERSION
    return v1


def schema(d: Path) -> str:
    with raw(d) as c:
        return c.execute("SELECT value FROM meta WHERE key='schema'").fetchone()[0]


def test_old_journal_verifies_as_it_is(v1: Path) -> None:
    before = (v1 / JOURNAL_FILE).read_bytes()
    rep = verify_dir(v1)
    assert rep.as_json() == {"ok": True, "records": 30, "rounds_completed": 2,
                             "rounds_voided": 1, "errors": []}
    assert schema(v1) == "1"
    assert (v1 / JOURNAL_FILE).read_bytes() == before  # offline verify never upgrades


def test_upgrade_keeps_the_records_and_continues_the_chain(v1: Path) -> None:
    with journal_v1.Journal.open(v1, table_id=TABLE, game=GAME) as old:
        old_events = [e.as_json() for e in old.iter_events()]
        old_hashes = [e.hash for e in old.iter_events()]
        old_last_hash = old.last_hash
        old.ack_outbox(2)
    with Journal.open(v1, table_id=TABLE, game=GAME) as j:
        assert schema(v1) == jmod.SCHEMA_VERSION
        assert (j.last_seq, j.last_hash, j.last_round_number) == (30, old_last_hash, 3)
        assert [e.as_json() for e in j.iter_events()] == old_events
        assert [e.hash for e in j.iter_events()] == old_hashes
        # The old records are read where they are: rounds, their events, pending messages.
        assert j.round_record(2).status == "voided"  # type: ignore[union-attr]
        assert [e.seq for e in j.round_events(2)] == list(range(11, 21))
        assert [m.id for m in j.pending_outbox()] == [3, 4, 5, 6, 7]
        fill(j, rounds=2)  # rounds 4 and 5, in `commits`
        j.append_batch([jmod.Entry(Event("x", {"n": n}), now(60 + n), 5) for n in range(3)])
        assert j.last_seq == 53
        assert [m.id for m in j.pending_outbox()] == [3, 4, 5, 6, 7, 8, 9, 10, 11, 12]
        assert [m.seq for m in j.pending_outbox(limit=7)] == [12, 16, 20, 24, 28, 32, 36]
        assert j.round_record(3).seq == 30  # type: ignore[union-attr]
        assert j.round_record(4).seq == 40  # type: ignore[union-attr]
        assert [e.seq for e in j.round_events(3)] == list(range(21, 31))
        assert [e.seq for e in j.round_events(5)] == list(range(41, 54))
        assert [e.seq for e in j.iter_events(29, 32)] == [29, 30, 31, 32]
        assert j.ack_outbox(9) == 7
        assert [m.id for m in j.pending_outbox()] == [10, 11, 12]
        assert j.summary()["outbox_pending"] == 3
        assert (j.summary()["rounds_completed"], j.summary()["rounds_voided"]) == (4, 1)
    with raw(v1) as c:
        assert c.execute("SELECT count(*) FROM events").fetchone()[0] == 30
        assert c.execute("SELECT count(*) FROM outbox").fetchone()[0] == 0
        assert c.execute("SELECT count(*) FROM commits").fetchone()[0] == 21
    rep = verify_dir(v1)
    assert rep.as_json() == {"ok": True, "records": 53, "rounds_completed": 4,
                             "rounds_voided": 1, "errors": []}
    with Journal.open(v1, table_id=TABLE, game=GAME) as j:  # reopens as schema 2
        assert (j.last_seq, j.last_round_number) == (53, 5)
        snap, events = j.replay_point()
        assert snap == {"round": 5, "after": 50}
        assert [e.seq for e in events] == [51, 52, 53]
    with Journal.open(v1, table_id=TABLE, game=GAME, verify=False) as j:
        assert (j.last_seq, j.last_round_number, j._next_outbox_id, j._acked_upto) == (
            53, 5, 13, 9)


def test_old_journal_opened_without_verify_upgrades(v1: Path) -> None:
    with Journal.open(v1, table_id=TABLE, game=GAME, verify=False) as j:
        assert (j.last_seq, j.last_round_number, j._next_outbox_id) == (30, 3, 8)
        fill(j, rounds=1)
    assert verify_dir(v1).ok


def test_the_old_code_refuses_an_upgraded_journal(vdir: Path) -> None:
    if schema(vdir) == "1":
        return
    with pytest.raises(journal_v1.JournalError, match=f"unknown schema '{jmod.SCHEMA_VERSION}'"):
        journal_v1.Journal.open(vdir, table_id=TABLE, game=GAME)


# ---- tampering with schema-1 rows (as before the upgrade; and after it) --------------------


def test_flipped_byte_in_event_data(vdir: Path) -> None:
    with raw(vdir) as c:
        c.execute("""UPDATE events SET data = replace(data, '"i":13', '"i":14') WHERE seq=13""")
    errs = errors_of(vdir)
    assert errs == ["seq 13: hash mismatch (record altered, reordered or chain broken)"]
    with pytest.raises(JournalError, match=r"journal .*journal\.sqlite3 is corrupt.*seq 13"):
        Journal.open(vdir, table_id=TABLE, game=GAME)


def test_flipped_byte_in_the_file(vdir: Path) -> None:
    path = vdir / JOURNAL_FILE
    blob = bytearray(path.read_bytes())
    at = blob.index(b'"box":0,"i":21}')
    blob[at + 6] ^= 0x01  # "0" -> "1"
    path.write_bytes(bytes(blob))
    errs = errors_of(vdir)
    assert any(e.startswith("seq 21: hash mismatch") for e in errs), errs


def test_deleted_middle_row(vdir: Path) -> None:
    with raw(vdir) as c:
        c.execute("DELETE FROM events WHERE seq=6")
    errs = errors_of(vdir)
    assert errs[0].startswith("seq 6 missing")
    assert errs[1].startswith("seq 7: hash mismatch")


def test_deleted_last_rows_of_an_upgraded_journal(vdir: Path) -> None:
    with Journal.open(vdir, table_id=TABLE, game=GAME) as j:
        j.append(Event("x"), now(31), round=4)
    with raw(vdir) as c:
        c.execute("DELETE FROM events WHERE seq >= 29")
    errs = errors_of(vdir)
    assert "schema-1 rows end at seq 28, the upgrade recorded seq 30" in errs
    assert "seq 29..30 missing (records deleted or reordered; next is seq 31)" in errs


def test_reordered_rows(vdir: Path) -> None:
    with raw(vdir) as c:
        c.execute("UPDATE events SET seq=-5 WHERE seq=5")
        c.execute("UPDATE events SET seq=5 WHERE seq=6")
        c.execute("UPDATE events SET seq=6 WHERE seq=-5")
    errs = errors_of(vdir)
    assert any(e.startswith("seq 5: hash mismatch") for e in errs), errs


def test_altered_outbox_payload(vdir: Path) -> None:
    with raw(vdir) as c:
        c.execute("""UPDATE events SET fx = replace(fx, '"cents":12', '"cents":99')
                     WHERE seq=12""")
    assert errors_of(vdir) == ["seq 12: hash mismatch (record altered, reordered or chain broken)"]


def test_deleted_or_moved_outbox_row(vdir: Path) -> None:
    with raw(vdir) as c:
        c.execute("DELETE FROM outbox WHERE id=3")
        c.execute("UPDATE outbox SET seq=1 WHERE id=5")
    errs = errors_of(vdir)
    assert "seq 12: outbox message 3 not acknowledged but missing from the outbox" in errs
    assert "outbox row id 5 points at seq 1, its message is in seq 20" in errs


def test_altered_snapshot(vdir: Path) -> None:
    with raw(vdir) as c:
        c.execute("""UPDATE snapshots SET state = '{"after":20,"round":9}' WHERE seq=20""")
    assert errors_of(vdir) == ["seq 20: snapshot hash mismatch (snapshot altered)"]


def test_altered_round_record(vdir: Path) -> None:
    with raw(vdir) as c:
        c.execute("UPDATE rounds SET status='completed' WHERE number=2")
    errs = errors_of(vdir)
    assert errs == ["rounds row 2 says completed at seq 20, seq 20 records voided"]
    with raw(vdir) as c:
        c.execute("UPDATE rounds SET status='voided' WHERE number=2")
        c.execute("DELETE FROM rounds WHERE number=1")
    assert errors_of(vdir) == ["seq 10: round 1 missing from the rounds table"]


def test_altered_meta_table_id(vdir: Path) -> None:
    with raw(vdir) as c:
        c.execute("UPDATE meta SET value='T99' WHERE key='table_id'")
    assert errors_of(vdir)[0].startswith("seq 1: hash mismatch")
    with pytest.raises(JournalError, match="seq 1"):
        Journal.open(vdir, table_id="T99", game=GAME)


def test_upgrade_is_all_or_nothing(v1: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jschema, "TABLE_COMMITS", "CREATE TABLE commits(")  # fails mid-way
    with pytest.raises(JournalError, match="upgrade to schema 2 failed"):
        Journal.open(v1, table_id=TABLE, game=GAME)
    assert schema(v1) == "1"
    assert verify_dir(v1).ok
    with sqlite3.connect(v1 / JOURNAL_FILE) as c:
        names = {r[0] for r in c.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert "commits" not in names and "snapshots_v2" not in names
    monkeypatch.undo()
    Journal.open(v1, table_id=TABLE, game=GAME).close()
    assert schema(v1) == jmod.SCHEMA_VERSION and verify_dir(v1).ok


# ---- property: any split between the old writer and the new one -------------------------

steps = st.lists(
    st.tuples(st.sampled_from(["chung.on", "card.dispensed", "tick", "é✓"]),
              st.dictionaries(st.text(max_size=4), st.integers() | st.text(max_size=4),
                              max_size=2),
              st.booleans(),  # new round (a round record)
              st.booleans(),  # snapshot
              st.integers(0, 2),  # outbox messages
              st.booleans()),  # acknowledge everything so far
    min_size=1, max_size=14)


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=steps, split=st.integers(0, 14), batch=st.integers(1, 4))
def test_old_then_new_round_trip(tmp_path_factory: pytest.TempPathFactory, steps: list[Any],
                                 split: int, batch: int) -> None:
    d = tmp_path_factory.mktemp("split")
    expected: list[tuple[Any, ...]] = []
    entries: list[jmod.Entry] = []

    def write(j: Any, i: int, step: tuple[Any, ...], new: bool) -> None:
        kind, data, new_round, take_snap, n_out, ack = step
        effects = [Effect("outbox", {"type": "m", "payload": [i, k]}) for k in range(n_out)]
        if new_round:
            effects.append(Effect("round", {"number": j.last_round_number + 1 + sum(
                len([e for e in x.effects if e.kind == "round"]) for x in entries),
                "status": "completed", "summary": data}))
        snapshot = {"i": i} if take_snap else None
        expected.append((i, kind, data, [[i, k] for k in range(n_out)]))
        if not new:
            j.append(Event(kind, data), Now(f"u{i}", i), round=1, effects=effects,
                     snapshot=snapshot)
            if ack and j._next_outbox_id > 1:
                j.ack_outbox(j._next_outbox_id - 1)
            return
        entries.append(jmod.Entry(Event(kind, data), Now(f"u{i}", i), 1, tuple(effects),
                                  snapshot))
        if len(entries) >= batch or ack:
            j.append_batch(entries)
            entries.clear()
            if ack and j._next_outbox_id > 1:
                j.ack_outbox(j._next_outbox_id - 1)

    with journal_v1.Journal.open(d, table_id=TABLE, game="uth") as old:
        for i, step in enumerate(steps[:split], start=1):
            write(old, i, step, new=False)
    with Journal.open(d, table_id=TABLE, game="uth") as j:
        for i, step in enumerate(steps[split:], start=split + 1):
            write(j, i, step, new=True)
        if entries:
            j.append_batch(entries)
    rep = verify_dir(d)
    assert rep.ok, rep.errors
    assert rep.records == len(steps)
    assert rep.rounds_completed == sum(s[2] for s in steps)
    with Journal.open(d, table_id=TABLE, game="uth") as j:
        got = [(e.seq, e.kind, e.data, [m.payload for m in e.outbox]) for e in j.iter_events()]
        assert got == expected
        acked = j._acked_upto
        pending = [p for *_, ps in expected for p in ps][acked:]
        assert [m.payload for m in j.pending_outbox(1000)] == pending
        assert [m.id for m in j.pending_outbox(1000)] == list(
            range(acked + 1, acked + 1 + len(pending)))
        for r in range(1, j.last_round_number + 1):
            rec = j.round_record(r)
            assert rec is not None and rec.number == r
            assert any(x.number == r for x in j.tail(len(steps))[rec.seq - 1].rounds)
