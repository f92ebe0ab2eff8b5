"""The journal notices what it lost (issue 12 item 3): its high-water mark outside the SQLite
file names the last commit; a lost, truncated or damaged WAL after a SIGKILL of the real daemon
takes the table out of service naming both numbers, `tablectl journal verify` fails naming the
loss, and `tablectl journal accept-loss` is the logged way back. A mark that merely lags (a
power cut before the kernel wrote it back) is no alarm.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.cli.main import main as cli
from controller.daemon.build import SIM_LIMITS
from controller.journal import (
    JOURNAL_FILE,
    LOSS_KIND,
    Journal,
    JournalError,
    JournalLossError,
    accept_loss,
    verify_dir,
)
from controller.journal.mac import JournalKey
from controller.journal.mark import (
    MARK_FILE,
    MARK_SIZE,
    MarkError,
    create_mark,
    parse,
    read_mark,
)
from controller.rounds.base import Effect, Event
from tests.support.daemon import ask, start_daemon, wait_for_socket
from tests.support.journal import GAME, TABLE, fill, now, raw


@pytest.fixture
def jdir(tmp_path: Path) -> Path:
    with Journal.open(tmp_path, table_id=TABLE, game=GAME) as j:
        fill(j)  # 30 records, one commit each
    return tmp_path


def cut_after(d: Path, seq: int) -> None:
    """What a lost WAL does: the last commits are gone, the chain before them intact."""
    with raw(d) as c:
        c.execute("DELETE FROM commits WHERE seq > ?", (seq,))
        c.execute("DELETE FROM snapshots WHERE seq > ?", (seq,))
        c.execute("DELETE FROM checkpoints WHERE seq > ?", (seq,))  # written with the snapshots


def test_the_mark_follows_every_commit(jdir: Path) -> None:
    with Journal.open(jdir, table_id=TABLE, game=GAME) as j:
        assert read_mark(jdir / MARK_FILE, j.key, TABLE, GAME).seq == 30
        j.append(Event("x", {}), now(31), round=3)
        mark = read_mark(jdir / MARK_FILE, j.key, TABLE, GAME)
        assert (mark.seq, mark.hash) == (31, j.last_hash)
    assert (jdir / MARK_FILE).stat().st_size == MARK_SIZE


def test_a_journal_shorter_than_its_mark_is_refused_naming_both_numbers(jdir: Path) -> None:
    cut_after(jdir, 26)
    with pytest.raises(JournalLossError) as exc:
        Journal.open(jdir, table_id=TABLE, game=GAME)
    assert (exc.value.mark_seq, exc.value.journal_seq) == (30, 26)
    assert ("LOST RECORDS: its high-water mark says seq 30 was committed, the journal ends at "
            "seq 26 (seq 27..30 missing") in str(exc.value)
    assert "tablectl journal accept-loss" in str(exc.value)
    rep = verify_dir(jdir)
    assert not rep.ok and rep.mark == "FAILED"
    assert rep.errors == [
        "journal: LOST RECORDS: its high-water mark says seq 30 was committed, the journal ends "
        "at seq 26 (seq 27..30 missing: a lost or damaged write-ahead log, or an older copy put "
        "back)"]


def test_a_lagging_mark_is_no_alarm(jdir: Path) -> None:
    # A power cut can lose the mark's last writes (never fsync'd), not the journal's commits.
    with Journal.open(jdir, table_id=TABLE, game=GAME) as j:
        key = j.key
        hash20 = next(e.hash for e in j.iter_events(20, 20))
    create_mark(jdir / MARK_FILE, key, TABLE, GAME, 20, 5, hash20)
    assert verify_dir(jdir).ok
    with Journal.open(jdir, table_id=TABLE, game=GAME) as j:
        j.append(Event("x", {}), now(31), round=3)
    assert read_mark(jdir / MARK_FILE, key, TABLE, GAME).seq == 31


def test_a_missing_or_forged_mark_is_refused(jdir: Path) -> None:
    (jdir / MARK_FILE).unlink()
    with pytest.raises(JournalLossError, match=f"{MARK_FILE} is missing beside a journal of 30 "
                       "records"):
        Journal.open(jdir, table_id=TABLE, game=GAME)
    assert "is missing beside a journal of 30 records" in verify_dir(jdir).errors[0]
    # A mark made with another key (someone without the table's key) is not believed.
    other = JournalKey(b"\x01" * 32, "test", True)
    create_mark(jdir / MARK_FILE, other, TABLE, GAME, 30, 7, "0" * 64)
    with pytest.raises(JournalLossError, match="mark MAC does not match"):
        Journal.open(jdir, table_id=TABLE, game=GAME)
    (jdir / MARK_FILE).write_bytes(b"\0" * MARK_SIZE)
    with pytest.raises(JournalLossError, match=r"high-water mark .* is unusable"):
        Journal.open(jdir, table_id=TABLE, game=GAME)


def test_an_older_copy_put_back_is_a_loss(jdir: Path, tmp_path_factory) -> None:
    copy = tmp_path_factory.mktemp("copy")
    with Journal.open(jdir, table_id=TABLE, game=GAME):
        pass
    (copy / JOURNAL_FILE).write_bytes((jdir / JOURNAL_FILE).read_bytes())
    with Journal.open(jdir, table_id=TABLE, game=GAME) as j:
        fill(j, rounds=1)
    (jdir / JOURNAL_FILE).write_bytes((copy / JOURNAL_FILE).read_bytes())
    with pytest.raises(JournalLossError, match="says seq 40 was committed, the journal ends at "
                       "seq 30"):
        Journal.open(jdir, table_id=TABLE, game=GAME)


def test_accept_loss_records_who_why_and_the_range_then_the_table_goes_on(jdir: Path) -> None:
    with pytest.raises(JournalError, match="nothing to accept"):
        accept_loss(jdir, reason="drill", user="root")
    cut_after(jdir, 26)
    with pytest.raises(ValueError, match="reason"):
        accept_loss(jdir, reason="  ", user="root")
    record = accept_loss(jdir, reason="WAL lost after a power cut, ticket 4711",
                         user="root (sudo from alice)")
    assert record["seq"] == 27 and record["lost"] == [27, 30]
    assert (record["mark_seq"], record["journal_seq"]) == (30, 26)
    with Journal.open(jdir, table_id=TABLE, game=GAME) as j:
        last = j.tail(1)[0]
        assert last.kind == LOSS_KIND and last.seq == 27
        assert last.data["by"] == "root (sudo from alice)"
        assert last.data["reason"] == "WAL lost after a power cut, ticket 4711"
        assert last.data["lost"] == [27, 30]
        assert read_mark(jdir / MARK_FILE, j.key, TABLE, GAME).seq == 27
        # Message 7 (seq 28) was lost with the records: head office may have applied it, so a
        # new message never reuses its id. The recovery itself is message 8, to head office.
        assert (record["outbox_next"], record["outbox_lost"]) == (8, [7, 7])
        told = j.pending_outbox()[-1]
        assert (told.id, told.type, told.payload["outbox_lost"]) == (8, "table_recovered", [7, 7])
        assert told.payload["by"] == "root (sudo from alice)"
        j.append(Event("x", {}), now(28), round=3,
                 effects=[Effect("outbox", {"type": "t", "payload": 1})])
        assert [m.id for m in j.pending_outbox()] == [1, 2, 3, 4, 5, 6, 8, 9]
    assert verify_dir(jdir).ok


def test_accept_loss_after_an_ack_beyond_the_journal_skips_to_head_offices_id(jdir: Path
                                                                              ) -> None:
    with pytest.raises(JournalError, match="nothing to accept"):
        accept_loss(jdir, reason="x", user="root", outbox_after=7)  # head office agrees
    record = accept_loss(jdir, reason="head office acked 50", user="root", outbox_after=50)
    assert record["problem"] == ("head office acknowledged outbox message 50, the journal's last "
                                 "is message 7")
    assert (record["lost"], record["outbox_next"], record["outbox_lost"]) == (None, 51, [8, 50])
    with Journal.open(jdir, table_id=TABLE, game=GAME) as j:
        assert j.pending_outbox()[-1].id == 51  # the recovery's message to head office
        j.append(Event("x", {}), now(32), round=3,
                 effects=[Effect("outbox", {"type": "t", "payload": 1})])
        assert j.pending_outbox()[-1].id == 52
        j.ack_outbox(52)
        assert j.pending_outbox() == []
    assert verify_dir(jdir).ok


def test_accept_loss_does_not_cover_tampering(jdir: Path) -> None:
    cut_after(jdir, 26)
    with raw(jdir) as c:
        c.execute("UPDATE commits SET mac = zeroblob(16) WHERE seq = 5")
    with pytest.raises(JournalError, match="seq 5: commit MAC mismatch"):
        accept_loss(jdir, reason="hide it", user="root")


# ---- the real daemon, SIGKILLed, its WAL damaged -------------------------------------------

UTH = ["--game", "uth"]
UTH_TABLE = "SIM-UTH-NSW"


def killed_daemon_with_wal(state: Path) -> tuple[int, int]:
    """Run the simulated UTH table until its WAL holds several commits, SIGKILL it; return
    (the mark's seq, the WAL's size)."""
    proc = start_daemon(state, *UTH, "--autoplay", "0", "--quiet", capture=False)
    try:
        wait_for_socket(state, proc)
        deadline = time.monotonic() + 30
        while ask(state, "status")["round"] < 4 and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    wal = state / f"{JOURNAL_FILE}-wal"
    mark = read_mark(state / MARK_FILE, None, UTH_TABLE, "uth")
    return mark.seq, wal.stat().st_size


def wal_frames(wal: Path) -> int:
    """The frames of the WAL's current run: those carrying its header's salts. The daemon's
    WAL is made at its full size (zeros, controller/journal/walfile.py), so its size says
    nothing of how many frames it holds."""
    data = wal.read_bytes()
    frame, salts, n = 24 + 512, data[16:24], 0
    while 32 + (n + 1) * frame <= len(data) and data[32 + n * frame + 8:][:8] == salts:
        n += 1
    return n


def damage(wal: Path, how: str) -> None:
    frame = 24 + 512  # WAL frame: 24-byte header + one 512-byte page
    if how == "truncate":
        with open(wal, "r+b") as f:
            f.truncate(32 + frame * (wal_frames(wal) // 2))  # half the frames
    elif how == "bitflip":
        with open(wal, "r+b") as f:
            f.seek(32 + 24 + 100)  # inside the first frame's page: every frame after it is void
            byte = f.read(1)
            f.seek(32 + 24 + 100)
            f.write(bytes([byte[0] ^ 0x10]))
    else:
        os.unlink(wal)


@pytest.mark.slow
@pytest.mark.parametrize("how", ["truncate", "bitflip", "delete"])
def test_damaged_wal_after_sigkill_takes_the_table_out_of_service(
        tmp_path: Path, how: str, capsys: pytest.CaptureFixture[str]) -> None:
    mark_seq, _ = killed_daemon_with_wal(tmp_path)
    # The commits since the last checkpoint are in the WAL.
    assert wal_frames(tmp_path / f"{JOURNAL_FILE}-wal") > 10
    damage(tmp_path / f"{JOURNAL_FILE}-wal", how)
    journal_seq = verify_dir(tmp_path).last_seq
    assert journal_seq < mark_seq  # the damage lost commits (what the old code never noticed)

    proc = start_daemon(tmp_path, *UTH, "--autoplay", "2")
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 1
    assert "OUT OF SERVICE" in err
    assert (f"its high-water mark says seq {mark_seq} was committed, the journal ends at seq "
            f"{journal_seq}") in err
    assert "round" not in out  # nothing played on the shorter journal

    capsys.readouterr()
    assert cli(["journal", "verify", "--state-dir", str(tmp_path), "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert not report["ok"] and report["mark"] == "FAILED"
    assert any(f"seq {journal_seq + 1}..{mark_seq} missing" in e for e in report["errors"])

    # The documented way back: recorded with who and why, then the table plays again. The
    # table's config (the simulation's, as `--game uth` builds it): a round the journal ends
    # in, with its jackpot increment written, is voided by the game's rules.
    config = tmp_path.parent / "table.toml"
    config.write_text(
        f'table_id = "{UTH_TABLE}"\ngame = "uth"\n[service]\nstate_dir = "{tmp_path}"\n'
        f'runtime_dir = "{tmp_path.parent / "run"}"\nsocket_group = "root"\nwatchdog = true\n'
        f'[uth]\n{SIM_LIMITS["uth"]}[devices]\nsimulate = true\n')
    assert cli(["journal", "accept-loss", "--state-dir", str(tmp_path), "--config",
                str(config), "--reason", f"test: WAL {how}", "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["lost"] == [journal_seq + 1, mark_seq] and record["by"].startswith("root")
    voided = record["voided_round"]
    if voided is not None:  # the lost WAL held that round's end: voided, its wagers returned
        with Journal.open(tmp_path, table_id=UTH_TABLE, game="uth") as j:
            done = {r.number: r.status for e in j.iter_events() for r in e.rounds}
            cancels = [m.payload["round"] for e in j.iter_events() for m in e.outbox
                       if m.type == "jackpot_cancel"]
        assert done[voided] == "voided" and voided in cancels  # UTH 15.3.1
        assert record["round_next"] > voided
    proc = start_daemon(tmp_path, *UTH, "--autoplay", "2")
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert verify_dir(tmp_path).ok
    with Journal.open(tmp_path, table_id=UTH_TABLE, game="uth") as j:
        # The recovery's record next (after the void's, when it voided a round).
        after = list(j.iter_events(journal_seq + 1, journal_seq + 2))
        loss = after[0] if voided is None else after[1]
        assert voided is None or (after[0].kind == "dealer.void" and after[0].round == voided)
        assert loss.kind == LOSS_KIND and loss.data["reason"] == f"test: WAL {how}"
        assert j.last_seq > journal_seq + 1


def test_wal_loss_without_a_mark_file_is_caught_as_a_missing_mark(jdir: Path) -> None:
    # Both the WAL's commits and the mark gone (someone cleaning the directory): refused.
    cut_after(jdir, 10)
    (jdir / MARK_FILE).unlink()
    with pytest.raises(JournalLossError, match="missing beside a journal of 10 records"):
        Journal.open(jdir, table_id=TABLE, game=GAME)
    # Not even an empty-looking journal is accepted once it has records.
    with sqlite3.connect(jdir / JOURNAL_FILE) as c:
        assert c.execute("SELECT count(*) FROM commits").fetchone()[0] == 10


def test_a_journal_made_without_its_mark_gets_one_before_its_first_record(
        tmp_path: Path) -> None:
    # Killed between making the journal and its mark (the daemon's SIGKILL crash test): the
    # next open makes the mark, so the records after it have one to move.
    with Journal.open(tmp_path, table_id=TABLE, game=GAME):
        pass
    (tmp_path / MARK_FILE).unlink()
    with Journal.open(tmp_path, table_id=TABLE, game=GAME) as j:
        assert (tmp_path / MARK_FILE).exists()
        seq = j.append(Event("x", {}), now(1), round=1)
    with Journal.open(tmp_path, table_id=TABLE, game=GAME) as j:
        assert j.last_seq == seq
    assert verify_dir(tmp_path).mark.startswith(f"seq {seq} ")


def test_verify_beside_a_running_writer_is_no_false_loss(jdir: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    import controller.journal.verify as jverify

    with Journal.open(jdir, table_id=TABLE, game=GAME) as j:
        walk = jverify.verify_conn

        def walk_then_commit(*args, **kw):  # the daemon commits (and moves the mark) meanwhile
            rep = walk(*args, **kw)
            j.append(Event("x", {}), now(31), round=3)
            return rep

        monkeypatch.setattr(jverify, "verify_conn", walk_then_commit)
        rep = verify_dir(jdir)
        assert rep.ok, rep.errors
        assert rep.last_seq == 30 and read_mark(jdir / MARK_FILE, j.key, TABLE, GAME).seq == 31


def test_a_technician_who_cannot_read_the_key_gets_the_plain_chain_checked(
        jdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import controller.journal.verify as jverify
    from controller.journal.mac import KeyFileError

    def denied(*_a, **_k):
        raise KeyFileError("journal key /etc/tablectl/journal-key unreadable: Permission denied",
                           denied=True)

    monkeypatch.setattr(jverify, "find_key", denied)
    rep = verify_dir(jdir)
    assert rep.ok and rep.macs == ("not checked: journal key /etc/tablectl/journal-key "
                                   "unreadable: Permission denied (root can read it)")
    assert rep.mark == "seq 30 (journal ends at seq 30); its MAC not checked: no key"


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300) | st.builds(lambda b: b.ljust(MARK_SIZE - 1)[:MARK_SIZE - 1]
                                           + b"\n", st.binary(max_size=300)))
def test_a_mark_of_any_bytes_is_refused_cleanly(raw_mark: bytes) -> None:
    # Outside input: whatever is in the file, parse says MarkError or gives a value, never more.
    key = JournalKey(b"\x02" * 32, "test", True)
    with contextlib.suppress(MarkError):
        value = parse(raw_mark, key, TABLE, GAME)
        assert value.seq >= 0  # only a genuine mark (its MAC) gets here


@pytest.mark.parametrize("game", ["paigow", "uth"])
def test_the_round_machines_replay_past_a_loss_record_unchanged(tmp_path: Path, game: str
                                                                ) -> None:
    from controller.config.machine import build_machine
    from controller.daemon.build import simulation_config
    from controller.rounds.base import Now

    machine = build_machine(simulation_config(game, "nsw", tmp_path, tmp_path / "run"))
    state = machine.initial()
    after, _effects = machine.step(state, Event(LOSS_KIND, {"by": "root", "reason": "x"}),
                                   Now("2026-11-26T00:00:00.000Z", 1))
    assert machine.to_json(after) == machine.to_json(state)


@pytest.mark.parametrize("linked", [True, False])
def test_a_loss_record_with_held_wagers_adds_them_to_a_linked_uth_ledger(linked: bool) -> None:
    """recover.py's `held_wagers`: a void head office never saw cancelled (its increments
    stand there) gives the cancelled jackpot wagers back to the table's ledger
    (pool.ledger.wagered, docs/journal.md "A round open in the restored copy"); a standalone
    table never has such a void, and its pool invariant (docs/rounds-uth.md) keeps its
    ledger as it is."""
    from controller.rounds.base import Now
    from controller.rounds.uth.machine import UthMachine
    from controller.rounds.uth.state import UthConfig

    machine = UthMachine(UthConfig(linked=linked))
    state = machine.initial()
    record = {"by": "root", "reason": "x", "round_next": 5, "held_wagers": 200}
    after, effects = machine.step(state, Event(LOSS_KIND, record),
                                  Now("2026-11-28T00:00:00.000Z", 1))
    assert effects == [] and after.round == 5
    assert after.ledger == {**state.ledger, "wagered": state.ledger["wagered"]
                            + (200 if linked else 0)}
