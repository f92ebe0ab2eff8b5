"""Accounting meters (controller/meters.py, daemon/accounting.py, `tablectl meters`): derived
from the journal, so they reconcile exactly with it; a shift close journals its figures and
sends them to head office, which stores them (headoffice/meters.py)."""

from __future__ import annotations

import base64
import json
import signal
import subprocess
import sys
import zlib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.daemon.accounting import meters_of
from controller.journal import Journal
from controller.meters import Meters, round_parts
from headoffice import meters as ho_meters
from headoffice.ledger import Incoming, Ledger
from shared.link import contract
from tests.support.daemon import REPO, ask, start_daemon, wait_for_socket

GAMES = [("paigow", "nsw", "SIM-PAIGOW-NSW"), ("uth", "nsw", "SIM-UTH-NSW")]


def tablectl(state_dir: Path, *args: str) -> tuple[int, Any]:
    run = subprocess.run(
        [sys.executable, "-m", "controller.cli.main", *args, "--runtime-dir",
         str(state_dir / "run"), "--json"],
        capture_output=True, text=True, cwd=REPO, timeout=60,
    )
    return run.returncode, json.loads(run.stdout) if run.stdout.strip() else run.stderr


def house_net(summary: dict[str, Any]) -> int:
    # Each game's own record of the house's net, read here without controller.meters.
    if summary.get("game") == "paigow":
        return summary["settlement"]["house_net"]
    return summary["house_net"]


def boxes_add_up(figures: dict[str, Any]) -> None:
    """The table's figures are the sum of its boxes' (money by wager type and jackpot)."""
    boxes = figures["boxes"].values()
    for key in ("wagers", "payouts"):
        for kind, amount in figures[key].items():
            assert amount == sum(b[key].get(kind, 0) for b in boxes), (key, kind)
    for key in ("jackpot_contributions", "jackpot_awards"):
        assert figures[key] == sum(b[key] for b in boxes), key


@pytest.mark.parametrize(("game", "rules", "table"), GAMES)
def test_a_shift_reconciles_exactly_with_the_journal(tmp_path: Path, game: str, rules: str,
                                                      table: str) -> None:
    played = start_daemon(tmp_path, "--game", game, "--rules", rules, "--autoplay", "8",
                          "--seed", "5", "--quiet")
    _out, err = played.communicate(timeout=120)
    assert played.returncode == 0, err
    # Again, with nobody playing, so that no round closes while we look (a slow pace was not
    # enough on a loaded machine: a round closed right after the shift did).
    proc = start_daemon(tmp_path, "--game", game, "--rules", rules, "--no-players", "--quiet")
    try:
        wait_for_socket(tmp_path, proc)
        code, before = tablectl(tmp_path, "meters")
        assert code == 0
        code, closing = tablectl(tmp_path, "meters", "close-shift")
        assert code == 0, closing
        code, summary = tablectl(tmp_path, "journal", "summary")
        assert code == 0
        code, after = tablectl(tmp_path, "meters")
        status = ask(tmp_path, "status")
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=30)
    assert proc.returncode == 0

    figures = closing["figures"]
    # The replay at start gave the figures of the first run; the close carries them.
    assert before["shift"]["rounds_played"] == figures["rounds_played"] > 0
    assert figures["rounds_played"] + figures["rounds_voided"] == 8
    assert figures["rounds_played"] == summary["rounds_completed"]
    assert figures["rounds_voided"] == summary["rounds_voided"]
    assert figures["last_round"] == summary["last_round"]
    boxes_add_up(figures)
    # After the close: a new, empty shift; the lifetime keeps everything.
    assert after["shift"]["number"] == closing["shift"] + 1 == 2
    assert after["shift"]["rounds_played"] == 0 and after["shift"]["house_win"] == 0
    assert {k: v for k, v in after["lifetime"].items() if k != "boxes"} == closing["lifetime"]
    assert status["meters"]["shift"]["number"] == 2

    with Journal.open(tmp_path, table_id=table, game=game) as journal:
        records = [journal.round_record(n) for n in range(1, journal.last_round_number + 1)]
        sent = [m for m in journal.pending_outbox(100_000) if m.type == "shift_meters"]
        replayed = meters_of(journal)
    completed = [r for r in records if r is not None and r.status == "completed"]
    assert figures["house_win"] == sum(house_net(r.summary) for r in completed)
    # What head office gets is what the table showed, and the journal holds it.
    assert len(sent) == 1
    assert sent[0].payload == {"table": table, **{k: v for k, v in closing.items() if k != "seq"}}
    # A replay of the journal gives the same figures as the running daemon.
    assert replayed.as_json() == {k: v for k, v in after.items() if k not in ("table_id", "game")}


def test_uth_house_win_is_what_the_boxes_lost(tmp_path: Path) -> None:
    played = start_daemon(tmp_path, "--game", "uth", "--autoplay", "10", "--seed", "9", "--quiet")
    assert played.communicate(timeout=120) and played.returncode == 0
    with Journal.open(tmp_path, table_id="SIM-UTH-NSW", game="uth") as journal:
        meters = meters_of(journal)
    f = meters.lifetime.as_json()
    assert f["rounds_played"] + f["rounds_voided"] == 10
    assert f["wagers"].keys() >= {"ante", "blind", "play"}
    # UTH's house wins what the boxes' players lose (the jackpot is the pool's, not the house's).
    assert f["house_win"] == -sum(b["player_net"] for b in f["boxes"].values())
    assert f["jackpot_contributions"] > 0


def test_paigow_parts_follow_the_settlement() -> None:
    summary = {"game": "paigow", "settlement": {
        "house_net": 300, "banker_commission": 50,
        "results": [{"box": 2, "amount": 1000, "won": 1000, "commission": 50, "net": 950},
                    {"box": 5, "amount": 400, "won": 0, "commission": 0, "net": -400}]}}
    parts = {p.box: p for p in round_parts(summary)}
    assert parts[2].wagers == {"wager": 1000} and parts[2].payouts == {"wager": 1000}
    assert parts[5].net == -400
    meters = Meters()
    meters.record("t1", "dealer.result", [(1, "completed", summary), (2, "voided", {})])
    f = meters.shift.as_json()
    assert (f["rounds_played"], f["rounds_voided"], f["commission"], f["house_win"]) == (
        1, 1, 100, 300)


def test_shift_meters_payload_is_bounded_by_the_contract() -> None:
    meters = Meters()
    meters.record("t0", "dealer.result", [(1, "completed", {"game": "uth", "house_net": -5,
                  "boxes": [{"box": 1, "net": 5, "spots": [{"spot": "ante", "placed": 10,
                                                             "won": 10}]}]})])
    closing = meters.record("t1", "meters.close_shift", [])
    assert closing is not None
    good = {"table": "T1", **closing}
    assert contract.check_outbox_payload("shift_meters", good) == good

    def bad(change: Any) -> None:
        payload = json.loads(json.dumps(good))
        change(payload)
        with pytest.raises(contract.SchemaError):
            contract.check_outbox_payload("shift_meters", payload)

    bad(lambda p: p["figures"]["wagers"].update(ante=-1))
    bad(lambda p: p["figures"]["wagers"].update({"no such type!": 1}))
    bad(lambda p: p["figures"]["boxes"].update({str(b): {} for b in range(2, 20)}))
    bad(lambda p: p["figures"].update(house_win=10**13))
    bad(lambda p: p["figures"].update(rounds_played="7"))
    bad(lambda p: p.update(shift=0))
    bad(lambda p: p.pop("lifetime"))
    bad(lambda p: p["figures"]["boxes"]["1"].update(player_net=True))
    assert "incomplete" not in good  # whole: absent, as older tables send it

    # A close of meters replayed from a journal pruned through seq 40 says what they lack.
    lacking = {"missing_through": 40, "shift": True, "first_round_counted": 5}
    marked = {**good, "incomplete": lacking}
    assert contract.check_outbox_payload("shift_meters", marked) == marked
    assert contract.check_outbox_payload(
        "shift_meters", {**good, "incomplete": {**lacking, "first_round_counted": None}})
    for wrong in (None, [], "yes", {**lacking, "missing_through": 0},
                  {**lacking, "missing_through": 2**62 + 1}, {**lacking, "shift": 1},
                  {**lacking, "first_round_counted": 0}, {**lacking, "first_round_counted": "5"},
                  {**lacking, "note": "x" * 4000}, {"missing_through": 40, "shift": True}):
        with pytest.raises(contract.SchemaError):
            contract.check_outbox_payload("shift_meters", {**good, "incomplete": wrong})


def test_head_office_stores_each_shift_close(tmp_path: Path) -> None:
    meters = Meters()
    meters.record("t0", "dealer.result", [(1, "completed", {"game": "uth", "house_net": 0})])
    payloads = [{"table": "T1", **(meters.record(f"t{n}", "meters.close_shift", []) or {})}
                for n in (1, 2)]
    led = Ledger.open(str(tmp_path / "ho.db"))
    led.enrol({"T1": None})
    bodies = [contract.outbox_message("T1", n, n, "shift_meters", f"2026-01-0{n}T00:00:00Z", p)
              for n, p in enumerate(payloads, 1)]
    result = led.apply_batch([Incoming("outbox", "T1", b) for b in bodies])
    assert result.acks == {"T1": 2} and not result.refused
    stored = ho_meters.shift_meters(led.db, "T1")
    assert [s["shift"] for s in stored] == [2, 1]  # newest first
    assert stored[1]["figures"]["rounds_played"] == 1 and stored[0]["figures"]["rounds_played"] == 0
    assert ho_meters.shift_meters(led.db, "T9") == []
    led.close()


def test_close_shift_needs_a_supervisor_and_a_running_table(tmp_path: Path) -> None:
    from controller.control import READ_ONLY

    assert "meters" in READ_ONLY and "meters_close_shift" not in READ_ONLY
    code, err = tablectl(tmp_path, "meters", "close-shift")
    assert code == 3 and "not running" in err


JSONS = st.recursive(
    st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
        st.sampled_from(["game", "settlement", "results", "boxes", "spots", "jackpot", "box",
                         "amount", "won", "net", "placed", "spot", "payouts", "wager",
                         "house_net", "commission", "banker_commission"]), inner, max_size=6),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["completed", "voided"]), JSONS), max_size=4))
def test_meters_take_any_summary_without_raising(rounds: list[tuple[str, Any]]) -> None:
    # A journal's summaries are the machines' own, but the meters must never take the daemon
    # down (they run in its event path and at its start), whatever a summary holds.
    meters = Meters()
    meters.record("t", "x", [(n, status, s) for n, (status, s) in enumerate(rounds, 1)])
    closing = meters.record("t2", "meters.close_shift", [])
    assert closing is not None
    figures = closing["figures"]
    assert figures["rounds_played"] + figures["rounds_voided"] == len(rounds)
    assert all(isinstance(v, int) for v in figures["wagers"].values())


def test_a_checkpoint_saves_the_replay_and_a_forged_one_is_not_taken(tmp_path: Path) -> None:
    from controller.daemon.accounting import CHECKPOINT, MAX_STATE_BYTES, load_meters

    played = start_daemon(tmp_path, "--game", "uth", "--autoplay", "70", "--seed", "4", "--quiet")
    _out, err = played.communicate(timeout=120)
    assert played.returncode == 0, err
    checkpoint = tmp_path / CHECKPOINT
    assert checkpoint.is_file()  # written with every second snapshot (64 rounds)
    with Journal.open(tmp_path, table_id="SIM-UTH-NSW", game="uth") as journal:
        full = meters_of(journal).as_json()
        meters, how = load_meters(journal, tmp_path)
        assert how.startswith("checkpoint at seq ") and meters.as_json() == full
        # Stored deflated: one 4 KiB page written, not two (the meters' JSON is ~3.9 KB).
        saved = checkpoint.read_bytes()
        body = json.loads(saved)
        state = zlib.decompress(base64.b64decode(body["state_z"])).decode()
        assert len(state) > 3000 and len(saved) < 4096
        # The older form (the JSON as a string) is still taken.
        older = {k: v for k, v in body.items() if k != "state_z"}
        checkpoint.write_text(json.dumps(older | {"state": state}))
        meters, how = load_meters(journal, tmp_path)
        assert how.startswith("checkpoint at seq ") and meters.as_json() == full
        # Someone edits the figures: the MAC no longer matches, the journal is replayed.
        forged = state.replace('"house_win":', '"house_win":1', 1)
        assert forged != state
        for edited in ({"state": forged}, {"state_z": pack(forged)}):
            checkpoint.write_text(json.dumps(older | edited))
            meters, how = load_meters(journal, tmp_path)
            assert how == "full replay: the checkpoint's MAC does not match"
            assert meters.as_json() == full
        # Not base64, not deflate, or inflating past the bound (never inflated whole): refused.
        bomb = pack(state + " " * MAX_STATE_BYTES)
        for bad in ("not base64!", base64.b64encode(b"not deflate").decode(), bomb,
                    pack(state)[:-8]):
            checkpoint.write_text(json.dumps(body | {"state_z": bad}))
            meters, how = load_meters(journal, tmp_path)
            assert how.startswith("full replay: checkpoint unusable"), (bad[:20], how)
            assert meters.as_json() == full
        checkpoint.write_text("{not json")
        assert load_meters(journal, tmp_path)[1].startswith("full replay: checkpoint unusable")


def pack(state: str) -> str:
    return base64.b64encode(zlib.compress(state.encode())).decode()


def test_meters_replayed_from_a_pruned_journal_say_what_they_lack(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without meters.json, a journal pruned by retention replays only the rounds it kept:
    the meters say so (E105), the mark survives their checkpoint, and a shift close makes
    the next shift whole again (the lifetime stays marked)."""
    from controller.cli.meters_cmd import closing_lacks
    from controller.daemon.accounting import load_meters, save_checkpoint
    from controller.journal import checkpoint, segments
    from controller.meters import CLOSE_SHIFT
    from tests.support.journal import GAME, TABLE, fill, now

    monkeypatch.setattr(segments, "SEGMENT_ROUNDS", 2)
    monkeypatch.setattr(checkpoint, "WALK_WHOLE_BELOW", 0)
    with Journal.open(tmp_path, table_id=TABLE, game=GAME) as j:
        fill(j, rounds=8)  # 10 records a round, round 2 voided
        meters, how = load_meters(j, tmp_path)
        assert (meters.incomplete(), meters.lifetime.rounds_played) == (None, 7)
        j.archive()
        for state in j.retention.states():
            assert j.ack_segment(state.segment.number, state.segment.head, str(state.digest))
        assert sum(p.prune for p in j.prune(3)) == 2  # rounds 1..4: seq 1..40
        meters, how = load_meters(j, tmp_path)
        assert how == ("full replay: no checkpoint; records 1..40 were pruned: the meters"
                       " lack their rounds")
        assert meters.incomplete() == {"pruned_through_seq": 40, "lifetime": True,
                                       "shift": True}
        assert meters.lifetime.rounds_played == 4  # rounds 5..8 only
        save_checkpoint(j, meters, tmp_path)
        again, how = load_meters(j, tmp_path)
        assert how == f"checkpoint at seq {j.last_seq}"
        assert again.incomplete() == meters.incomplete()
        assert again.as_json()["incomplete"] == again.headline()["incomplete"]
        closing = again.record(now(j.last_seq + 1).utc, CLOSE_SHIFT, [])
        assert closing is not None  # the shift's close says what it lacks (docs/mqtt.md)
        assert closing["incomplete"] == {"missing_through": 40, "shift": True,
                                         "first_round_counted": 5}
        assert contract.check_outbox_payload("shift_meters", {"table": TABLE, **closing})
        assert closing_lacks(closing) == ("INCOMPLETE: rounds before 5 not counted (journal"
                                          " pruned through seq 40); head office is told so")
        assert again.incomplete() == {"pruned_through_seq": 40, "lifetime": True,
                                      "shift": False}
        closing = again.record(now(j.last_seq + 2).utc, CLOSE_SHIFT, [])
        assert closing is not None and closing["incomplete"]["shift"] is False
        assert "this shift's figures are whole" in (closing_lacks(closing) or "")
        assert closing_lacks(Meters().record("t", CLOSE_SHIFT, []) or {}) is None
