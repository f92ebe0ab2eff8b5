"""A recovery continues the table's numbering (issue 27 items 1 and 3): after a loss the
round numbers the lost records used (the high-water mark's, head office's) are never used
again, the way outbox ids were not; a table that once had a journal never starts a new one
silently, and `start_fresh` (`tablectl journal start-fresh`) continues the numbering too.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from controller.journal import (
    JOURNAL_FILE,
    LOSS_KIND,
    Journal,
    JournalError,
    JournalLossError,
    accept_loss,
    start_fresh,
    verify_dir,
)
from controller.journal.checkpoint import Checkpoint
from controller.journal.mac import make_key_file
from controller.journal.mark import MARK_FILE, read_mark
from controller.rounds.base import Effect, Event
from tests.support.journal import GAME, TABLE, fill, now


def put_back(older: Path, state: Path) -> None:
    """An older copy of the journal file put back (its mark is the newer one)."""
    (state / JOURNAL_FILE).write_bytes((older / JOURNAL_FILE).read_bytes())


def older_copy(tmp_path: Path, outside: Path | None = None) -> tuple[Path, Path]:
    """A journal of 3 rounds copied, then 3 more rounds played on: (state, the copy)."""
    state, copy = tmp_path / "state", tmp_path / "copy"
    with Journal.open(state, table_id=TABLE, game=GAME, outside_mark=outside) as j:
        fill(j, rounds=3)
    shutil.copytree(state, copy)
    with Journal.open(state, table_id=TABLE, game=GAME, outside_mark=outside) as j:
        fill(j, rounds=3)
        assert j.last_round_number == 6
    return state, copy


def test_the_mark_carries_the_last_round_number(tmp_path: Path) -> None:
    with Journal.open(tmp_path, table_id=TABLE, game=GAME) as j:
        fill(j, rounds=4)
        assert read_mark(tmp_path / MARK_FILE, j.key, TABLE, GAME).round == 4


def test_accept_loss_continues_after_the_rounds_the_mark_names(tmp_path: Path) -> None:
    state, copy = older_copy(tmp_path)
    put_back(copy, state)
    with pytest.raises(JournalLossError):
        Journal.open(state, table_id=TABLE, game=GAME)
    record = accept_loss(state, reason="restored from the 02:00 copy, ticket 9", user="root")
    assert (record["round_next"], record["rounds_lost"]) == (7, [4, 6])
    with Journal.open(state, table_id=TABLE, game=GAME) as j:
        assert j.last_round_number == 6  # 3 played here, 4..6 used by the lost records
        with pytest.raises(ValueError, match="round effect number 4, expected 7"):
            j.append(Event("x", {}), now(99), round=4,
                     effects=[Effect("round", {"number": 4, "status": "completed",
                                               "summary": {}})])
        fill(j, rounds=2)  # rounds 7 and 8, with a snapshot and checkpoint each
        assert j.last_round_number == 8
        assert j.round_record(7) is not None and j.round_record(5) is None
        assert j.summary()["rounds_skipped"] == 3
    report = verify_dir(state)
    assert report.ok, report.errors
    assert (report.rounds_completed, report.rounds_voided, report.rounds_skipped) == (4, 1, 3)
    # Read back without the walk (position.py) and from the last checkpoint: the same place.
    with Journal.open(state, table_id=TABLE, game=GAME, verify=False) as j:
        assert j.last_round_number == 8
    with Journal.open(state, table_id=TABLE, game=GAME) as j:
        body = j._conn.execute("SELECT body FROM checkpoints ORDER BY seq DESC").fetchone()[0]
        assert Checkpoint.parse(body).skipped == 3
        fill(j, rounds=1)
        assert j.round_record(9) is not None


def test_head_offices_last_round_is_accepted_on_its_own(tmp_path: Path) -> None:
    with Journal.open(tmp_path, table_id=TABLE, game=GAME) as j:
        fill(j, rounds=3)
    with pytest.raises(JournalError, match="nothing to accept"):
        accept_loss(tmp_path, reason="x", user="root", round_after=3)  # head office agrees
    record = accept_loss(tmp_path, reason="head office has round 50", user="root",
                         round_after=50)
    assert record["problem"] == "head office has ledgered round 50, the journal's last is round 3"
    assert (record["round_next"], record["rounds_lost"]) == (51, [4, 50])
    with Journal.open(tmp_path, table_id=TABLE, game=GAME) as j:
        told = j.pending_outbox()[-1]  # the recovery, to head office
        assert told.type == "table_recovered"
        assert (told.payload["round_next"], told.payload["reason"]) == (
            51, "head office has round 50")
        fill(j, rounds=1)
        assert j.last_round_number == 51
    assert verify_dir(tmp_path).ok


def test_the_round_machines_take_the_recovery_s_round_number() -> None:
    from controller.daemon.build import simulation_config
    from controller.rounds.paigow import PaiGowMachine
    from controller.rounds.uth import UthMachine

    for game, machine, field in (
            ("paigow", PaiGowMachine(simulation_config("paigow", "nsw", Path("/x"),
                                                       Path("/x/run")).paigow), "number"),
            ("uth", UthMachine(simulation_config("uth", "nsw", Path("/x"),
                                                 Path("/x/run")).uth), "round")):
        state = machine.initial()
        assert getattr(state, field) == 1, game
        state, effects = machine.step(state, Event(LOSS_KIND, {"round_next": 705}), now(1))
        assert (getattr(state, field), effects) == (705, []), game
        # Never back: a recovery that skips nothing leaves the round as it is.
        state, _ = machine.step(state, Event(LOSS_KIND, {"round_next": 3}), now(2))
        assert getattr(state, field) == 705, game


# ---- no silent fresh start ---------------------------------------------------------------------


def test_the_key_alone_does_not_refuse_a_first_journal(tmp_path: Path) -> None:
    """A new table has its key (tablectl-journal-key.service) before its first journal, in a
    state directory the daemon may have to make: the key alone says nothing of a lost one."""
    key = tmp_path / "etc" / "journal-key"
    key.parent.mkdir()
    make_key_file(key)
    Journal.open(tmp_path / "state", table_id=TABLE, game=GAME, key_file=key,
                 fresh_ok=False).close()


def test_a_start_killed_between_its_key_and_its_journal_starts_again(tmp_path: Path) -> None:
    """The development key is made just before the journal and its mark: a daemon killed in
    between leaves the key alone, which says nothing of an earlier journal."""
    make_key_file(tmp_path / "journal.key", dev=True)
    Journal.open(tmp_path, table_id=TABLE, game=GAME, fresh_ok=False).close()


def test_a_journal_deleted_beside_its_mark_is_refused(tmp_path: Path) -> None:
    with Journal.open(tmp_path, table_id=TABLE, game=GAME) as j:
        fill(j, rounds=3)
    (tmp_path / JOURNAL_FILE).unlink()
    with pytest.raises(JournalError, match=r"the high-water mark .* of an earlier journal is "
                       r"there: refusing to start a new journal"):
        Journal.open(tmp_path, table_id=TABLE, game=GAME, fresh_ok=False)
    # start-fresh makes it, logged, and goes on after the mark's round and outbox id.
    record = start_fresh(tmp_path, table_id=TABLE, game=GAME, reason="journal deleted by "
                         "mistake, ticket 12", user="root (sudo from bob)")
    assert record["fresh"] and record["problem"].startswith("new journal: the high-water mark")
    assert (record["round_next"], record["outbox_next"]) == (4, 8)
    with Journal.open(tmp_path, table_id=TABLE, game=GAME, fresh_ok=False) as j:
        first = next(j.iter_events())
        assert first.kind == LOSS_KIND and first.data["by"] == "root (sudo from bob)"
        # Its message names the ids the old journal used (head office may never have had
        # them): head office goes on across them (headoffice/ledger/batch.py, _closes_gap).
        told = j.pending_outbox()[-1]
        assert (told.id, told.payload["outbox_lost"]) == (8, [1, 7])
        fill(j, rounds=1)
        assert j.last_round_number == 4
    assert verify_dir(tmp_path).ok
    with pytest.raises(JournalError, match="exists: start-fresh never replaces a journal"):
        start_fresh(tmp_path, table_id=TABLE, game=GAME, reason="again", user="root")


def test_the_outside_mark_catches_a_whole_state_directory_put_back(tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere" / "journal.mark"
    outside.parent.mkdir()
    state, copy = older_copy(tmp_path, outside)
    # The whole directory, journal and mark, from the older copy: the mark inside agrees with
    # it; the one outside does not.
    shutil.rmtree(state)
    shutil.copytree(copy, state)
    Journal.open(state, table_id=TABLE, game=GAME).close()  # what the table alone saw before
    with pytest.raises(JournalLossError, match=r"its high-water mark says seq 60 was committed, "
                       r"the journal ends at seq 30 .* \(the high-water mark outside the state "
                       f"directory, {outside}\\)"):
        Journal.open(state, table_id=TABLE, game=GAME, outside_mark=outside)
    record = accept_loss(state, reason="state restored from backup", user="root",
                         outside_mark=outside)
    assert (record["round_next"], record["lost"]) == (7, [31, 60])
    with Journal.open(state, table_id=TABLE, game=GAME, outside_mark=outside) as j:
        fill(j, rounds=1)
        assert j.last_round_number == 7
    assert read_mark(outside, None, TABLE, GAME).round == 7


def test_a_vanished_state_directory_is_refused_then_starts_fresh_after_the_outside_mark(
        tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere" / "journal.mark"
    outside.parent.mkdir()
    key = make_key_file(tmp_path / "elsewhere" / "journal-key").source
    state = tmp_path / "state"
    with Journal.open(state, table_id=TABLE, game=GAME, outside_mark=outside,
                      key_file=Path(key)) as j:
        fill(j, rounds=5)
    shutil.rmtree(state)
    with pytest.raises(JournalError, match="the high-water mark outside the state directory"):
        Journal.open(state, table_id=TABLE, game=GAME, outside_mark=outside, fresh_ok=False,
                     key_file=Path(key))
    record = start_fresh(state, table_id=TABLE, game=GAME, reason="card replaced",
                         user="root", outside_mark=outside, key_file=Path(key))
    assert (record["round_next"], record["outbox_next"]) == (6, 13)
    with Journal.open(state, table_id=TABLE, game=GAME, outside_mark=outside,
                      fresh_ok=False, key_file=Path(key)) as j:
        fill(j, rounds=1)
        assert j.last_round_number == 6


def test_the_outside_mark_may_not_be_inside_the_state_directory(tmp_path: Path) -> None:
    with pytest.raises(JournalError, match="is inside the state directory"):
        Journal.open(tmp_path, table_id=TABLE, game=GAME, outside_mark=tmp_path / "m")


def test_outside_mark_is_read_from_the_journal_section() -> None:
    from controller.config import ConfigError, validate_text
    from controller.daemon.build import SIM_LIMITS

    base = (f'table_id = "T"\ngame = "uth"\n[service]\nstate_dir = "/var/lib/tablectl"\n'
            f'[uth]\n{SIM_LIMITS["uth"]}[devices]\nsimulate = true\n[journal]\n')
    cfg = validate_text(base + 'outside_mark = "/var/lib/tablectl-mark/journal.mark"\n', "t")
    assert cfg.journal.outside_mark == Path("/var/lib/tablectl-mark/journal.mark")
    with pytest.raises(ConfigError, match=r"outside_mark.*must be an absolute path"):
        validate_text(base + 'outside_mark = "journal.mark"\n', "t")


# ---- the mark's version, for the software before this one -----------------------------------


def raw_version(path: Path) -> str:
    return path.read_text().split()[1]


def test_a_trial_boot_leaves_a_version_1_mark_as_it_is(tmp_path: Path) -> None:
    from controller.journal.mark import create_mark

    with Journal.open(tmp_path, table_id=TABLE, game=GAME) as j:
        fill(j, rounds=2)
        key, seq, out, chain = j.key, j.last_seq, j.outbox.next_id - 1, j.last_hash
    # As the software before wrote it.
    create_mark(tmp_path / MARK_FILE, key, TABLE, GAME, seq, out, chain, version=1)
    with Journal.open(tmp_path, table_id=TABLE, game=GAME, upgrade=False) as j:
        fill(j, rounds=1)  # a trial boot of an update: the old slot may read it again
    assert raw_version(tmp_path / MARK_FILE) == "1"
    assert read_mark(tmp_path / MARK_FILE, key, TABLE, GAME).round is None
    with Journal.open(tmp_path, table_id=TABLE, game=GAME) as j:
        fill(j, rounds=1)  # the update committed
    assert raw_version(tmp_path / MARK_FILE) == "2"
    assert read_mark(tmp_path / MARK_FILE, key, TABLE, GAME).round == 4


def test_downgrade_writes_a_version_1_mark_and_refuses_after_skipped_rounds(
        tmp_path: Path) -> None:
    with Journal.open(tmp_path, table_id=TABLE, game=GAME) as j:
        fill(j, rounds=2)
        j.downgrade_to_v3()
        fill(j, rounds=1)
    assert raw_version(tmp_path / MARK_FILE) == "1"
    assert verify_dir(tmp_path).ok
    accept_loss(tmp_path, reason="head office has round 9", user="root", round_after=9)
    with (Journal.open(tmp_path, table_id=TABLE, game=GAME) as j,
          pytest.raises(JournalError, match="a recovery skipped 6 round numbers")):
        j.downgrade_to_v3()


def test_the_round_told_to_head_office_is_the_open_round_once_its_increment_is_written(
        tmp_path: Path) -> None:
    """What the link compares with head office's last round (extensions/numbering.py): a round
    the table only opened is not one head office can hold; one whose jackpot increment was
    written is. Kept as the journal grows, and read back from the open round when reopened."""
    with Journal.open(tmp_path, table_id=TABLE, game=GAME) as j:
        fill(j, rounds=3)
        j.append(Event("shuffler.ready", {}), now(j.last_seq + 1), round=4)  # round 4 opened
        assert (j.last_event_round, j.last_round_told()) == (4, 3)
    with Journal.open(tmp_path, table_id=TABLE, game=GAME) as j:
        assert j.last_round_told() == 3
        j.append(Event("card.dispensed", {}), now(j.last_seq + 1), round=4, effects=[Effect(
            "outbox", {"type": "jackpot_increment", "payload": {"round": 4, "amount": 200}})])
        assert j.last_round_told() == 4
    with Journal.open(tmp_path, table_id=TABLE, game=GAME) as j:
        assert j.last_round_told() == 4
        fill(j, rounds=1)  # round 4 recorded
        assert j.last_round_told() == 4
        j.append(Event("shuffler.ready", {}), now(j.last_seq + 1), round=5)
        assert j.last_round_told() == 4
