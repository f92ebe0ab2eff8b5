"""A journal written by main's journal code before it became a package (tests/data/journal_main,
made by its make.py at e04d633) verifies and reads back identically with the current code, and
opening it changes none of its stored rows."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from controller.journal import JOURNAL_FILE, Journal, verify_dir
from controller.rounds.base import Event, Now

DATA = Path(__file__).resolve().parents[1] / "data" / "journal_main"
TABLE, GAME = "G01", "paigow"


@pytest.fixture
def golden(tmp_path: Path) -> Path:
    d = tmp_path / "state"
    d.mkdir()
    for name in ("journal.sqlite3", "journal.mark", "journal.key"):
        shutil.copyfile(DATA / name, d / name)
    (d / "journal.key").chmod(0o600)
    return d


def expected() -> dict[str, Any]:
    return json.loads((DATA / "expected.json").read_text())


def rows(d: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every stored row: what the chain, the MACs and the outbox state are made of."""
    with sqlite3.connect(f"file:{d / JOURNAL_FILE}?mode=ro", uri=True) as c:
        return {t: c.execute(f"SELECT * FROM {t} ORDER BY 1").fetchall()
                for t in ("meta", "events", "commits", "snapshots", "outbox", "outbox_acked",
                          "rounds")}


def as_json(value: Any) -> Any:
    return json.loads(json.dumps(value))  # as expected.json holds it (int keys as strings)


def test_the_old_journal_verifies_offline_as_it_did(golden: Path) -> None:
    before = (golden / JOURNAL_FILE).read_bytes()
    rep = verify_dir(golden)
    exp = expected()
    assert rep.as_json() == exp["verify"]
    assert rep.mark == exp["verify_mark"]
    assert rep.last_hash == exp["last_hash"]
    assert (golden / JOURNAL_FILE).read_bytes() == before


def test_the_old_journal_reads_back_identically(golden: Path) -> None:
    exp = expected()
    stored = rows(golden)
    with Journal.open(golden, table_id=TABLE, game=GAME) as j:
        got = {
            "last_seq": j.last_seq, "last_hash": j.last_hash,
            "last_round_number": j.last_round_number, "last_event_round": j.last_event_round,
            "events": [dict(e.as_json(), hash=e.hash) for e in j.iter_events()],
            "pending_outbox": [m.as_json() for m in j.pending_outbox()],
            "rounds": {n: (None if (rec := j.round_record(n)) is None else rec.as_json())
                       for n in range(0, 6)},
            "round_events": {n: [e.seq for e in j.round_events(n)] for n in range(0, 6)},
            "tail": [e.seq for e in j.tail(5)],
            "replay_point": [j.replay_point()[0], [e.seq for e in j.replay_point()[1]]],
            "key_id": j.key.key_id,
        }
        summary = j.summary()
    for k in ("path", "file_bytes"):
        summary.pop(k)
    # The keys added since (issue 16): nothing pruned, no checkpoint refused.
    assert [summary.pop(k) for k in ("pruned_through_seq", "refused_checkpoints",
                                     "verified_from_seq")] == [0, 0, 0]
    got["summary"] = summary
    for k, v in as_json(got).items():
        assert v == exp[k], k
    # Opening and reading rewrote nothing; the writer's open upgraded it to schema 4 (meta only:
    # the commits after seq 28 will store no chain hash, every row there keeps its own).
    after = rows(golden)
    old_meta, new_meta = dict(stored.pop("meta")), dict(after.pop("meta"))
    assert after == stored
    assert old_meta["schema"] == "3" and new_meta.pop("schema") == "4"
    assert new_meta.pop("hash_stored_through") == str(exp["last_seq"])
    assert new_meta.pop("upgraded4_utc") and new_meta == {k: v for k, v in old_meta.items()
                                                          if k != "schema"}


def test_the_old_journal_goes_on_with_the_same_chain(golden: Path) -> None:
    exp = expected()
    stored = rows(golden)
    with Journal.open(golden, table_id=TABLE, game=GAME) as j:
        seq = j.append(Event("dealer.wager", {"box": 1, "amount": 500}),
                       Now("2026-11-26T09:00:00.000Z", 99_000), round=5)
        assert j.ack_outbox(5) == 2
        new_hash = j.last_hash
    assert seq == exp["last_seq"] + 1
    after = rows(golden)
    for table in ("events", "snapshots", "outbox", "rounds"):
        assert after[table] == stored[table]
    assert after["commits"][:-1] == stored["commits"]  # the old commits, byte for byte
    rep = verify_dir(golden)
    assert rep.ok, rep.errors
    assert (rep.records, rep.last_hash) == (seq, new_hash)
