"""The keyed journal (schema 3, issue 12 item 4): edits whose SHA-256 chain was recomputed, a
rewritten snapshot, a forged ack and a journal of another key are detected; schema-2 journals
are upgraded in place and keep their hashes; the plain chain still verifies without the key.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import zlib
from pathlib import Path

import pytest

from controller import journal as jmod
from controller.journal import (
    JOURNAL_FILE,
    AckBeyondJournal,
    Codec,
    Journal,
    JournalError,
    chain_hash,
    snapshot_hash,
    verify_dir,
)
from controller.journal import schema as jschema
from controller.journal.codec import snapshot_text
from controller.journal.mac import DEV_KEY_FILE, find_key, read_key_file
from controller.journal.mark import MARK_FILE
from tests.journal import journal_v2
from tests.support.journal import GAME, TABLE, fill, raw


@pytest.fixture
def jdir(tmp_path: Path) -> Path:
    with Journal.open(tmp_path, table_id=TABLE, game=GAME) as j:
        fill(j)  # 3 rounds of 10 events, one commit each; 7 outbox messages; 3 snapshots
        j.ack_outbox(2)
    return tmp_path


def rechain(c: sqlite3.Connection, from_seq: int, edit: dict[int, object]) -> None:
    """Rewrite the commits from `from_seq` on as an attacker without the key would: change the
    records in `edit` (seq -> new data) and recompute every SHA-256 hash after them, so the plain
    chain verifies again."""
    meta = dict(c.execute("SELECT key, value FROM meta"))
    codec = Codec(meta["deflate_dict"])
    h = jmod.genesis_hash(TABLE, GAME)
    rows = c.execute("SELECT seq, body, hash FROM commits ORDER BY seq").fetchall()
    for key, body, stored in rows:
        records = json.loads(codec.unpack(body))
        first = key - len(records) + 1
        texts = []
        for i, rec in enumerate(records):
            if first + i in edit:
                rec[4] = edit[first + i]
            text = jmod.canonical(rec)
            h = chain_hash(h, first + i, text)
            texts.append(text)
        if key < from_seq:
            continue
        # A stored hash is rewritten; schema 4's rows store none (b"").
        c.execute("UPDATE commits SET body = ?, hash = ? WHERE seq = ?",
                  (codec.pack("[" + ",".join(texts) + "]"),
                   stored and bytes.fromhex(h), key))
        snap = c.execute("SELECT state FROM snapshots WHERE seq = ?", (key,)).fetchone()
        if snap is not None:
            state = snapshot_text(snap[0])
            c.execute("UPDATE snapshots SET hash = ? WHERE seq = ?",
                      (snapshot_hash(h, state), key))
        cp = c.execute("SELECT body FROM checkpoints WHERE seq = ?", (key,)).fetchone()
        if cp is not None:  # its MAC cannot be remade without the key
            body = json.loads(cp[0])
            body.update(hash=h, snapshot=snapshot_hash(h, state))
            c.execute("UPDATE checkpoints SET body = ? WHERE seq = ?",
                      (jmod.canonical(body), key))


def plain_chain_ok(d: Path) -> bool:
    """What an auditor without the key can check (docs/journal.md): sqlite3, zlib, sha256."""
    c = sqlite3.connect(d / JOURNAL_FILE)
    meta = dict(c.execute("SELECT key, value FROM meta"))
    h = hashlib.sha256(f"tablectl:{meta['table_id']}:{meta['game']}".encode()).hexdigest()
    known = {s: json.loads(b)["hash"] for s, b in c.execute("SELECT seq, body FROM checkpoints")}
    seq = 0
    for key, body, stored in c.execute("SELECT seq, body, hash FROM commits ORDER BY seq"):
        dec = zlib.decompressobj(-15, zdict=meta["deflate_dict"].encode())
        for record in json.loads(dec.decompress(body) + dec.flush()):
            seq += 1
            h = hashlib.sha256((h + json.dumps([seq, *record], sort_keys=True,
                                separators=(",", ":"), ensure_ascii=False)).encode()).hexdigest()
            if known.get(seq, h) != h:
                return False
        if seq != key or stored not in (b"", bytes.fromhex(h)):
            return False
    return True


def test_a_new_journal_is_keyed_and_verifies(jdir: Path) -> None:
    with raw(jdir) as c:
        meta = dict(c.execute("SELECT key, value FROM meta"))
        macs = c.execute("SELECT count(*) FROM commits WHERE length(mac) = 16").fetchone()[0]
        snaps = c.execute("SELECT count(*) FROM snapshots WHERE length(mac) = 16").fetchone()[0]
    assert meta["schema"] == "4" and meta["mac_since"] == "0"
    assert meta["hash_stored_through"] == "0"
    assert macs == 30 and snaps == 3
    rep = verify_dir(jdir)
    assert rep.ok, rep.errors
    assert rep.macs.startswith("checked with key id") and "development key" in rep.macs
    assert rep.mark == "seq 30 (journal ends at seq 30)"
    assert plain_chain_ok(jdir)


def test_amount_edit_with_the_chain_recomputed_is_detected(jdir: Path) -> None:
    with raw(jdir) as c:
        rechain(c, 12, {12: {"i": 12, "box": 3, "amount": 100_000_000}})
    # The plain chain verifies (what the old code checked) ...
    assert plain_chain_ok(jdir)
    rep = verify_dir(jdir)
    # ... the MACs do not: schema 4 stores no chain hash, so the chain recomputed from the
    # records goes wrong at the edited commit and the commits after it cannot be checked; the
    # checkpoints the attacker rewrote to match are refused (their MACs), the mark does not match.
    assert not rep.ok
    assert rep.errors[0] == "seq 12: hash mismatch (record altered, reordered or chain broken)"
    assert [e for e in rep.errors if "not verified" in e] == [
        "seq 13..30: not verified (the chain is recomputed from the records and after the error "
        "above no longer matches their MACs, until a checkpoint that checks out)"]
    assert {"seq 20: checkpoint refused: MAC mismatch (written without the table's key)",
            "seq 30: checkpoint refused: MAC mismatch (written without the table's key)",
            "journal: it does not hold the commit its high-water mark names (seq 30, journal "
            "ends at seq 30): replaced or rewritten"} <= set(rep.errors), rep.errors
    with pytest.raises(JournalError, match="seq 12: hash mismatch"):
        Journal.open(jdir, table_id=TABLE, game=GAME)


def test_snapshot_rewritten_with_its_hash_recomputed_is_detected(jdir: Path) -> None:
    with raw(jdir) as c:
        seq, state = c.execute("SELECT seq, state FROM snapshots ORDER BY seq DESC LIMIT 1"
                               ).fetchone()
        event_hash = bytes.fromhex(json.loads(c.execute(  # (schema 4: no stored hash)
            "SELECT body FROM checkpoints WHERE seq = ?", (seq,)).fetchone()[0])["hash"])
        forged = json.loads(snapshot_text(state))
        forged["pool"] = 100_000_000  # cents: $1,000,000
        text = jmod.canonical(forged)
        c.execute("UPDATE snapshots SET state = ?, hash = ? WHERE seq = ?",
                  (Codec("").pack(text), snapshot_hash(event_hash.hex(), text), seq))
    rep = verify_dir(jdir)
    assert rep.errors == [f"seq {seq}: snapshot MAC mismatch (snapshot rewritten without the "
                          "table's key)"]
    with pytest.raises(JournalError, match="snapshot MAC mismatch"):
        Journal.open(jdir, table_id=TABLE, game=GAME)


def test_a_snapshot_without_mac_is_refused_and_never_replayed(jdir: Path) -> None:
    with raw(jdir) as c:
        c.execute("UPDATE snapshots SET mac = NULL WHERE seq = 30")
    assert verify_dir(jdir).errors == ["seq 30: snapshot has no MAC (every snapshot after seq 0 "
                                       "has one)"]


def test_forged_outbox_ack_is_detected(jdir: Path) -> None:
    with Journal.open(jdir, table_id=TABLE, game=GAME) as j:
        assert [m.id for m in j.pending_outbox()] == [3, 4, 5, 6, 7]
    with raw(jdir) as c:  # hide the unsent messages 3..7
        c.execute("INSERT INTO outbox_acked(upto_id, utc) VALUES (7, '2026-11-26T00:00:00Z')")
    assert verify_dir(jdir).errors == ["outbox ack up to message 7 has no MAC (forged or "
                                       "altered)"]
    with raw(jdir) as c:  # a genuine ack's MAC does not fit another id
        mac = c.execute("SELECT mac FROM outbox_acked WHERE upto_id = 2").fetchone()[0]
        c.execute("UPDATE outbox_acked SET mac = ? WHERE upto_id = 7", (mac,))
    assert verify_dir(jdir).errors == ["outbox ack up to message 7 MAC mismatch (forged or "
                                       "altered)"]
    with pytest.raises(JournalError, match="outbox ack up to message 7"):
        Journal.open(jdir, table_id=TABLE, game=GAME)


def test_acks_stay_cumulative_and_idempotent(jdir: Path) -> None:
    with Journal.open(jdir, table_id=TABLE, game=GAME) as j:
        assert j.ack_outbox(2) == 0 and j.ack_outbox(1) == 0
        assert j.ack_outbox(5) == 3
        with pytest.raises(AckBeyondJournal) as exc:
            j.ack_outbox(8)
        assert (exc.value.upto, exc.value.last) == (8, 7)
    assert verify_dir(jdir).ok
    with Journal.open(jdir, table_id=TABLE, game=GAME) as j:
        assert [m.id for m in j.pending_outbox()] == [6, 7]


def test_meta_rewritten_to_move_where_macs_begin_is_detected(jdir: Path) -> None:
    with raw(jdir) as c:
        c.execute("UPDATE meta SET value = '30' WHERE key = 'mac_since'")
    assert any("MAC of the chain head where MACs begin does not match" in e
               for e in verify_dir(jdir).errors)


def test_another_key_is_refused_and_without_a_key_only_the_chain_is_checked(jdir: Path,
                                                                            tmp_path_factory
                                                                            ) -> None:
    other = tmp_path_factory.mktemp("other") / "key"
    other.write_text("ab" * 32 + "\n")
    rep = verify_dir(jdir, key_file=other)
    assert not rep.ok and "wrong or replaced key" in rep.errors[0]
    with pytest.raises(JournalError, match="wrong or replaced key"):
        Journal.open(jdir, table_id=TABLE, game=GAME, key_file=other)
    (jdir / DEV_KEY_FILE).unlink()
    rep = verify_dir(jdir)
    assert rep.ok and rep.macs.startswith("not checked: no key")
    with pytest.raises(JournalError, match="no journal key"):
        Journal.open(jdir, table_id=TABLE, game=GAME)


def test_the_systemd_credential_is_the_key_when_the_daemon_runs_under_systemd(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    creds = tmp_path / "creds"
    creds.mkdir()
    monkeypatch.setenv("CREDENTIALS_DIRECTORY", str(creds))
    with pytest.raises(JournalError, match="journal-key unreadable"):
        Journal.open(tmp_path / "s", table_id=TABLE, game=GAME)
    (creds / "journal-key").write_text("zz" * 32)
    with pytest.raises(JournalError, match="not 64 hex characters"):
        Journal.open(tmp_path / "s", table_id=TABLE, game=GAME)
    (creds / "journal-key").write_text("0f" * 32 + "\n")
    with Journal.open(tmp_path / "s", table_id=TABLE, game=GAME) as j:
        fill(j, rounds=1)
        assert not j.key.dev and j.key.source == str(creds / "journal-key")
    assert not (tmp_path / "s" / DEV_KEY_FILE).exists()  # none made beside the journal
    # A key planted beside the journal is never preferred over the credential.
    (tmp_path / "s" / DEV_KEY_FILE).write_text("11" * 32)
    found = find_key(tmp_path / "s")
    assert found is not None and found.secret == bytes.fromhex("0f" * 32)
    assert read_key_file(tmp_path / "s" / DEV_KEY_FILE).secret != found.secret


# ---- schema 2 -> 3 ------------------------------------------------------------------------


@pytest.fixture
def v2(tmp_path: Path) -> Path:
    """A schema-2 journal as the previous code left it: no key, no MACs, no mark."""
    with journal_v2.Journal.open(tmp_path, table_id=TABLE, game=GAME) as j:
        fill(j)  # type: ignore[arg-type]
        j.ack_outbox(2)
    return tmp_path


def test_schema_2_journal_is_upgraded_in_place_and_keeps_its_hashes(v2: Path) -> None:
    with journal_v2.Journal.open(v2, table_id=TABLE, game=GAME) as old:
        old_events = [(e.as_json(), e.hash) for e in old.iter_events()]
    assert not (v2 / MARK_FILE).exists()
    with Journal.open(v2, table_id=TABLE, game=GAME) as j:
        assert [(e.as_json(), e.hash) for e in j.iter_events()] == old_events
        assert [m.id for m in j.pending_outbox()] == [3, 4, 5, 6, 7]
        fill(j, rounds=1)
        assert j.ack_outbox(4) == 2
    with raw(v2) as c:
        meta = dict(c.execute("SELECT key, value FROM meta"))
        unmaced = c.execute("SELECT max(seq) FROM commits WHERE mac IS NULL").fetchone()[0]
        maced = c.execute("SELECT min(seq) FROM commits WHERE mac IS NOT NULL").fetchone()[0]
    assert (meta["schema"], meta["mac_since"], meta["acked_at_mac"]) == ("4", "30", "2")
    assert (unmaced, maced) == (30, 31)
    # ... and on to schema 4: the rows before keep their hashes, the new ones store none.
    assert meta["hash_stored_through"] == "30"
    with raw(v2) as c:
        assert c.execute("SELECT max(seq) FROM commits WHERE hash != x''").fetchone()[0] == 30
        assert c.execute("SELECT min(seq) FROM commits WHERE hash = x''").fetchone()[0] == 31
    rep = verify_dir(v2)
    assert rep.ok, rep.errors
    assert rep.records == 40 and rep.mark == "seq 40 (journal ends at seq 40)"
    assert plain_chain_ok(v2)
    # Replay never trusts the un-MAC'd snapshots from before the upgrade: only the new one.
    with Journal.open(v2, table_id=TABLE, game=GAME) as j:
        snapshot, events = j.replay_point()
        assert snapshot == {"round": 4, "after": 40} and events == []


def test_an_edit_before_the_upgrade_is_caught_by_the_mac_of_the_head(v2: Path) -> None:
    Journal.open(v2, table_id=TABLE, game=GAME).close()
    with raw(v2) as c:
        rechain(c, 5, {5: {"i": 5, "box": 4, "amount": 1}})
    rep = verify_dir(v2)
    assert rep.errors == ["seq 30: MAC of the chain head where MACs begin does not match "
                          "(records before it rewritten, or meta altered)",
                          "journal: it does not hold the commit its high-water mark names "
                          "(seq 30, journal ends at seq 30): replaced or rewritten"]


def test_upgrade_is_all_or_nothing(v2: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    before = (v2 / JOURNAL_FILE).read_bytes()
    monkeypatch.setattr(jschema, "V3_COLUMNS", (*jschema.V3_COLUMNS, "ALTER TABLE nowhere ADD x"))
    with pytest.raises(JournalError, match="upgrade to schema 3 failed"):
        Journal.open(v2, table_id=TABLE, game=GAME)
    with raw(v2) as c:
        assert c.execute("SELECT value FROM meta WHERE key='schema'").fetchone()[0] == "2"
        cols = [r[1] for r in c.execute("PRAGMA table_info(commits)")]
    assert "mac" not in cols
    monkeypatch.undo()
    with journal_v2.Journal.open(v2, table_id=TABLE, game=GAME) as old:  # still the old format
        assert old.last_seq == 30
    assert (v2 / JOURNAL_FILE).read_bytes() != b"" and before
    with Journal.open(v2, table_id=TABLE, game=GAME) as j:
        assert j.last_seq == 30
    assert verify_dir(v2).ok


def test_an_auditor_with_the_key_recomputes_the_macs_with_hmac_and_json_alone(jdir: Path) -> None:
    import hmac
    import zlib

    key = bytes.fromhex((jdir / DEV_KEY_FILE).read_text().strip())
    with raw(jdir) as c:
        meta = dict(c.execute("SELECT key, value FROM meta"))
        rows = c.execute("SELECT seq, body, mac FROM commits ORDER BY seq").fetchall()
    # The chain hash each MAC covers is recomputed from the records (schema 4 stores none).
    h, n = hashlib.sha256(f"tablectl:{TABLE}:{GAME}".encode()).hexdigest(), 0
    for seq, body, mac in rows:
        dec = zlib.decompressobj(-15, zdict=meta["deflate_dict"].encode())
        for record in json.loads(dec.decompress(body) + dec.flush()):
            n += 1
            h = hashlib.sha256((h + json.dumps([n, *record], sort_keys=True,
                                separators=(",", ":"), ensure_ascii=False)).encode()).hexdigest()
        text = json.dumps(["commit", TABLE, GAME, seq, h], separators=(",", ":"))
        assert hmac.new(key, text.encode(), hashlib.sha256).digest()[:16] == mac
