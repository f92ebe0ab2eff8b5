"""Head office's alarm model (headoffice/ledger/alarms.py) on SQLite and PostgreSQL: one active
alarm per condition, cleared when the condition ends, acknowledged once with who, when and a
note; the conditions found by looking (tables silent or offline, workers not heard, held hits
waiting); an older ledger's alarms upgraded as history."""

from __future__ import annotations

import pytest

from headoffice import audit
from headoffice.ledger import Incoming, Ledger, LedgerError
from headoffice.localtime import zone
from shared.link import contract
from tests.test_headoffice_ledger import NewUrl, P, _raw_connection, body, ledger, result
from tests.test_headoffice_trust import OPS, ROYAL, apply, two_boxes

# `body`, `ledger` and the pool/tables come from the ledger's own tests.


def active(led: Ledger, kind: str) -> list[dict]:
    return [a for a in led.alarms(active_only=True) if a["kind"] == kind]


def test_a_condition_seen_again_is_one_alarm_until_it_clears(new_url: NewUrl) -> None:
    led = ledger(new_url)
    first = led.alarm("T1 offline", None, "T1", kind="table_offline")
    again = led.alarm("T1 still offline", None, "T1", kind="table_offline")
    other = led.alarm("T2 offline", None, "T2", kind="table_offline")
    assert first == again != other
    (a,) = [x for x in active(led, "table_offline") if x["table_id"] == "T1"]
    assert (a["repeats"], a["text"], a["last_text"], a["severity"]) == (
        2, "T1 offline", "T1 still offline", "warning")
    assert a["cleared_utc"] is None and led.active_alarm_count() == 2
    assert led.clear_alarm("table_offline", None, "T1") == 1
    assert led.clear_alarm("table_offline", None, "T1") == 0  # nothing active: nothing cleared
    assert [x["table_id"] for x in active(led, "table_offline")] == ["T2"]
    # The condition again, after it ended: a new alarm, the old one kept as history.
    assert led.alarm("T1 offline again", None, "T1", kind="table_offline") > other
    history = [x for x in led.alarms(active_only=False) if x["table_id"] == "T1"]
    assert [x["cleared_utc"] is None for x in history] == [True, False]
    with pytest.raises(ValueError, match="no alarm kind"):
        led.alarm("x", kind="no_such_kind")


def test_acknowledgement_records_who_when_and_a_note_once(new_url: NewUrl) -> None:
    led = ledger(new_url)
    cond = led.alarm("T1 offline", None, "T1", kind="table_offline")
    event = led.alarm("message T1/5 refused: bad", P, "T1", kind="refused")
    with pytest.raises(LedgerError, match="needs a note"):
        led.ack_alarm(cond, person="alice", note="   ")
    with pytest.raises(LedgerError, match="one line of at most 500"):
        led.ack_alarm(cond, person="alice", note="x\ny")
    with pytest.raises(LedgerError, match="no alarm #999"):
        led.ack_alarm(999, person="alice", note="seen")
    a = led.ack_alarm(cond, person="alice", note="called the pit", client="test")
    assert (a["acked_by"], a["ack_note"]) == ("alice", "called the pit") and a["acked_utc"]
    # A condition stays active until it ends; an event ends with its acknowledgement.
    assert a["cleared_utc"] is None
    e = led.ack_alarm(event, person="victor", note="wager fixed on T1")
    assert e["cleared_utc"] == e["acked_utc"]
    with pytest.raises(LedgerError, match="already acknowledged by alice"):
        led.ack_alarm(cond, person="victor", note="me too")
    assert [x["alarm_no"] for x in led.alarms(active_only=True)] == [cond]
    # Both in the audit trail, with who and the note.
    trail = audit.trail(led.db)
    acks = [(t["person"], t["subject"]) for t in trail if t["action"] == "alarm_ack"]
    assert acks == [("victor", f"alarm #{event}"), ("alice", f"alarm #{cond}")]
    (mine,) = [t for t in trail if t["subject"] == f"alarm #{cond}"]
    assert mine["detail"].endswith("note: called the pit") and mine["table_id"] == "T1"


def test_a_held_hit_is_an_alarm_until_it_is_decided(new_url: NewUrl) -> None:
    led = ledger(new_url)
    apply(led, "T1", body("T1", 1, *result(1)),
          body("T1", 2, "jackpot_hit", two_boxes(1, ROYAL, ROYAL)))
    (held,) = led.held_hits()
    (a,) = active(led, "held_hit")
    assert a["table_id"] == "T1" and a["pool_id"] == P and "HELD for approval" in a["text"]
    # Seen again by the sweep (every heartbeat): the same alarm.
    led.sweep_alarms(led.clock(), 90.0, 3.0)
    assert [x["alarm_no"] for x in active(led, "held_hit")] == [a["alarm_no"]]
    led.refuse_hit(held["hold_no"], operator="alice", authorised=OPS, reason="forged")
    assert active(led, "held_hit") == []
    (done,) = [x for x in led.alarms(active_only=False) if x["kind"] == "held_hit"]
    assert done["cleared_utc"] is not None and done["acked_utc"] is None
    # The refusal is in the trail, with its reason.
    (entry,) = [t for t in audit.trail(led.db) if t["action"] == "hit_refused"]
    assert (entry["person"], entry["table_id"], entry["detail"]) == ("alice", "T1",
                                                                     "reason: forged")


def test_the_sweep_raises_and_clears_what_it_sees(new_url: NewUrl) -> None:
    led = ledger(new_url)
    now = {"t": 1_000_000.0}
    led.clock = lambda: now["t"]
    led.apply_batch([Incoming("birth", "T1", {"v": 1, "table": "T1", "pool_id": P})])
    led.sweep_alarms(now["t"], 90.0, 3.0)
    assert active(led, "table_offline") == []
    now["t"] += 91  # silent for longer than the live window
    led.sweep_alarms(now["t"], 90.0, 3.0)
    (a,) = active(led, "table_offline")
    assert a["table_id"] == "T1" and "silent for 91 s" in a["text"]
    led.sweep_alarms(now["t"] + 1, 90.0, 3.0)
    assert [x["repeats"] for x in active(led, "table_offline")] == [1]  # not raised twice
    led.apply_batch([Incoming("status", "T1", {"v": 1, "table": "T1", "state": "online"})])
    assert active(led, "table_offline") == []  # heard: cleared at once
    # Its own word (or its broker's will): offline, an alarm at once; online clears it.
    led.apply_batch([Incoming("status", "T1", {"v": 1, "table": "T1", "state": "offline"})])
    assert [x["table_id"] for x in active(led, "table_offline")] == ["T1"]
    led.apply_batch([Incoming("birth", "T1", {"v": 1, "table": "T1", "pool_id": P})])
    assert active(led, "table_offline") == []
    # A worker not heard from within the stale time; heard again, cleared.
    led.db.execute("INSERT INTO ho_workers (worker, seen_epoch) VALUES ('w1', ?)",
                   (now["t"] - 10,))
    led.sweep_alarms(now["t"], 90.0, 3.0)
    (w,) = active(led, "worker_down")
    assert w["subject"] == "w1" and "not heard from for 10 s" in w["text"]
    led.db.execute("UPDATE ho_workers SET seen_epoch = ?", (now["t"],))
    led.sweep_alarms(now["t"], 90.0, 3.0)
    assert active(led, "worker_down") == []


def test_a_table_out_of_service_is_an_alarm_while_it_says_so(new_url: NewUrl) -> None:
    led = ledger(new_url)
    birth = contract.parse_birth(contract.dumps(contract.birth_message(
        "T1", "2026-01-01T00:00:00Z", {"pool_id": P, "software": "1.2.3",
                                       "in_service": False,
                                       "out_of_service": "journal write failed"})), "T1")
    led.apply_batch([Incoming("birth", "T1", birth)])
    (a,) = active(led, "table_out_of_service")
    assert a["severity"] == "critical" and "journal write failed" in a["text"]
    status = contract.status_message("T1", "online", in_service=True)
    led.apply_batch([Incoming("status", "T1", contract.parse_status(contract.dumps(status)))])
    assert active(led, "table_out_of_service") == []
    # A will (or an older table) says nothing about service: nothing changes.
    led.alarm("T1 out", None, "T1", kind="table_out_of_service")
    will = contract.status_message("T1", "offline")
    led.apply_batch([Incoming("status", "T1", contract.parse_status(contract.dumps(will)))])
    assert len(active(led, "table_out_of_service")) == 1


@pytest.mark.parametrize("field, value, why", [
    ("in_service", "no", "in_service must be true or false"),
    ("out_of_service", "x" * 201, "'out_of_service' is not a valid value"),
])
def test_the_service_fields_are_checked(field: str, value: object, why: str) -> None:
    status = {**contract.status_message("T1", "online"), field: value}
    with pytest.raises(contract.SchemaError, match=why):
        contract.parse_status(contract.dumps(status))
    birth = {**contract.birth_message("T1", "2026-01-01T00:00:00Z", {}), field: value}
    with pytest.raises(contract.SchemaError, match=why):
        contract.parse_birth(contract.dumps(birth))
    with pytest.raises(contract.SchemaError, match="'software' is not a valid value"):
        contract.parse_birth(contract.dumps({**birth, field: True if field == "in_service"
                                             else None, "software": "v" * 65}))


def test_a_parameter_change_is_an_alarm_and_in_the_trail(new_url: NewUrl) -> None:
    led = ledger(new_url)
    led.set_params(P, {"seed": 600_000}, operator="alice", authorised=OPS, reason="new promotion")
    (a,) = active(led, "param_change")
    assert a["pool_id"] == P and a["severity"] == "notice" and "by alice" in a["text"]
    (entry,) = [t for t in audit.trail(led.db) if t["action"] == "param_set"]
    assert entry["person"] == "alice" and "seed $5,000.00 -> $6,000.00" in entry["detail"]
    # Narrowed to a table, a pool's entries are left out; to a person, only theirs.
    assert audit.trail(led.db, audit.Filter(table="T1")) == []
    assert {t["person"] for t in audit.trail(led.db, audit.Filter(person="config"))} == {
        "config"}


def test_an_older_ledgers_alarms_are_history(new_url: NewUrl) -> None:
    """Alarms recorded before kinds: kept, kind `legacy`, cleared by the upgrade (not counted
    as active); new ones go on numbering after them."""
    url = new_url.bare()  # the old table is made before the ledger's
    ph = "%s" if url.startswith("postgresql://") else "?"
    key = ("BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY" if ph == "%s"
           else "INTEGER PRIMARY KEY")
    conn = _raw_connection(url)
    conn.execute(f"CREATE TABLE alarms (alarm_no {key}, utc TEXT NOT NULL, pool_id TEXT,"
                 " table_id TEXT, text TEXT NOT NULL)")
    conn.execute(f"INSERT INTO alarms (utc, text) VALUES ({ph}, {ph})",
                 ("2026-01-01T00:00:00.000Z", "APPROVED by alice"))
    conn.close()
    led = Ledger.open(url)
    (old,) = led.alarms(active_only=False)
    assert (old["kind"], old["text"], old["repeats"]) == ("legacy", "APPROVED by alice", 1)
    assert old["cleared_utc"] is not None and led.active_alarm_count() == 0
    assert led.alarm("new", None, "T1", kind="table_offline") == 2
    led.close()


def test_times_are_shown_in_the_casinos_zone() -> None:
    from headoffice.localtime import local_time, to_utc

    sydney = zone("Australia/Sydney")
    assert local_time("2026-11-27T23:57:26.023Z", sydney) == "2026-11-28 10:57:26 AEDT"
    assert local_time("2026-06-01T00:00:00.000Z", sydney) == "2026-06-01 10:00:00 AEST"
    assert to_utc("2026-11-28 10:57", sydney, "since") == "2026-11-27T23:57:00.000Z"
    f = audit.Filter.of(sydney, since="2026-11-28", until="2026-11-28")
    assert (f.since, f.until) == ("2026-11-27T13:00:00.000Z", "2026-11-28T13:00:00.000Z")
    with pytest.raises(Exception, match="not an IANA zone name"):
        zone("Mars/Olympus_Mons")
    with pytest.raises(Exception, match="since: a date YYYY-MM-DD"):
        audit.Filter.of(sydney, since="yesterday")
