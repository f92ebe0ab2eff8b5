"""Schema 4 (docs/journal.md, "Schema 4"): commit rows store no chain hash; readers recompute it
from the nearest checkpoint, verification checks each commit's MAC over the recomputed chain;
a trial boot of an update keeps a schema-3 journal as it is; `downgrade_to_v3` (run by
`tablectl-slot rollback`) gives the rows their hashes back for the software before."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from controller.journal import Journal, checkpoint, segments, verify_dir
from controller.journal.anchor import ChainHashes
from controller.journal.codec import Codec
from controller.rounds.base import Event
from tests.support.journal import GAME, TABLE, fill, now, raw

REPO = Path(__file__).resolve().parents[2]


def meta_of(d: Path) -> dict[str, str]:
    with raw(d) as c:
        return dict(c.execute("SELECT key, value FROM meta"))


def stored(d: Path) -> dict[int, bytes]:
    with raw(d) as c:
        return dict(c.execute("SELECT seq, hash FROM commits"))


def chain_by_hand(d: Path) -> dict[int, str]:
    """The chain hash after each commit, recomputed with zlib and sha256 alone."""
    with raw(d) as c:
        meta = dict(c.execute("SELECT key, value FROM meta"))
        h = hashlib.sha256(f"tablectl:{meta['table_id']}:{meta['game']}".encode()).hexdigest()
        out, seq = {}, 0
        for key, body in c.execute("SELECT seq, body FROM commits ORDER BY seq"):
            dec = zlib.decompressobj(-15, zdict=meta["deflate_dict"].encode())
            for record in json.loads(dec.decompress(body) + dec.flush()):
                seq += 1
                h = hashlib.sha256((h + json.dumps([seq, *record], sort_keys=True,
                                    separators=(",", ":"), ensure_ascii=False)).encode()
                                   ).hexdigest()
            out[key] = h
    return out


@pytest.fixture
def jdir(tmp_path: Path) -> Path:
    with Journal.open(tmp_path, table_id=TABLE, game=GAME) as j:
        fill(j, rounds=5)
    return tmp_path


def test_a_new_journal_stores_no_chain_hash_and_reads_back_the_same_chain(
        jdir: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    meta = meta_of(jdir)
    assert (meta["schema"], meta["hash_stored_through"]) == ("4", "0")
    assert set(stored(jdir).values()) == {b""}
    old = tmp_path_factory.mktemp("schema3")
    with Journal.open(old, table_id=TABLE, game=GAME, upgrade=False) as j:  # the same events
        fill(j, rounds=5)
    assert meta_of(old)["schema"] == "3" and b"" not in stored(old).values()
    by_hand = chain_by_hand(jdir)
    assert {k: v.hex() for k, v in stored(old).items()} == by_hand == chain_by_hand(old)
    with Journal.open(jdir, table_id=TABLE, game=GAME) as j:
        hashes = {e.seq: e.hash for e in j.iter_events()}
        assert all(hashes[k] == v for k, v in by_hand.items())
        assert j.last_hash == by_hand[max(by_hand)]
    assert verify_dir(jdir).ok and verify_dir(old).ok


def test_reading_from_the_middle_recomputes_from_the_nearest_checkpoint(jdir: Path) -> None:
    by_hand = chain_by_hand(jdir)
    with raw(jdir) as c:
        meta = dict(c.execute("SELECT key, value FROM meta"))
        hashes = ChainHashes(c, meta, Codec(meta["deflate_dict"]))  # nothing remembered
        assert all(hashes.after(k) == v for k, v in sorted(by_hand.items(), reverse=True))
        with pytest.raises(ValueError, match="no commit ends at seq 10000"):
            hashes.after(10_000)
    with Journal.open(jdir, table_id=TABLE, game=GAME) as j:
        # A fresh reader: round 3 (seq 21..30), then a tail, each from a checkpoint before it.
        assert [e.seq for e in j.round_events(3)] == list(range(21, 31))
        assert j.round_events(3)[-1].hash == by_hand[30]
        assert [e.hash for e in j.tail(3)] == [by_hand[k] for k in (48, 49, 50)]


def test_a_damaged_checkpoint_is_passed_over_by_a_reader(jdir: Path) -> None:
    by_hand = chain_by_hand(jdir)
    with raw(jdir) as c:
        c.execute("UPDATE checkpoints SET body = 'junk' WHERE seq = 40")
        meta = dict(c.execute("SELECT key, value FROM meta"))
        assert ChainHashes(c, meta, Codec(meta["deflate_dict"])).after(45) == by_hand[45]


def test_a_trial_boot_keeps_a_schema_3_journal_and_a_later_start_upgrades_it(
        tmp_path: Path) -> None:
    with Journal.open(tmp_path, table_id=TABLE, game=GAME, upgrade=False) as j:
        fill(j, rounds=2)
        assert not j.hashless
    with Journal.open(tmp_path, table_id=TABLE, game=GAME, upgrade=False) as j:
        fill(j, rounds=1)  # another trial start: still schema 3, still storing hashes
    assert meta_of(tmp_path)["schema"] == "3" and b"" not in stored(tmp_path).values()
    assert verify_dir(tmp_path).ok
    with Journal.open(tmp_path, table_id=TABLE, game=GAME) as j:
        assert j.hashless
        fill(j, rounds=1)
    meta = meta_of(tmp_path)
    assert (meta["schema"], meta["hash_stored_through"]) == ("4", "30")
    rows = stored(tmp_path)
    assert b"" not in [rows[k] for k in rows if k <= 30]
    assert {rows[k] for k in rows if k > 30} == {b""}
    rep = verify_dir(tmp_path)
    assert rep.ok, rep.errors


def test_a_removed_stored_hash_before_the_upgrade_is_reported(tmp_path: Path) -> None:
    with Journal.open(tmp_path, table_id=TABLE, game=GAME, upgrade=False) as j:
        fill(j, rounds=2)
    Journal.open(tmp_path, table_id=TABLE, game=GAME).close()  # -> schema 4 at seq 20
    with raw(tmp_path) as c:
        c.execute("UPDATE commits SET hash = x'' WHERE seq = 15")
    assert verify_dir(tmp_path).errors == [
        "seq 15: its stored chain hash was removed (rows up to seq 20 store theirs)"]


def test_downgrade_gives_every_row_its_hash_back(jdir: Path) -> None:
    by_hand = chain_by_hand(jdir)
    with Journal.open(jdir, table_id=TABLE, game=GAME, upgrade=False) as j:
        assert j.downgrade_to_v3() == len(by_hand)
        assert j.downgrade_to_v3() == 0  # schema 3 already
        j.append(Event("dealer.action", {"i": 51}), now(51), round=6)  # stored as schema 3
    meta = meta_of(jdir)
    assert meta["schema"] == "3" and "hash_stored_through" not in meta
    assert "downgraded3_utc" in meta
    rows = stored(jdir)
    assert {k: v.hex() for k, v in rows.items()} == chain_by_hand(jdir)
    assert rows[51] != b"" and all(rows[k].hex() == v for k, v in by_hand.items())
    rep = verify_dir(jdir)
    assert rep.ok, rep.errors
    # What the software before schema 4 checks: every row's stored hash is the chain's.
    with Journal.open(jdir, table_id=TABLE, game=GAME) as j:  # and upgraded again
        fill(j, rounds=1)
    assert meta_of(jdir)["hash_stored_through"] == "51"
    assert verify_dir(jdir).ok


def test_downgrade_of_a_pruned_journal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(segments, "SEGMENT_ROUNDS", 2)
    monkeypatch.setattr(checkpoint, "WALK_WHOLE_BELOW", 0)
    with Journal.open(tmp_path, table_id=TABLE, game=GAME) as j:
        fill(j, rounds=8)
        j.archive()
        for st in j.retention.states()[:2]:
            assert j.ack_segment(st.segment.number, st.segment.head, str(st.digest))
        assert sum(p.prune for p in j.prune(keep_rounds=0)) == 2
        hashes = {e.seq: e.hash for e in j.iter_events()}
    with Journal.open(tmp_path, table_id=TABLE, game=GAME, upgrade=False) as j:
        assert j.downgrade_to_v3() == 40  # seq 41..80, one commit each
    rows = stored(tmp_path)
    assert min(rows) == 41 and all(rows[k].hex() == hashes[k] for k in rows)
    rep = verify_dir(tmp_path)
    assert rep.ok, rep.errors


def test_the_cli_downgrades_and_a_tool_never_upgrades(tmp_path: Path) -> None:
    with Journal.open(tmp_path, table_id=TABLE, game=GAME, upgrade=False) as j:
        fill(j, rounds=2)

    def tablectl(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "controller.cli.main", "journal", *args,
                               "--state-dir", str(tmp_path), "--json"], cwd=REPO,
                              capture_output=True, text=True, timeout=60)

    done = tablectl("archive")  # a technician's tool opens it as a writer: no upgrade
    assert done.returncode == 0, done.stderr
    assert meta_of(tmp_path)["schema"] == "3"
    Journal.open(tmp_path, table_id=TABLE, game=GAME).close()  # the daemon's start upgrades
    assert meta_of(tmp_path)["schema"] == "4"
    with Journal.open(tmp_path, table_id=TABLE, game=GAME) as j:
        fill(j, rounds=1)
    out = tablectl("downgrade")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == {"state_dir": str(tmp_path), "was_schema": 4,
                                      "rows_given_their_hash": 10}
    assert meta_of(tmp_path)["schema"] == "3" and b"" not in stored(tmp_path).values()
    again = tablectl("downgrade")
    assert json.loads(again.stdout)["was_schema"] == 3
    assert verify_dir(tmp_path).ok


def test_a_reader_of_schema_3_code_sees_no_difference_after_a_downgrade(jdir: Path) -> None:
    """The check the software before schema 4 makes of each row (docs/journal.md before
    schema 4: the recomputed hash equals the stored one), with sqlite3 alone."""
    with Journal.open(jdir, table_id=TABLE, game=GAME, upgrade=False) as j:
        j.downgrade_to_v3()
    c = sqlite3.connect(jdir / "journal.sqlite3")
    by_hand = chain_by_hand(jdir)
    for key, h in c.execute("SELECT seq, hash FROM commits"):
        assert h.hex() == by_hand[key]
    c.close()
