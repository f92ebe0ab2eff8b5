"""The durable journal: round trip, verification, tamper detection, refusal of foreign journals."""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controller import journal as jmod
from controller.journal import (
    JOURNAL_FILE,
    Entry,
    EntryRefused,
    Journal,
    JournalError,
    genesis_hash,
    record_hash,
    verify_dir,
)
from controller.journal import store as jstore
from controller.rounds.base import Effect, Event, Now
from tests.support.journal import GAME, TABLE, errors_of, fill, now, raw


def j_last(d: Path) -> int:
    with raw(d) as c:
        return int(c.execute("SELECT max(seq) FROM commits").fetchone()[0])


@pytest.fixture
def jdir(tmp_path: Path) -> Path:
    with Journal.open(tmp_path, table_id=TABLE, game=GAME) as j:
        fill(j)
    return tmp_path


# ---- round trip ---------------------------------------------------------------------------


def test_append_replay_round_trip(tmp_path: Path) -> None:
    with Journal.open(tmp_path, table_id=TABLE, game=GAME) as j:
        assert j.replay_point() == (None, [])
        fill(j, rounds=2)
        for i in (21, 22, 23):
            j.append(Event("chung.on", {"box": i % 8}), now(i), round=3)
        snap, events = j.replay_point()
        assert snap == {"round": 2, "after": 20}
        assert [e.seq for e in events] == [21, 22, 23]
        assert events[0].event == Event("chung.on", {"box": 5})
        assert events[0].now == now(21)
        assert events[0].round == 3

    with Journal.open(tmp_path, table_id=TABLE, game=GAME) as j:
        assert j.last_seq == 23
        assert j.last_round_number == 2
        assert j.last_event_round == 3
        assert [e.seq for e in j.replay_point()[1]] == [21, 22, 23]
        assert [e.seq for e in j.tail(2)] == [22, 23]
        assert [e.seq for e in j.iter_events()] == list(range(1, 24))


def test_verify_ok_and_counts(jdir: Path) -> None:
    rep = verify_dir(jdir)
    assert rep.as_json() == {"ok": True, "records": 30, "rounds_completed": 2,
                             "rounds_voided": 1, "errors": []}
    with Journal.open(jdir, table_id=TABLE, game=GAME) as j:
        assert j.verify().as_json() == rep.as_json()
        s = j.summary()
        assert (s["records"], s["rounds_completed"], s["rounds_voided"], s["last_round"]) == (
            30, 2, 1, 3)
        assert s["outbox_pending"] == 7
        assert s["first_utc"] == now(1).utc and s["last_utc"] == now(30).utc
        assert s["file_bytes"] > 0


def test_hash_is_the_documented_formula(jdir: Path) -> None:
    with Journal.open(jdir, table_id=TABLE, game=GAME) as j:
        first, second = list(j.iter_events(1, 2))
    data = jmod.canonical(first.data)
    body = jmod.canonical([1, first.utc, first.mono_ms, first.kind, first.round, first.data,
                           None])
    import hashlib
    want = hashlib.sha256((genesis_hash(TABLE, GAME) + body).encode()).hexdigest()
    assert first.hash == want == record_hash(genesis_hash(TABLE, GAME), 1, first.utc,
                                             first.mono_ms, first.kind, first.round, data, None)
    assert genesis_hash(TABLE, GAME) == hashlib.sha256(b"tablectl:T07:paigow").hexdigest()
    assert second.hash != first.hash


def test_rounds_and_round_events(tmp_path: Path) -> None:
    with Journal.open(tmp_path, table_id=TABLE, game=GAME) as j:
        j.append(Event("table.open"), now(0), round=0)
        fill(j, rounds=3, per_round=5)
        j.append(Event("tick"), now(99), round=4)
        assert [e.seq for e in j.round_events(0)] == [1]
        assert [e.seq for e in j.round_events(2)] == [7, 8, 9, 10, 11]
        assert [e.seq for e in j.round_events(4)] == [17]
        assert j.round_events(5) == []
        rec = j.round_record(2)
        assert rec is not None
        assert (rec.number, rec.status, rec.seq, rec.summary) == (2, "voided", 11, {"r": 2})
        assert j.round_record(4) is None
        ev = j.round_events(2)[-1]
        assert ev.rounds == (rec,)
        assert ev.as_json()["rounds"][0]["status"] == "voided"


def test_outbox_pending_and_cumulative_ack(jdir: Path) -> None:
    with Journal.open(jdir, table_id=TABLE, game=GAME) as j:
        msgs = j.pending_outbox()
        assert [m.id for m in msgs] == [1, 2, 3, 4, 5, 6, 7]
        assert [m.seq for m in msgs] == [4, 8, 12, 16, 20, 24, 28]
        assert msgs[0].payload == {"cents": 4} and msgs[0].type == "increment"
        assert [m.id for m in j.pending_outbox(limit=2)] == [1, 2]
        assert j.ack_outbox(3, utc="2026-11-25T22:00:00.000Z") == 3
        assert j.ack_outbox(2) == 0  # old ack: nothing
        assert j.ack_outbox(3) == 0  # repeated ack: nothing
        with pytest.raises(ValueError, match="last message is 7"):
            j.ack_outbox(8)
        # An ack runs unsynced; the connection is back to FULL afterwards.
        assert j._conn.execute("PRAGMA synchronous").fetchone()[0] == 2
        assert [m.id for m in j.pending_outbox()] == [4, 5, 6, 7]
        j.append(Event("x"), now(31), round=4,
                 effects=[Effect("outbox", {"type": "t", "payload": None})])
    with Journal.open(jdir, table_id=TABLE, game=GAME) as j:
        assert [m.id for m in j.pending_outbox()] == [4, 5, 6, 7, 8]
        assert j.ack_outbox(8) == 5
        assert j.pending_outbox() == []
    with Journal.open(jdir, table_id=TABLE, game=GAME) as j:
        # All acknowledged and deleted: numbering still continues.
        j.append(Event("x"), now(32), round=4,
                 effects=[Effect("outbox", {"type": "t", "payload": 1})])
        assert [m.id for m in j.pending_outbox()] == [9]
    assert verify_dir(jdir).ok


def test_open_without_verify_continues_the_same_chain(jdir: Path) -> None:
    with Journal.open(jdir, table_id=TABLE, game=GAME) as j:
        j.ack_outbox(2)
    with Journal.open(jdir, table_id=TABLE, game=GAME, verify=False) as j:
        assert (j.last_seq, j.last_round_number, j._next_outbox_id, j._acked_upto) == (
            30, 3, 8, 2)
        fill(j, rounds=1)
    assert verify_dir(jdir).ok


def test_snapshots_kept_deflated_and_replay_from_the_latest(tmp_path: Path) -> None:
    with Journal.open(tmp_path, table_id=TABLE, game=GAME) as j:
        fill(j, rounds=4, per_round=3)
        rows = j._conn.execute("SELECT seq, typeof(state) FROM snapshots ORDER BY seq").fetchall()
        assert rows == [(3, "blob"), (6, "blob"), (9, "blob"), (12, "blob")]
        assert j.replay_point() == ({"round": 4, "after": 12}, [])
        j.append_batch([Entry(Event("a"), now(13), 5), Entry(Event("b"), now(14), 5,
                                                               snapshot={"at": 14}),
                        Entry(Event("c"), now(15), 5)])
        snap, events = j.replay_point()
        assert snap == {"at": 14} and [e.seq for e in events] == [15]
    assert verify_dir(tmp_path).ok


# ---- input checks (nothing written) -------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"round": 0}, "goes back"),
        ({"round": 2, "effects": [Effect("round", {"number": 5, "status": "completed"})]},
         "expected 2"),
        ({"round": 2, "effects": [Effect("round", {"number": 2, "status": "won"})]}, "status"),
        ({"round": 2, "effects": [Effect("outbox", {"payload": 1})]}, "type"),
        ({"round": 2, "event": Event("x", {"a": {1: 2}})}, "non-string key"),
        ({"round": 2, "event": Event("x", {"a": float("nan")})}, "not JSON"),
        ({"round": 2, "event": Event("x", {"a": object()})}, "not JSON"),
        ({"round": 2, "event": Event("x", {"a": "\ud800"})}, "not JSON"),
        ({"round": 2, "event": Event("", {})}, "kind"),
        ({"round": 2, "snapshot": {"s": {1, 2}}}, "not JSON"),
    ],
)
def test_bad_input_is_refused_and_nothing_written(tmp_path: Path, kwargs: dict[str, Any],
                                                  match: str) -> None:
    with Journal.open(tmp_path, table_id=TABLE, game=GAME) as j:
        fill(j, rounds=1, per_round=2)
        kwargs.setdefault("event", Event("x", {}))
        event = kwargs.pop("event")
        with pytest.raises(EntryRefused, match=match):
            j.append(event, now(5), **kwargs)
        assert j.last_seq == 2
        assert j.append(Event("ok"), now(6), round=2) == 3
    assert verify_dir(tmp_path).records == 3


def test_failed_write_stops_further_writes(tmp_path: Path) -> None:
    j = Journal.open(tmp_path, table_id=TABLE, game=GAME)
    j.append(Event("a"), now(1), round=1)
    j._conn.close()  # simulate the file going away under us
    with pytest.raises(JournalError, match="seq 2"):
        j.append(Event("b"), now(2), round=1)
    with pytest.raises(JournalError, match="refuses writes"):
        j.append(Event("b"), now(2), round=1)
    j._guard.release()  # the lock, without closing the dead connection
    with Journal.open(tmp_path, table_id=TABLE, game=GAME) as j2:
        assert j2.last_seq == 1


# ---- opening ------------------------------------------------------------------------------


def test_pragmas_and_file_mode(tmp_path: Path) -> None:
    with Journal.open(tmp_path, table_id=TABLE, game=GAME) as j:
        c = j._conn
        assert c.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
        assert c.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert c.execute("PRAGMA foreign_keys").fetchone()[0] == 1
        assert c.execute("PRAGMA page_size").fetchone()[0] == jmod.PAGE_SIZE
    assert stat.S_IMODE((tmp_path / JOURNAL_FILE).stat().st_mode) == 0o640
    assert not (tmp_path / (JOURNAL_FILE + ".new")).exists()


def test_journal_of_another_table_or_game_refused(jdir: Path) -> None:
    before = (jdir / JOURNAL_FILE).read_bytes()
    with pytest.raises(JournalError, match=r"belongs to table 'T07'.*not table 'T08'"):
        Journal.open(jdir, table_id="T08", game=GAME)
    with pytest.raises(JournalError, match="game 'paigow', not table 'T07' game 'uth'"):
        Journal.open(jdir, table_id=TABLE, game="uth")
    assert (jdir / JOURNAL_FILE).read_bytes() == before


def test_second_writer_refused(jdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jstore, "LOCK_WAIT_S", 0.1)
    with Journal.open(jdir, table_id=TABLE, game=GAME) as j:
        with pytest.raises(JournalError, match="locked by another process"):
            Journal.open(jdir, table_id=TABLE, game=GAME)
        # A reader may verify while the daemon runs.
        assert verify_dir(jdir).ok
        j.append(Event("a"), now(40), round=4)
    assert verify_dir(jdir).records == 31


def test_missing_journal_with_create_false(tmp_path: Path) -> None:
    with pytest.raises(JournalError, match="does not exist"):
        Journal.open(tmp_path / "nope", table_id=TABLE, game=GAME, create=False)
    with pytest.raises(JournalError, match="does not exist"):
        Journal.open(tmp_path, table_id=TABLE, game=GAME, create=False)
    assert not (tmp_path / JOURNAL_FILE).exists()


@pytest.mark.parametrize("content", [b"", b"garbage" * 100])
def test_damaged_file_is_never_replaced(tmp_path: Path, content: bytes) -> None:
    (tmp_path / JOURNAL_FILE).write_bytes(content)
    with pytest.raises(JournalError, match=str(tmp_path / JOURNAL_FILE)):
        Journal.open(tmp_path, table_id=TABLE, game=GAME)
    assert (tmp_path / JOURNAL_FILE).read_bytes() == content
    assert not verify_dir(tmp_path).ok


def test_wal_without_journal_refused(jdir: Path) -> None:
    (jdir / JOURNAL_FILE).rename(jdir / "moved")
    (jdir / (JOURNAL_FILE + "-wal")).write_bytes(b"x" * 100)
    with pytest.raises(JournalError, match="write-ahead log"):
        Journal.open(jdir, table_id=TABLE, game=GAME)
    assert not (jdir / JOURNAL_FILE).exists()


def test_verify_dir_missing_creates_nothing(tmp_path: Path) -> None:
    rep = verify_dir(tmp_path / "absent")
    assert rep.as_json()["ok"] is False and "does not exist" in rep.errors[0]
    assert not (tmp_path / "absent").exists()
    rep = verify_dir(tmp_path)
    assert rep.as_json() == {"ok": False, "records": 0, "rounds_completed": 0,
                             "rounds_voided": 0, "errors": [rep.errors[0]]}
    assert "no journal" in rep.errors[0]
    assert list(tmp_path.iterdir()) == []


def test_verify_dir_leaves_a_closed_journal_untouched(jdir: Path) -> None:
    before = {p.name: p.read_bytes() for p in jdir.iterdir()}
    assert verify_dir(jdir).ok
    assert {p.name: p.read_bytes() for p in jdir.iterdir()} == before


# ---- tampering (schema-1 rows: tests/journal/test_journal_v1.py) ---------------------------


def bodies(d: Path) -> dict[int, str]:
    """Each commit's records as text, by the commit's key (its last seq)."""
    with raw(d) as c:
        codec = jmod.Codec(c.execute("SELECT value FROM meta WHERE key='deflate_dict'"
                                     ).fetchone()[0])
        return {k: codec.unpack(b) for k, b in c.execute("SELECT seq, body FROM commits")}


def rewrite(d: Path, key: int, old: str, new: str) -> None:
    """Change a commit's records as someone who can inflate and deflate would."""
    text = bodies(d)[key]
    assert old in text
    with raw(d) as c:
        codec = jmod.Codec(c.execute("SELECT value FROM meta WHERE key='deflate_dict'"
                                     ).fetchone()[0])
        c.execute("UPDATE commits SET body=? WHERE seq=?",
                  (codec.pack(text.replace(old, new)), key))


@pytest.fixture
def batched(tmp_path: Path) -> Path:
    """Commits of several records: seq 1..4, 5..9, 10..12 (round 1 recorded at seq 9)."""
    with Journal.open(tmp_path, table_id=TABLE, game=GAME) as j:
        for lo, hi in ((1, 4), (5, 9), (10, 12)):
            j.append_batch([Entry(Event("card", {"i": i}), now(i), 1 if i < 10 else 2,
                                  (Effect("round", {"number": 1, "status": "completed",
                                                    "summary": {}}),) if i == 9 else ())
                            for i in range(lo, hi + 1)])
    return tmp_path


def test_flipped_byte_in_event_data(jdir: Path) -> None:
    rewrite(jdir, 13, '"i":13', '"i":14')
    errs = errors_of(jdir)
    # Schema 4 stores no chain hash: the recomputed one goes wrong at seq 13 and stays wrong,
    # so the commits after it cannot be checked against their MACs (until a checkpoint).
    assert errs[0] == "seq 13: hash mismatch (record altered, reordered or chain broken)"
    # (the checkpoint at seq 20, which checks out, puts it back in step)
    assert len(errs) == 2 and errs[1].startswith("seq 14..19: not verified"), errs
    with pytest.raises(JournalError, match=r"journal .*journal\.sqlite3 is corrupt.*seq 13"):
        Journal.open(jdir, table_id=TABLE, game=GAME)


def test_altered_record_in_a_batch_names_the_commit(batched: Path) -> None:
    rewrite(batched, 9, '"i":7', '"i":70')
    errs = errors_of(batched)
    assert errs[0] == "seq 5..9: hash mismatch (record altered, reordered or chain broken)"
    assert errs[1].startswith("seq 10..12: not verified"), errs
    # ... and the chain recomputed at the mark's seq is not the one it names.
    assert errs[2:] == ["journal: it does not hold the commit its high-water mark names (seq 12, "
                        "journal ends at seq 12): replaced or rewritten"]


def test_flipped_byte_in_the_file(jdir: Path) -> None:
    with raw(jdir) as c:
        body = c.execute("SELECT body FROM commits WHERE seq=21").fetchone()[0]
    path = jdir / JOURNAL_FILE
    blob = bytearray(path.read_bytes())
    at = blob.index(body)
    blob[at + len(body) // 2] ^= 0x01
    path.write_bytes(bytes(blob))
    errs = errors_of(jdir)
    assert any(e.startswith(("seq 21: hash mismatch", "seq 21..21: commit unreadable"))
               for e in errs), errs


def test_deleted_commit(batched: Path) -> None:
    with raw(batched) as c:
        c.execute("DELETE FROM commits WHERE seq=9")
    errs = errors_of(batched)
    assert errs[0] == "seq 5..9 missing (records deleted or reordered; next is seq 10)"
    assert "seq 10..12: hash mismatch (record altered, reordered or chain broken) or commit " \
        "MAC mismatch (the last commit: no commit after it tells which)" in errs, errs


def test_reordered_commits(jdir: Path) -> None:
    with raw(jdir) as c:
        five, six = (c.execute("SELECT body FROM commits WHERE seq=?", (k,)).fetchone()[0]
                     for k in (5, 6))
        c.execute("UPDATE commits SET body=? WHERE seq=5", (six,))
        c.execute("UPDATE commits SET body=? WHERE seq=6", (five,))
    errs = errors_of(jdir)
    assert any(e.startswith("seq 5: hash mismatch") for e in errs), errs


def test_records_moved_between_commits(batched: Path) -> None:
    with raw(batched) as c:
        c.execute("UPDATE commits SET seq=8 WHERE seq=9")  # now 5..8 holding 5 records
    errs = errors_of(batched)
    assert errs[0] == "seq 4..8 out of order (expected seq 5 next)"


def test_altered_outbox_payload(jdir: Path) -> None:
    rewrite(jdir, 12, '"cents":12', '"cents":99')
    errs = errors_of(jdir)
    assert errs[0] == "seq 12: hash mismatch (record altered, reordered or chain broken)"
    assert len(errs) == 2 and errs[1].startswith("seq 13..19: not verified"), errs


def test_stray_outbox_and_rounds_rows(jdir: Path) -> None:
    with raw(jdir) as c:
        c.execute("INSERT INTO outbox(id, seq) VALUES (3, 12)")
        c.execute("INSERT INTO rounds(number, status, seq) VALUES (2, 'voided', 20)")
    errs = errors_of(jdir)
    assert errs == ["outbox row id 3 (seq 12) matches no message",
                    "rounds row 2 (seq 20) matches no round record"]


def test_altered_index_columns(batched: Path) -> None:
    with raw(batched) as c:
        c.execute("UPDATE commits SET rec=0 WHERE seq=9")
        c.execute("UPDATE commits SET round=9 WHERE seq=12")
    assert errors_of(batched) == [
        "seq 9: commit columns round/rec/out 1/0/0 do not match its records (1/1/0)",
        "seq 12: commit columns round/rec/out 9/1/0 do not match its records (2/1/0)"]


def test_unreadable_commit(batched: Path) -> None:
    with raw(batched) as c:
        c.execute("UPDATE commits SET body=x'00ff' WHERE seq=9")
    errs = errors_of(batched)
    assert errs[0].startswith("seq 5..9: commit unreadable"), errs
    # Schema 4 stores no chain hash to go on from: what follows is said to be unverified.
    assert errs[1:] == ["seq 10..12: not verified (the chain cannot be recomputed past an "
                        "unreadable commit)",
                        "journal: it does not hold the commit its high-water mark names (seq 12, "
                        "journal ends at seq 12): replaced or rewritten"]


def test_altered_dictionary(jdir: Path) -> None:
    with raw(jdir) as c:
        c.execute("UPDATE meta SET value = value || 'x' WHERE key='deflate_dict'")
    errs = errors_of(jdir)
    assert any("commit unreadable" in e or "hash mismatch" in e for e in errs), errs


def test_altered_snapshot(jdir: Path) -> None:
    with raw(jdir) as c:
        c.execute("""UPDATE snapshots SET state = '{"after":20,"round":9}' WHERE seq=20""")
    assert errors_of(jdir) == ["seq 20: snapshot hash mismatch (snapshot altered)"]


def test_altered_round_record(jdir: Path) -> None:
    rewrite(jdir, 20, '"voided"', '"completed"')
    errs = errors_of(jdir)
    assert "seq 20: hash mismatch (record altered, reordered or chain broken)" in errs


def test_altered_meta_table_id(jdir: Path) -> None:
    with raw(jdir) as c:
        c.execute("UPDATE meta SET value='T99' WHERE key='table_id'")
    assert errors_of(jdir)[0].startswith("seq 1: hash mismatch")
    with pytest.raises(JournalError, match="seq 1"):
        Journal.open(jdir, table_id="T99", game=GAME)


def test_records_can_be_checked_with_zlib_and_sha256_alone(jdir: Path) -> None:
    """docs/journal.md: the chain needs nothing of this code (the snippet there, run as is)."""
    import hashlib
    import os
    import zlib

    os.chdir(jdir)
    c = raw(jdir)
    # -- docs/journal.md, "Reading one needs nothing of this code" --
    meta = dict(c.execute("SELECT key, value FROM meta"))
    h = hashlib.sha256(f"tablectl:{meta['table_id']}:{meta['game']}".encode()).hexdigest()
    mark = Path("journal.mark").read_text().split()  # tablectl-journal-mark 1 SEQ OUT HASH MAC
    known = {s: json.loads(b)["hash"] for s, b in c.execute("SELECT seq, body FROM checkpoints")}
    known[int(mark[2])] = mark[4]          # checkpoints and the mark carry the chain hash
    seq = 0                                     # a journal created as schema 2 or later
    for key, body, stored in c.execute("SELECT seq, body, hash FROM commits ORDER BY seq"):
        d = zlib.decompressobj(-15, zdict=meta["deflate_dict"].encode())
        for record in json.loads(d.decompress(body) + d.flush()):
            seq += 1
            h = hashlib.sha256((h + json.dumps([seq, *record], sort_keys=True,
                                separators=(",", ":"), ensure_ascii=False)).encode()).hexdigest()
            assert known.get(seq, h) == h
        assert seq == key and stored in (b"", bytes.fromhex(h))  # schema 4 stores none
    # -- end of the snippet --
    assert seq == j_last(jdir) and len(known) >= 2
    c.close()
    # It fails on an altered record (a checkpoint after it no longer matches).
    rewrite(jdir, 13, '"i":13', '"i":14')
    c = raw(jdir)
    h, seq, caught = genesis_hash(TABLE, GAME), 0, False
    for (body,) in c.execute("SELECT body FROM commits ORDER BY seq"):
        d = zlib.decompressobj(-15, zdict=meta["deflate_dict"].encode())
        for record in json.loads(d.decompress(body) + d.flush()):
            seq += 1
            h = hashlib.sha256((h + json.dumps([seq, *record], sort_keys=True,
                                separators=(",", ":"), ensure_ascii=False)).encode()).hexdigest()
            caught = caught or known.get(seq, h) != h
    c.close()
    assert caught


# ---- property: exact round trip -----------------------------------------------------------

json_scalars = (st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.text(max_size=8)
                | st.floats(allow_nan=False, allow_infinity=False))
json_values = st.recursive(json_scalars, lambda kids: st.lists(kids, max_size=3)
                           | st.dictionaries(st.text(max_size=5), kids, max_size=3), max_leaves=8)
steps = st.lists(
    st.tuples(st.sampled_from(["chung.on", "card.dispensed", "dealer.confirm", "tick", "é✓"]),
              st.dictionaries(st.text(max_size=5), json_values, max_size=3),
              st.booleans(),  # new round
              st.booleans(),  # snapshot
              st.lists(json_values, max_size=2)),  # outbox payloads
    min_size=1, max_size=12)


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=steps)
def test_random_sequences_round_trip(tmp_path_factory: pytest.TempPathFactory,
                                     steps: list[Any]) -> None:
    d = tmp_path_factory.mktemp("prop")
    expected: list[tuple[Any, ...]] = []
    snap_at, snap = 0, None
    with Journal.open(d, table_id=TABLE, game="uth") as j:
        rnd = 1
        for i, (kind, data, new_round, take_snap, payloads) in enumerate(steps, start=1):
            effects = [Effect("outbox", {"type": "m", "payload": p}) for p in payloads]
            if new_round:
                effects.append(Effect("round", {"number": j.last_round_number + 1,
                                                "status": "completed", "summary": data}))
            state = {"i": i, "data": data} if take_snap else None
            assert j.append(Event(kind, data), Now(f"u{i}", -i), round=rnd, effects=effects,
                            snapshot=state) == i
            expected.append((i, kind, data, rnd, payloads))
            if state is not None:
                snap_at, snap = i, state
            rnd += new_round
    with Journal.open(d, table_id=TABLE, game="uth") as j:
        got_snap, events = j.replay_point()
        assert got_snap == snap
        assert [(e.seq, e.kind, e.data, e.round, [m.payload for m in e.outbox])
                for e in events] == expected[snap_at:]
        assert [e.utc for e in j.iter_events()] == [f"u{i}" for i in range(1, len(steps) + 1)]
        assert [m.payload for m in j.pending_outbox(1000)] == [
            p for *_, ps in expected for p in ps]
    rep = verify_dir(d)
    assert rep.ok, rep.errors
    assert rep.rounds_completed == sum(s[2] for s in steps)


def test_append_batch_is_one_transaction_in_order(tmp_path: Path) -> None:
    from controller.journal import Entry

    with Journal.open(tmp_path, table_id="T1", game="paigow") as j:
        now = Now("2026-11-25T00:00:00.000Z", 1)
        seqs = j.append_batch([Entry(Event("a", {"n": i}), now, 0) for i in range(5)])
        assert seqs == [1, 2, 3, 4, 5]
        # A bad entry anywhere refuses the whole batch: nothing of it is written.
        bad = [Entry(Event("b", {"n": 1}), now, 0), Entry(Event("", {}), now, 0)]
        with pytest.raises(ValueError, match="non-empty string"):
            j.append_batch(bad)
        assert j.last_seq == 5
        assert [e.event.data["n"] for e in j.iter_events()] == [0, 1, 2, 3, 4]
    assert verify_dir(tmp_path).ok


def test_an_ack_soon_after_the_last_written_rides_the_next_commit(tmp_path: Path) -> None:
    """outbox.ACK_WRITE_EVERY_S: head office's acks came ~1.75 a round, each its own commit;
    one within 10 s of the last written is held for the next commit (or the close). Held, it
    already counts (nothing resent while the table runs); written, it verifies as before."""
    def written() -> list[int]:
        db = raw(tmp_path)
        try:
            return [r[0] for r in db.execute("SELECT upto_id FROM outbox_acked ORDER BY 1")]
        finally:
            db.close()

    with Journal.open(tmp_path, table_id=TABLE, game=GAME) as j:
        fill(j, rounds=2)  # an outbox message every 4th record: ids 1..5
        assert j.ack_outbox(1) == 1 and written() == [1]  # the first: a commit of its own
        assert j.ack_outbox(2) == 1 and written() == [1]  # 10 s have not passed: held
        assert j.outbox.acked_upto == 2 and [m.id for m in j.pending_outbox()][:1] == [3]
        fill(j, rounds=1)
        assert written() == [1, 2]  # rode the round's commit
        assert j.ack_outbox(3) == 1 and written() == [1, 2]
    assert written() == [1, 2, 3]  # the close wrote it
    assert verify_dir(tmp_path).ok
    with Journal.open(tmp_path, table_id=TABLE, game=GAME) as j:
        assert j.outbox.acked_upto == 3
        fill(j, rounds=2)
        assert j.ack_outbox(4) == 1 and written() == [1, 2, 3, 4]
        assert j.ack_outbox(5) == 1 and written() == [1, 2, 3, 4]  # held
        # Written on demand (the close calls the same):
        j.write_held_ack()
        assert written() == [1, 2, 3, 4, 5]
