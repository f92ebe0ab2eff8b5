"""Segments, archives and retention (issue 16): a pruned table still verifies and resumes,
nothing head office has not acknowledged is pruned, and an archive is checked with sqlite3, zlib
and sha256 alone (the recipe in docs/journal.md)."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import zlib
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from controller.journal import Entry, Journal, JournalError, checkpoint, segments, verify_dir
from controller.rounds.base import Event
from tests.support.journal import GAME, TABLE, fill, now, raw


@pytest.fixture(autouse=True)
def small(monkeypatch: pytest.MonkeyPatch) -> None:
    """A segment every 2 rounds, checkpoints trusted from the first record."""
    monkeypatch.setattr(segments, "SEGMENT_ROUNDS", 2)
    monkeypatch.setattr(checkpoint, "WALK_WHOLE_BELOW", 0)


@pytest.fixture
def jdir(tmp_path: Path) -> Path:
    """8 rounds of 10 events (a snapshot at each round's end): segments 1..4 closed."""
    with Journal.open(tmp_path, table_id=TABLE, game=GAME) as j:
        fill(j, rounds=8)
    return tmp_path


def acked(j: Journal, *numbers: int) -> None:
    j.archive()
    for st in j.retention.states():
        if st.segment.number in numbers:
            assert j.ack_segment(st.segment.number, st.segment.head, str(st.digest))


def position(j: Journal) -> tuple[Any, ...]:
    return (j.last_seq, j.last_hash, j.last_round_number, j.last_event_round,
            j._next_outbox_id, j._acked_upto, j.replay_point()[0])


def test_segments_close_every_n_rounds_chained(jdir: Path) -> None:
    with Journal.open(jdir, table_id=TABLE, game=GAME) as j:
        segs = [st.segment for st in j.retention.states()]
        hashes = {e.seq: e.hash for e in j.iter_events()}
    assert [(s.number, s.first, s.last, s.first_round, s.last_round) for s in segs] == [
        (1, 1, 20, 1, 2), (2, 21, 40, 3, 4), (3, 41, 60, 5, 6), (4, 61, 80, 7, 8)]
    assert all(s.head == hashes[s.last] for s in segs)
    assert all(b.prev == a.head for a, b in pairwise(segs))


def run_recipe(archive: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """The recipe of docs/journal.md, "Checking an archived segment", exactly as written there,
    run beside `archive` (its file name put in place of the example's); its variables after."""
    docs = (Path(__file__).resolve().parents[2] / "docs" / "journal.md").read_text()
    code = docs.split("**Checking an archived segment**", 1)[1].split("```python\n", 1)[1]
    code = code.split("```", 1)[0].replace("segment-000002", archive.name.split(".")[0])
    monkeypatch.chdir(archive.parent)
    scope: dict[str, Any] = {}
    exec(compile(code, "docs/journal.md", "exec"), scope)
    return scope


def test_an_archive_verifies_with_sqlite3_zlib_and_sha256_alone(
        jdir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    with Journal.open(jdir, table_id=TABLE, game=GAME) as j:
        j.archive()
        st = j.retention.states()[1]
    path = jdir / "archive" / str(st.archive)
    got = run_recipe(path, monkeypatch)
    assert capsys.readouterr().out.strip() == st.digest  # it prints what head office holds
    assert (got["seq"], got["h"]) == (40, st.segment.head)
    assert len(got["known"]) >= 1
    # An altered record: the recipe's own checks fail.
    db = zlib.decompress(path.read_bytes())
    with raw(jdir) as c:
        body = c.execute("SELECT body FROM commits WHERE seq = 30").fetchone()[0]
    k = db.index(body)
    path.write_bytes(zlib.compress(db[:k + 5] + bytes([db[k + 5] ^ 0x10]) + db[k + 6:]))
    with pytest.raises((AssertionError, zlib.error, ValueError)):
        run_recipe(path, monkeypatch)


def test_nothing_unacknowledged_is_pruned(jdir: Path) -> None:
    with Journal.open(jdir, table_id=TABLE, game=GAME) as j:
        assert [p.why for p in j.prune(0, dry_run=True)] == ["not archived"] * 4
        j.archive()
        assert [p.why for p in j.prune(0)] == ["not acknowledged by head office"] * 4
        st = j.retention.states()[0]
        assert not j.ack_segment(1, st.segment.head, "0" * 64)  # not what was archived
        assert not j.ack_segment(1, "0" * 64, str(st.digest))
        assert not j.ack_segment(9, st.segment.head, str(st.digest))
    with raw(jdir) as c:  # an acknowledgement written without the key
        c.execute("UPDATE segments SET ack_utc = 'x', ack_mac = zeroblob(16)")
    with Journal.open(jdir, table_id=TABLE, game=GAME) as j:
        assert [p.prune for p in j.prune(0)] == [False] * 4
        acked(j, 2, 3)  # not 1: nothing after it goes either
        assert [p.why for p in j.prune(0)] == ["not acknowledged by head office",
                                               "an older segment is kept",
                                               "an older segment is kept",
                                               "not acknowledged by head office"]
        assert j.reader.pruned == (0, "")
    with raw(jdir) as c:
        assert c.execute("SELECT min(seq) FROM commits").fetchone()[0] == 1


def test_retention_keeps_the_open_segment_and_the_rounds_it_must(jdir: Path) -> None:
    with Journal.open(jdir, table_id=TABLE, game=GAME) as j:
        acked(j, 1, 2, 3, 4)
        plans = j.prune(4, dry_run=True)  # keep the last 4 rounds (the table is at round 8)
        assert [(p.number, p.prune) for p in plans] == [(1, True), (2, True), (3, False),
                                                          (4, False)]
        assert plans[2].why == "within the 4 rounds kept"
        with raw(jdir) as c:
            assert c.execute("SELECT count(*) FROM commits").fetchone()[0] == 80  # dry


def test_a_pruned_table_verifies_and_resumes(jdir: Path) -> None:
    with Journal.open(jdir, table_id=TABLE, game=GAME) as j:
        before = position(j)
        acked(j, 1, 2, 3)
        assert sum(p.prune for p in j.prune(3)) == 2  # segments 1, 2: seq 1..40
        assert j.reader.pruned[0] == 40
        assert position(j) == before
        assert [e.seq for e in j.iter_events()][:2] == [41, 42]
        assert [e.seq for e in j.tail(3)] == [78, 79, 80]
    with raw(jdir) as c:
        assert c.execute("SELECT min(seq), count(*) FROM commits").fetchone() == (41, 40)
    rep = verify_dir(jdir)
    assert rep.ok, rep.errors
    assert (rep.pruned_through, rep.rounds_completed, rep.rounds_voided) == (40, 7, 1)
    for fast in (False, True):
        with Journal.open(jdir, table_id=TABLE, game=GAME, fast=fast) as j:
            assert position(j) == before
    with Journal.open(jdir, table_id=TABLE, game=GAME) as j:
        fill(j, rounds=2)  # resumes: rounds 9, 10 close segment 5
        assert j.last_round_number == 10
        assert j.retention.states()[-1].segment.number == 5
    assert verify_dir(jdir).ok


def test_pruned_records_cannot_be_faked_away(jdir: Path) -> None:
    with Journal.open(jdir, table_id=TABLE, game=GAME) as j:
        acked(j, 1)
    with raw(jdir) as c:  # segment 2 claimed pruned (not acknowledged), its rows deleted
        c.execute("UPDATE segments SET pruned_utc = 'x' WHERE number IN (1, 2)")
        c.execute("DELETE FROM commits WHERE seq <= 40")
    rep = verify_dir(jdir)
    assert rep.errors[0] == ("segment 2 is marked pruned but its MAC or head office's "
                             "acknowledgement does not check out")
    with pytest.raises(JournalError, match="segment 2 is marked pruned"):
        Journal.open(jdir, table_id=TABLE, game=GAME)


def test_a_pruned_round_says_where_it_went(jdir: Path) -> None:
    with Journal.open(jdir, table_id=TABLE, game=GAME) as j:
        acked(j, 1)
        j.prune(0)
        with pytest.raises(ValueError, match=r"round 2 was pruned from the table's journal "
                           r"\(seq 1\.\.20, segment 1\); its records are in the archive "
                           r".*segment-000001\.sqlite3\.z \(sha256 [0-9a-f]{64}\)"):
            j.round_events(2)
        assert [e.round for e in j.round_events(3)] == [3] * 10
        assert j.round_record(3) is not None
        j.append(Event("x", {}), now(81), round=9)


def test_the_technician_commands(jdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from controller.cli.main import main as cli

    d = ["--state-dir", str(jdir)]
    assert cli(["journal", "segments", *d]) == 0
    out = capsys.readouterr().out
    assert "4 closed segments (MACs checked)" in out
    assert "segment 2: seq 21..40, rounds 3..4, closed" in out
    assert cli(["journal", "prune", "--keep-rounds", "2", "--dry-run", *d]) == 0
    assert "would prune 0 of 4 unpruned segments" in capsys.readouterr().out
    assert cli(["journal", "archive", *d, "--json"]) == 0
    archived = json.loads(capsys.readouterr().out)
    assert [a["segment"] for a in archived] == [1, 2, 3, 4]
    with Journal.open(jdir, table_id=TABLE, game=GAME) as j:  # head office holds 1 and 2
        for a in archived[:2]:
            st = j.retention.states()[a["segment"] - 1]
            assert j.ack_segment(a["segment"], st.segment.head, a["sha256"])
    assert cli(["journal", "prune", "--keep-rounds", "2", "--dry-run", *d]) == 0
    out = capsys.readouterr().out
    assert "would prune 2 of 4 unpruned segments" in out
    assert "segment 3 (seq 41..60, rounds 5..6): keep: not acknowledged by head office" in out
    # Without --keep-*, the table's own [journal] retention (what the daemon applies).
    example = (Path(__file__).resolve().parents[2] / "examples" / "paigow-nsw.toml").read_text()
    conf = jdir.parent / "table.toml"
    conf.write_text(example.replace("simulate = false", "simulate = true"))
    assert cli(["journal", "prune", "--dry-run", "--config", str(conf), *d]) == 0
    assert "would prune 0 of 4 unpruned segments" in capsys.readouterr().out  # none set
    conf.write_text(conf.read_text() + "\n[journal]\nkeep_rounds = 2\n")
    assert cli(["journal", "prune", "--dry-run", "--config", str(conf), *d]) == 0
    assert "would prune 2 of 4 unpruned segments" in capsys.readouterr().out
    assert cli(["journal", "prune", "--dry-run", "--config", str(jdir / "none.toml"), *d]) == 2
    assert "config cannot be read" in capsys.readouterr().err
    assert cli(["journal", "prune", "--keep-rounds", "2", *d]) == 0
    assert "pruned 2 of 4 unpruned segments" in capsys.readouterr().out
    assert cli(["journal", "segments", *d]) == 0
    assert "segment 1: seq 1..20, rounds 1..2, pruned 20" in capsys.readouterr().out
    assert verify_dir(jdir).ok


CHILD = r"""
import sys
from controller.journal import Journal, segments
from tests.support.journal import fill

segments.SEGMENT_ROUNDS = 2
cycle = 0
while True:
    with Journal.open(sys.argv[1], table_id="T07", game="paigow") as j:
        fill(j, rounds=2, per_round=5)
        j.archive()
        for st in j.retention.states():
            if st.digest and not st.ack_ok:
                j.ack_segment(st.segment.number, st.segment.head, st.digest)
        cycle += 1
        if cycle % 2:  # every other cycle the rows leave by a move first, else by the prune
            j.ack_outbox(j._next_outbox_id - 1)
            j.move()
        j.prune(3)
        print(j.last_seq, flush=True)
"""


def test_sigkill_during_close_archive_move_and_prune_leaves_a_journal_that_verifies(
        tmp_path: Path) -> None:
    import random
    import signal
    import subprocess
    import sys
    import time

    root = Path(__file__).resolve().parents[2]
    rng = random.Random(16)
    for _ in range(6):
        proc = subprocess.Popen([sys.executable, "-c", CHILD, str(tmp_path)], cwd=root,
                                stdout=subprocess.PIPE, text=True)
        assert proc.stdout is not None
        proc.stdout.readline()  # at least one cycle done
        time.sleep(rng.uniform(0, 0.5))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        rep = verify_dir(tmp_path)
        assert rep.ok, rep.errors
        with Journal.open(tmp_path, table_id=TABLE, game=GAME) as j:
            assert j.last_seq == rep.last_seq
    assert rep.pruned_through > 0


def test_keep_days_prunes_only_segments_closed_that_long_ago(jdir: Path) -> None:
    with Journal.open(jdir, table_id=TABLE, game=GAME) as j:
        acked(j, 1, 2, 3, 4)
        assert [p.why for p in j.prune(None, dry_run=True)] == ["no retention set"] * 4
        assert [p.why for p in j.prune(None, keep_days=1, dry_run=True)] == [
            "within the 1 days kept"] * 4  # all closed just now
        with raw(jdir) as c:  # segment 1 closed two days ago (its row re-MAC'd by the key)
            st = j.retention.states()[0]
            old = segments.Segment(**{**st.segment.__dict__,
                                      "closed_utc": "2026-01-01T00:00:00Z"})
            c.execute("UPDATE segments SET body = ?, mac = ? WHERE number = 1",
                      (old.text(), segments.seg_mac(j.key, TABLE, GAME, old)))
        plans = j.prune(None, keep_days=1)
        assert [p.prune for p in plans] == [True, False, False, False]
        # With both set a segment must pass both: 2 rounds kept stops nothing, 1 day does.
        assert [p.prune for p in j.prune(2, keep_days=1, dry_run=True)] == [False] * 3


def test_an_archive_is_deleted_only_after_pruned_and_acknowledged(jdir: Path) -> None:
    with Journal.open(jdir, table_id=TABLE, game=GAME) as j:
        acked(j, 1, 2)
        archives = {st.segment.number: j.archive_dir / str(st.archive)
                    for st in j.retention.states()}
        assert j.expire_archives(0) == []  # nothing pruned yet: every archive stays
        assert sum(p.prune for p in j.prune(0)) == 2  # 1, 2 (3, 4: not acknowledged)
        assert j.expire_archives(1) == []  # pruned just now: kept a day
        assert j.expire_archives(0) == [1, 2]
        assert [n for n, p in archives.items() if p.exists()] == [3, 4]
        # Deleted by retention (a record MAC'd with the key): the record is whole.
        rep = verify_dir(jdir)
        assert rep.ok, rep.errors
        assert rep.archives == (f"2 whole, 0 missing or altered, 2 deleted by retention "
                                f"({j.archive_dir})")
        with pytest.raises(ValueError, match=r"round 2 was pruned .* was deleted by retention "
                                             r"at 20\d\d-\d\d-\d\dT[0-9:.]+Z "
                                             r"\(keep_archives_days\); head office holds its "
                                             r"digest \(sha256 [0-9a-f]{64}\) and head, not its "
                                             r"records"):
            j.round_events(2)
        with raw(jdir) as c:  # a forged "pruned" mark on segment 3 does not delete its archive
            c.execute("UPDATE segments SET pruned_utc = '2020-01-01T00:00:00Z' WHERE number = 3")
        assert j.expire_archives(0) == []
        assert archives[3].exists()


def test_an_unsynced_commit_holds_no_money_and_leaves_the_mark_behind(tmp_path: Path) -> None:
    from controller.journal.mark import MARK_FILE, read_mark
    from controller.rounds.base import Effect

    with Journal.open(tmp_path, table_id=TABLE, game=GAME) as j:
        fill(j, rounds=1)
        synced = j.last_seq
        money = Effect("outbox", {"type": "round_result", "payload": {"round": 2}})
        with pytest.raises(ValueError, match="always fsync'd"):
            j.append_batch([Entry(Event("dealer.wager", {}), now(90), 2, (money,))],
                           durable=False)
        assert j.last_seq == synced  # nothing written
        seq = j.append_batch([Entry(Event("dealer.wager", {"box": 1}), now(91), 2)],
                             durable=False)[0]
        assert read_mark(tmp_path / MARK_FILE, j.key, TABLE, GAME).seq == synced
        j.append_batch([Entry(Event("dealer.deal", {}), now(92), 2)])  # fsync'd: covers both
        assert read_mark(tmp_path / MARK_FILE, j.key, TABLE, GAME).seq == seq + 1
    with Journal.open(tmp_path, table_id=TABLE, game=GAME) as j:
        assert j.last_seq == seq + 1
    assert verify_dir(tmp_path).ok


def test_a_prune_does_not_write_the_pages_it_frees(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """SQLite as Debian (and so Raspberry Pi OS) builds it defaults to secure_delete=ON: every
    page a prune frees is overwritten with zeros and written, to the WAL and then the file, a
    segment's size of writes a segment on the SD card for rows already archived. The journal
    sets secure_delete=FAST: what a prune frees costs no write (only the pages it changes)."""
    monkeypatch.setattr(segments, "SEGMENT_ROUNDS", 20)
    with Journal.open(tmp_path, table_id=TABLE, game=GAME) as j:
        fill(j, rounds=45, per_round=20)
        acked(j, 1, 2)
        db = raw(tmp_path)
        try:
            page = db.execute("PRAGMA page_size").fetchone()[0]
            free_before = db.execute("PRAGMA freelist_count").fetchone()[0]
            assert db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0] == 0
            assert sum(p.prune for p in j.prune(0)) == 2  # 40 rounds, 800 records
            freed = db.execute("PRAGMA freelist_count").fetchone()[0] - free_before
            frames = ((tmp_path / "journal.sqlite3-wal").stat().st_size - 32) // (page + 24)
        finally:
            db.close()
    assert freed > 100  # the test means something: a prune that frees many pages
    # With ON every freed page is a frame (206 frames for 181 pages freed here); with FAST only
    # the pages the prune changes and keep (102).
    assert frames < 0.75 * freed, (frames, freed)


def _rewrite_archive(path: Path, sql: str) -> str:
    """Inflate an archive, change it with `sql`, deflate it back; its new sha256."""
    work = path.with_suffix(".work")
    work.write_bytes(zlib.decompress(path.read_bytes()))
    with sqlite3.connect(work) as c:
        c.execute(sql)
    c.close()
    data = zlib.compress(work.read_bytes(), 9)
    work.unlink()
    path.write_bytes(data)
    return hashlib.sha256(data).hexdigest()


def test_a_pruned_round_is_read_back_from_its_archive(jdir: Path) -> None:
    with Journal.open(jdir, table_id=TABLE, game=GAME) as j:
        before = {n: (j.round_events(n), j.round_record(n)) for n in (1, 2, 3)}
        acked(j, 1)
        j.prune(0)
        with pytest.raises(ValueError, match="round 2 was pruned"):
            j.round_events(2)
        for n in (1, 2):  # round 2 voided, round 1 completed: both in segment 1
            got = j.archived_round(n)
            assert (got.events, got.record) == before[n]
            assert [e.round for e in got.events] == [n] * 10
            assert (got.segment, got.path.name) == (1, "segment-000001.sqlite3.z")
        with pytest.raises(ValueError, match="round 3 was not pruned"):
            j.archived_round(3)


def test_an_archive_that_does_not_check_out_is_not_read(jdir: Path) -> None:
    with Journal.open(jdir, table_id=TABLE, game=GAME) as j:
        acked(j, 1)
        j.prune(0)
        path = j.archive_dir / "segment-000001.sqlite3.z"
        good = path.read_bytes()
        # Another file in its place: not the digest recorded (and acknowledged).
        path.write_bytes(good[:-1] + bytes([good[-1] ^ 1]))
        with pytest.raises(ValueError, match=r"round 1 was pruned .* cannot be read back: "
                                             r"archive .* is not the one recorded"):
            j.archived_round(1)
        # A record dropped, and the row's digest made to match without the key: the chain
        # no longer reaches the segment's MAC'd head.
        path.write_bytes(good)
        digest = _rewrite_archive(path, "DELETE FROM commits WHERE seq = (SELECT max(seq) "
                                        "FROM commits)")
        with raw(jdir) as c:
            c.execute("UPDATE segments SET digest = ? WHERE number = 1", (digest,))
        with pytest.raises(ValueError, match=r"cannot be read back: .* end at seq 19 with chain "
                                             r"hash [0-9a-f]{16}\.\.\., not at the segment's "
                                             r"seq 20 .* \(records altered"):
            j.archived_round(1)
        # A record altered, its commit re-deflated with the journal's dictionary.
        path.write_bytes(good)
        with raw(jdir) as c:
            zdict = c.execute("SELECT value FROM meta WHERE key = 'deflate_dict'").fetchone()[0]
        inflated = zlib.decompress(good)
        mem = sqlite3.connect(":memory:")
        mem.deserialize(inflated)
        key, body = mem.execute("SELECT seq, body FROM commits ORDER BY seq LIMIT 1").fetchone()
        mem.close()
        d = zlib.decompressobj(-15, zdict=zdict.encode())
        text = (d.decompress(body) + d.flush()).decode()
        assert '"box":0' in text  # seq 1: box 0 -> box 7
        c = zlib.compressobj(9, zlib.DEFLATED, -15, zdict=zdict.encode())
        forged = c.compress(text.replace('"box":0', '"box":7', 1).encode()) + c.flush()
        digest = _rewrite_archive(path, f"UPDATE commits SET body = x'{forged.hex()}' "
                                        f"WHERE seq = {key}")
        with raw(jdir) as c2:
            c2.execute("UPDATE segments SET digest = ? WHERE number = 1", (digest,))
        with pytest.raises(ValueError, match=r"\(records altered, added or dropped\)"):
            j.archived_round(1)
        # Gone, and not by retention: says so (not that retention deleted it).
        path.unlink()
        with pytest.raises(ValueError, match=r"round 1 was pruned .* is missing and was not "
                                             r"deleted by retention; head office holds its "
                                             r"digest"):
            j.archived_round(1)


def _moved_ready(j: Journal, *numbers: int) -> None:
    """Segments archived and held by head office, every outbox message acknowledged."""
    acked(j, *numbers)
    j.ack_outbox(j._next_outbox_id - 1)


def test_a_segment_head_office_holds_moves_out_of_the_file(jdir: Path) -> None:
    with Journal.open(jdir, table_id=TABLE, game=GAME) as j:
        before = {n: (j.round_events(n), j.round_record(n)) for n in range(1, 9)}
        acked(j, 1, 2)
        assert j.move() == []  # their outbox messages are not acknowledged yet
        j.ack_outbox(j._next_outbox_id - 1)
        with raw(jdir) as c:
            pages = c.execute("PRAGMA page_count").fetchone()[0]
        assert j.move() == [1, 2]
        assert j.move() == []  # 3, 4: head office does not hold them
        assert j.reader.pruned[0] == 40
        with raw(jdir) as c:
            # The commit at the boundary stays (the mark may name it), none before it.
            assert c.execute("SELECT min(seq) FROM commits").fetchone()[0] == 40
            assert c.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone() == ("5",)
            assert c.execute("PRAGMA freelist_count").fetchone() == (0,)  # vacuumed
            assert c.execute("PRAGMA page_count").fetchone()[0] < pages
        with pytest.raises(ValueError, match=r"round 3 was moved out of the journal file to "
                                             r"its archive once head office held it \(seq "
                                             r"21\.\.40, segment 2\)"):
            j.round_events(3)
        for n in range(1, 9):  # every round as before: 1-4 from the archives
            got = (j.archived_round(n).events, j.archived_round(n).record) if n <= 4 else (
                j.round_events(n), j.round_record(n))
            assert got == before[n], n
        seq = j.append(Event("x", {}), now(81), round=9)
        where = position(j)
    rep = verify_dir(jdir)
    assert rep.ok, rep.errors
    assert (rep.pruned_through, rep.last_seq) == (40, seq)
    for fast in (True, False):
        with Journal.open(jdir, table_id=TABLE, game=GAME, fast=fast) as j:
            assert position(j) == where and j.last_seq == seq
            assert [st.segment.number for st in j.retention.states() if st.moved_utc] == [1, 2]
            # Retention then prunes them as before: the archive stays until it expires.
            assert [p.number for p in j.prune(0) if p.prune] == [1, 2]
            break
    assert verify_dir(jdir).ok


def test_only_what_head_office_holds_moves_oldest_first(jdir: Path) -> None:
    with Journal.open(jdir, table_id=TABLE, game=GAME) as j:
        j.archive()
        j.ack_outbox(j._next_outbox_id - 1)
        assert j.move() == []  # nothing acknowledged
        acked(j, 2)
        assert j.move() == []  # 1 is not held: nothing after it moves either
        acked(j, 1)
        (j.archive_dir / "segment-000001.sqlite3.z").rename(jdir / "away")
        assert j.move() == []  # its archive is missing: it would be the only copy
        (jdir / "away").rename(j.archive_dir / "segment-000001.sqlite3.z")
        assert j.move() == [1, 2]


def test_a_moved_segments_archive_must_check_out(jdir: Path) -> None:
    with Journal.open(jdir, table_id=TABLE, game=GAME) as j:
        _moved_ready(j, 1)
        assert j.move() == [1]
        path = j.archive_dir / "segment-000001.sqlite3.z"
    good = path.read_bytes()
    path.write_bytes(good[:100] + bytes([good[100] ^ 1]) + good[101:])
    rep = verify_dir(jdir)
    assert not rep.ok
    assert rep.errors == ["segment 1 (rounds 1..2, out of the journal file): altered: "
                          f"archive {path} is not the one recorded for segment 1: "
                          f"sha256 {hashlib.sha256(path.read_bytes()).hexdigest()}, recorded "
                          f"{hashlib.sha256(good).hexdigest()}"]
    path.unlink()
    assert verify_dir(jdir).errors == [f"segment 1 (rounds 1..2, out of the journal file): "
                                       f"archive {path} is missing (not deleted by retention)"]
    path.write_bytes(good)
    assert verify_dir(jdir).ok
    with Journal.open(jdir, table_id=TABLE, game=GAME) as j:  # pruned, then expired: gone
        assert [p.number for p in j.prune(0) if p.prune] == [1]
        assert j.expire_archives(0) == [1]
    assert not path.exists()
    assert verify_dir(jdir).ok


def test_a_trial_boot_moves_nothing_and_a_downgrade_puts_moved_segments_back(
        jdir: Path) -> None:
    with Journal.open(jdir, table_id=TABLE, game=GAME, upgrade=False) as j:
        _moved_ready(j, 1, 2)
        assert j.move() == []  # a trial boot: the software before must still read the file
    with Journal.open(jdir, table_id=TABLE, game=GAME) as j:
        assert j.move() == [1, 2]
        assert [p.number for p in j.prune(5) if p.prune] == [1]  # 1 pruned, 2 only moved
        events = list(j.iter_events(41))
        assert j.downgrade_to_v3() > 0
        assert j.move() == []
    with raw(jdir) as c:
        assert c.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone() == ("3",)
        assert c.execute("SELECT min(seq) FROM commits").fetchone() == (21,)  # 2 is back
    rep = verify_dir(jdir)
    assert rep.ok, rep.errors
    assert rep.pruned_through == 20
    with Journal.open(jdir, table_id=TABLE, game=GAME, upgrade=False) as j:  # as before 5
        assert [e.round for e in j.round_events(3)] == [3] * 10
        assert list(j.iter_events(41)) == events


def test_a_segment_whose_archive_could_not_be_put_back_is_not_moved(jdir: Path) -> None:
    with Journal.open(jdir, table_id=TABLE, game=GAME) as j:
        j.archive()
        path = j.archive_dir / "segment-000001.sqlite3.z"
        good = path.read_bytes()
        # An archive as the version before wrote it (no round/rec/out), acknowledged as such.
        digest = _rewrite_archive(path, "ALTER TABLE commits DROP COLUMN out")
        with raw(jdir) as c:
            c.execute("UPDATE segments SET digest = ? WHERE number = 1", (digest,))
        st = j.retention.states()[0]
        assert j.ack_segment(1, st.segment.head, digest)
        j.ack_outbox(j._next_outbox_id - 1)
        assert j.move() == []  # stays in the file: retention prunes it as before
        assert [p.number for p in j.prune(0) if p.prune] == [1]
        assert j.downgrade_to_v3() > 0  # nothing moved: a downgrade as before
    # Putting back refuses an archive that does not check out, and changes nothing.
    with Journal.open(jdir, table_id=TABLE, game=GAME) as j:
        _moved_ready(j, 2)
        assert j.move() == [2]
        seg2 = j.archive_dir / "segment-000002.sqlite3.z"
        seg2.write_bytes(good)
        with pytest.raises(JournalError, match=r"segment 2 cannot be put back into the journal: "
                                               r"archive .* is not the one recorded"):
            j.downgrade_to_v3()
    with raw(jdir) as c:
        assert c.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone() == ("5",)


def test_a_move_whose_vacuum_fails_is_still_a_move(jdir: Path) -> None:
    """The moves are committed before the VACUUM: one that fails (no room for it) is an error
    for the upkeep's log, and the journal reads and verifies as moved, only larger."""
    class NoVacuum:
        def __init__(self, conn: sqlite3.Connection) -> None:
            self.conn = conn

        def execute(self, sql: str, *args: Any) -> Any:
            if sql == "VACUUM":
                raise sqlite3.OperationalError("database or disk is full")
            return self.conn.execute(sql, *args)

    with Journal.open(jdir, table_id=TABLE, game=GAME) as j:
        _moved_ready(j, 1)
        j.retention._conn = NoVacuum(j.retention._conn)  # type: ignore[assignment]
        with pytest.raises(JournalError, match=r"segments \[1\] moved to their archives, but "
                                               r"the VACUUM after failed: database or disk"):
            j.move()
        assert j.reader.pruned[0] == 20
        assert [e.round for e in j.round_events(3)] == [3] * 10
        assert [e.seq for e in j.tail(3)] == [78, 79, 80]
    assert verify_dir(jdir).ok


@pytest.mark.parametrize("how", ["move", "prune"])
def test_a_segment_ending_inside_a_commit_reads_on_after_it_leaves(tmp_path: Path,
                                                                   how: str) -> None:
    """A batch whose first event closes round 2 (and segment 1) and whose second opens round 3:
    the segment ends inside that commit. Once segment 1 is out of the file, the commit stays
    and reads on from the checkpoint inside it (found on a linked table in CI)."""
    from controller.rounds.base import Effect

    with Journal.open(tmp_path, table_id=TABLE, game=GAME) as j:
        fill(j, rounds=1)
        for k in range(9):
            j.append(Event("dealer.action", {"k": k}), now(20 + k), round=2)
        settle = Entry(Event("dealer.settle", {}), now(30), 2,
                       (Effect("round", {"number": 2, "status": "completed", "summary": {}}),),
                       {"round": 2})
        seqs = j.append_batch([settle, Entry(Event("dealer.action", {"k": 0}), now(31), 3)])
        fill(j, rounds=3)
        seg = j.retention.states()[0].segment
        assert seg.last == seqs[0] == 20  # the segment ends inside the batch's commit
        before = {n: j.round_events(n) for n in (2, 3)}
        tail = j.tail(40)
        _moved_ready(j, 1)
        assert (j.move() if how == "move" else
                [p.number for p in j.prune(0) if p.prune][:1]) == [1]
        assert j.reader.pruned[0] == 20
        assert j.round_events(3) == before[3]  # 21 (in the batch's commit) onwards
        assert j.tail(40) == [e for e in tail if e.seq > 20]
        assert j.archived_round(2).events == before[2]
        archive = j.archive_dir / "segment-000001.sqlite3.z"
    rep = verify_dir(tmp_path)
    assert rep.ok, rep.errors
    with pytest.MonkeyPatch.context() as mp:  # the auditor's recipe across the straddle
        got = run_recipe(archive, mp)
    assert (got["seq"], got["h"]) == (20, seg.head)


# ---- Archives are part of the record (issue 27, item 2) ------------------------------------

def _pruned(jdir: Path) -> Path:
    """Segments 1, 2 pruned (archived, held by head office), 3, 4 archived; the archive dir."""
    with Journal.open(jdir, table_id=TABLE, game=GAME) as j:
        acked(j, 1, 2)
        assert [p.number for p in j.prune(0) if p.prune] == [1, 2]
        return j.archive_dir


def test_verify_fails_naming_an_archive_altered_or_missing(
        jdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from controller.cli.main import main as cli

    archive_dir = _pruned(jdir)
    assert verify_dir(jdir).archives == f"4 whole, 0 missing or altered, 0 deleted by " \
                                         f"retention ({archive_dir})"
    one = archive_dir / "segment-000001.sqlite3.z"
    good = one.read_bytes()
    one.write_bytes(good[:100] + bytes([good[100] ^ 1]) + good[101:])  # one byte flipped
    rep = verify_dir(jdir)
    assert not rep.ok
    assert rep.archive_faults == rep.errors == [
        f"segment 1 (rounds 1..2, out of the journal file): altered: archive {one} is not the "
        f"one recorded for segment 1: sha256 "
        f"{hashlib.sha256(one.read_bytes()).hexdigest()}, recorded "
        f"{hashlib.sha256(good).hexdigest()}"]
    assert cli(["journal", "verify", "--state-dir", str(jdir)]) == 1
    out = capsys.readouterr().out
    assert out.startswith(f"journal {jdir} FAILED")
    assert f"archives: 3 whole, 1 missing or altered, 0 deleted by retention ({archive_dir})" in out
    assert f"error: segment 1 (rounds 1..2, out of the journal file): altered: archive {one}" \
        in out
    with (Journal.open(jdir, table_id=TABLE, game=GAME) as j,
          pytest.raises(ValueError, match=r"round 1 was pruned from the table's journal \(seq "
                                          r"1\.\.20, segment 1\); its archive .*segment-"
                                          r"000001\.sqlite3\.z is altered, it cannot be read "
                                          r"back: .* is not the one recorded")):
        j.archived_round(1)
    # Every archive deleted, by hand: not by retention, and verify says so for each.
    for path in archive_dir.iterdir():
        path.unlink()
    rep = verify_dir(jdir)
    assert rep.errors == [
        f"segment {n} (rounds {2 * n - 1}..{2 * n}{', out of the journal file' if n < 3 else ''})"
        f": archive {archive_dir / segments.archive_name(n)} is missing (not deleted by "
        "retention)" for n in (1, 2, 3, 4)]
    assert cli(["journal", "verify", "--state-dir", str(jdir), "--json"]) == 1
    assert len(json.loads(capsys.readouterr().out)["archive_faults"]) == 4
    with Journal.open(jdir, table_id=TABLE, game=GAME) as j:
        for call in (j.round_events, j.archived_round):
            with pytest.raises(ValueError, match=r"round 2 was pruned .*; its archive .*segment-"
                                                 r"000001\.sqlite3\.z is missing and was not "
                                                 r"deleted by retention; head office holds its "
                                                 r"digest .* not its records"):
                call(2)
    # A "deleted by retention" record written without the key does not make it so.
    with raw(jdir) as c:
        c.execute(segments.ADD_DELETED[0])
        c.execute(segments.ADD_DELETED[1])
        c.execute("UPDATE segments SET archive_deleted_utc = '2026-01-01T00:00:00Z', "
                  "archive_deleted_mac = x'00' WHERE number = 1")
    rep = verify_dir(jdir)
    assert rep.errors[0] == (
        f"segment 1 (rounds 1..2, out of the journal file): archive {one} is missing; its row "
        "says retention deleted it at 2026-01-01T00:00:00Z, but that record does not check out "
        "with the table's key (forged)")
    with (Journal.open(jdir, table_id=TABLE, game=GAME) as j,
          pytest.raises(ValueError, match=r"that record does not check out with the table's "
                                          r"key \(forged\): it was not deleted by retention")):
        j.round_events(1)


def test_an_archive_whose_row_was_altered_is_named(jdir: Path) -> None:
    archive_dir = _pruned(jdir)
    with raw(jdir) as c:  # the row pointed at another file, or at none
        c.execute("UPDATE segments SET archive = 'segment-000003.sqlite3.z' WHERE number = 1")
        c.execute("UPDATE segments SET archive = NULL WHERE number = 2")
    assert verify_dir(jdir).archive_faults == [
        "segment 1 (rounds 1..2, out of the journal file): its row names the archive "
        "'segment-000003.sqlite3.z', not 'segment-000001.sqlite3.z' (the row was altered)",
        "segment 2 (rounds 3..4, out of the journal file): its row names no archive (it was "
        "archived before it left the file: the row was altered)"]
    assert (archive_dir / "segment-000001.sqlite3.z").exists()


def test_a_deletion_recorded_before_its_file_went_is_finished(
        jdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Killed between the record and the unlink: the file is deleted at the next upkeep, and
    meanwhile it is still checked (it is there)."""
    archive_dir = _pruned(jdir)
    with Journal.open(jdir, table_id=TABLE, game=GAME) as j:
        st = j.retention.states()[0]
        j.retention._record_deleted(st, "2026-01-02T00:00:00Z")
        assert verify_dir(jdir).ok
        assert j.expire_archives(400) == [1]  # recorded already: its age no longer matters
        assert not (archive_dir / "segment-000001.sqlite3.z").exists()
        assert j.retention.states()[0].deleted_utc == "2026-01-02T00:00:00Z"
    rep = verify_dir(jdir)
    assert rep.ok, rep.errors
    assert "1 deleted by retention" in rep.archives
    from controller.cli.main import main as cli

    assert cli(["journal", "segments", "--state-dir", str(jdir)]) == 0
    assert ("segment 1: seq 1..20, rounds 1..2, pruned ") in (out := capsys.readouterr().out)
    assert "segment-000001.sqlite3.z (deleted by retention 2026-01-02T00:00:00Z)" in out


def test_verify_finds_the_archives_where_the_config_keeps_them(
        jdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """[journal] archive_dir elsewhere (as the daemon archives there): `journal verify` of that
    table's state directory checks them there, not STATE_DIR/archive (tablectl-slot's health
    check runs it without --archive-dir)."""
    from controller.cli.main import main as cli

    archive_dir = _pruned(jdir)
    elsewhere = jdir.parent / "share"
    archive_dir.rename(elsewhere)
    example = (Path(__file__).resolve().parents[2] / "examples" / "paigow-nsw.toml").read_text()
    conf = jdir.parent / "table.toml"
    conf.write_text(example.replace("simulate = false", "simulate = true").replace(
        'state_dir = "/var/lib/tablectl"', f'state_dir = "{jdir}"')
        + f'\n[journal]\narchive_dir = "{elsewhere}"\n')
    assert cli(["journal", "verify", "--state-dir", str(jdir), "--config", str(conf)]) == 0
    assert f"archives: 4 whole, 0 missing or altered, 0 deleted by retention ({elsewhere})" in (
        capsys.readouterr().out)
    # No config (or another table's): STATE_DIR/archive, where they are not.
    assert cli(["journal", "verify", "--state-dir", str(jdir), "--config",
                str(jdir / "none.toml")]) == 1
    assert "4 missing or altered" in capsys.readouterr().out


def test_a_lost_archive_accepted_by_a_person_is_said_so_not_raised_forever(
        jdir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """An archive missing (or altered) with no copy to put back: `journal accept-archive-loss`
    records who, why and what was found (MAC'd into the segment's row); verify then passes and
    says it, `round show` says it, the altered file is kept aside. Refused where nothing is
    lost (records still in the file), where the archive is whole, without a reason, and a
    record forged without the key counts for nothing."""
    from controller.cli.main import main as cli

    archive_dir = _pruned(jdir)  # 1, 2 pruned; 3, 4 archived, still in the file
    one = archive_dir / "segment-000001.sqlite3.z"
    one.write_bytes(b"junk")  # altered
    (archive_dir / "segment-000002.sqlite3.z").unlink()  # missing
    (archive_dir / "segment-000003.sqlite3.z").unlink()  # missing, its rows still in the file
    assert len(verify_dir(jdir).archive_faults) == 3

    def accept(segment: int, reason: str = "SD card replaced, no copy (ticket 41)") -> int:
        capsys.readouterr()
        return cli(["journal", "accept-archive-loss", "--state-dir", str(jdir), "--segment",
                    str(segment), "--reason", reason, "--json"])

    monkeypatch.setenv("SUDO_USER", "alice")
    assert accept(3) == 1
    assert "segment 3's records are still in the journal file: nothing is lost" in \
        capsys.readouterr().err
    assert accept(4) == 1 and "is not missing or altered (whole)" in capsys.readouterr().err
    assert accept(9) == 1 and "the journal has no segment 9" in capsys.readouterr().err
    assert accept(1, " ") == 1 and "a reason is required" in capsys.readouterr().err
    assert accept(1) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["segment"] == 1 and record["rounds"] == [1, 2]
    assert record["by"].endswith("(sudo from alice)")
    assert record["found"].startswith("segment 1 (rounds 1..2, out of the journal file): "
                                      "altered: archive")
    assert not one.exists()  # the altered file is kept aside, out of the archive's name
    assert [p.name.split(".altered-")[0] for p in archive_dir.glob("*.altered-*")] == [one.name]
    assert accept(2) == 0
    second = json.loads(capsys.readouterr().out)
    rep = verify_dir(jdir)
    assert [f.split(":")[0] for f in rep.archive_faults] == [
        "segment 3 (rounds 5..6)"]  # only what is not accepted is still raised
    assert "2 lost and accepted as lost" in rep.archives
    with Journal.open(jdir, table_id=TABLE, game=GAME) as j:
        with pytest.raises(ValueError, match=r"round 3 was pruned .*; its archive .*segment-"
                                             r"000002\.sqlite3\.z was lost \(segment 2 .*is "
                                             r"missing .*\); the loss was accepted by .*alice"
                                             r"\) at .*: SD card replaced, no copy \(ticket 41\)"
                                             r"; head office holds its digest"):
            j.round_events(3)
        assert j.retention.missing_archives(archive_dir) == [
            f"segment 3 (rounds 5..6): archive {archive_dir / 'segment-000003.sqlite3.z'} is "
            "missing (not deleted by retention)"]
    assert cli(["journal", "segments", "--state-dir", str(jdir)]) == 0
    assert "segment-000002.sqlite3.z (lost, accepted by " in capsys.readouterr().out
    # The same record written without the key does not make it so.
    with raw(jdir) as c:
        c.execute("UPDATE segments SET archive_lost_mac = x'00' WHERE number = 2")
    forged = verify_dir(jdir).archive_faults
    assert forged[0] == (
        f"segment 2 (rounds 3..4, out of the journal file): archive "
        f"{archive_dir / 'segment-000002.sqlite3.z'} is missing; its row says its loss was "
        f"accepted by {second['by']} at {second['utc']}, but that record does not check out "
        "with the table's key (forged)")


def test_a_power_cut_after_a_move_leaves_a_mark_naming_a_commit_still_in_the_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 27's flush-point replay (image/vm/flushpoints.py) found it on the image: the mark
    is written back lazily (mark.py), so after a power cut the mark on the disk may be minutes
    behind; a move that took the commit it names out of the file left a journal refused as
    "replaced or rewritten" (E101) though nothing was lost. The disk's mark is modelled here as
    the file's bytes at its last fsync (a power cut loses what the page cache held beyond it):
    the move makes the marks durable first, so the disk's mark names a commit the file keeps."""
    import os
    import shutil

    from controller.journal import MARK_FILE

    mark = tmp_path / MARK_FILE
    disk: dict[str, bytes] = {}
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        real_fsync(fd)
        try:
            if os.readlink(f"/proc/self/fd/{fd}") == str(mark):
                disk["mark"] = mark.read_bytes()
        except OSError:
            pass

    with Journal.open(tmp_path, table_id=TABLE, game=GAME) as j:
        fill(j, rounds=3)  # the mark on the disk: as of seq 30, in segment 2
    disk["mark"] = mark.read_bytes()
    monkeypatch.setattr(os, "fsync", fsync)
    with Journal.open(tmp_path, table_id=TABLE, game=GAME) as j:
        fill(j, rounds=5)  # seq 80; the page cache's mark follows, the disk's stays at 30
        _moved_ready(j, 1, 2)
        assert j.move() == [1, 2]  # seq 1..39 out of the file (the boundary commit 40 stays)
    cut = tmp_path.parent / f"{tmp_path.name}-cut"
    shutil.copytree(tmp_path, cut)
    (cut / MARK_FILE).write_bytes(disk["mark"])  # the power cut: only what was written back
    rep = verify_dir(cut)
    assert rep.ok, rep.errors
    with Journal.open(cut, table_id=TABLE, game=GAME) as j:
        assert j.last_seq == 80
