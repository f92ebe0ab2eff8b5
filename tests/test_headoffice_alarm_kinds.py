"""Every alarm issue 26 lists, raised where head office learns of it and ended: a condition
clears when it ends (a stopped pool resumed, a broker back), an event when a person acknowledges
it (who, when, a note). Complements tests/test_headoffice_alarms.py (tables offline and out of
service, held hits, workers not heard from, the parameter change raised) and
tests/test_headoffice_alarms_live.py (a table cut off through a real broker).

The ledger tests run on SQLite and PostgreSQL (`new_url`); the broker test runs a real Mosquitto
and a real head-office worker."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from headoffice import audit
from headoffice.hits import HitPolicy
from headoffice.ledger import Incoming, Ledger
from headoffice.ledger.alarms import KINDS
from tests import mqtt_broker
from tests.support.link import head_office, run, wait_for
from tests.test_headoffice_ledger import ROYAL, NewUrl, P, body, hit, inc, ledger, script
from tests.test_headoffice_recovery import recovered
from tests.test_headoffice_trust import OPS, apply


def active(led: Ledger, kind: str) -> list[dict[str, Any]]:
    return [a for a in led.alarms(active_only=True) if a["kind"] == kind]


def acknowledged_ends_it(led: Ledger, kind: str) -> dict[str, Any]:
    """The one active alarm of `kind`, acknowledged: an event ends with its acknowledgement,
    which the audit trail records. Returns the alarm as it was raised."""
    (a,) = active(led, kind)
    assert a["severity"] == KINDS[kind].severity and not KINDS[kind].condition
    done = led.ack_alarm(a["alarm_no"], person="alice", note="looked into it")
    assert done["cleared_utc"] == done["acked_utc"] and done["acked_by"] == "alice"
    assert active(led, kind) == []
    assert any(
        e["action"] == "alarm_ack" and e["subject"] == f"alarm #{a['alarm_no']}"
        for e in audit.trail(led.db)
    )
    return a


def test_a_table_that_starts_behind_head_office(new_url: NewUrl) -> None:
    led = ledger(new_url)
    apply(led, "T1", body("T1", 1, *inc(1)), body("T1", 2, *inc(2)))  # journal records 10, 20
    led.apply_batch(
        [
            Incoming(
                "birth",
                "T1",
                {
                    "v": 1,
                    "table": "T1",
                    "pool_id": P,
                    "journal_seq": 12,
                    "outbox": {"acked_upto": 1, "pending": 0},
                },
            )
        ]
    )
    a = acknowledged_ends_it(led, "table_behind")
    assert a["table_id"] == "T1" and "started behind head office" in a["text"]


def test_a_chain_mismatch(new_url: NewUrl) -> None:
    led = ledger(new_url)
    apply(led, "T1", *(body("T1", s, *inc(s)) for s in (1, 2, 3)))
    t, p = inc(2)
    apply(led, "T1", body("T1", 2, t, {**p, "round": 9}))  # seq 2 again, other content
    a = acknowledged_ends_it(led, "chain_mismatch")
    assert "seq 2 differs" in a["text"]


def test_a_journal_loss_reported(new_url: NewUrl) -> None:
    led = ledger(new_url)
    led.apply_batch([Incoming("outbox", "T1", m) for m in script("T1", [(1, "ok")] * 4)])
    led.apply_batch([Incoming("outbox", "T1", body("T1", 9, "table_recovered", recovered(5, 9)))])
    a = acknowledged_ends_it(led, "journal_loss")
    assert "accepted a loss of journal records" in a["text"]


def test_a_refused_wager(new_url: NewUrl) -> None:
    led = ledger(new_url)
    t, p = inc(1)
    res = apply(led, "T1", body("T1", 1, t, {**p, "amount": 999}))  # not wager x wagers
    assert res.refused and led.pool(P).wagers_in == 0  # type: ignore[union-attr]
    a = acknowledged_ends_it(led, "refused")
    assert a["table_id"] == "T1" and "message T1/1 refused" in a["text"]


def test_a_parameter_change_ends_when_acknowledged(new_url: NewUrl) -> None:
    led = ledger(new_url)
    led.set_params(P, {"seed": 600_000}, operator="alice", authorised=OPS, reason="new sign")
    a = acknowledged_ends_it(led, "param_change")
    assert "parameters changed by alice" in a["text"]


def test_a_conservation_failure_stays_until_the_pool_is_resumed(new_url: NewUrl) -> None:
    led = ledger(new_url)
    msgs = script("T1", [(1, "ok"), (2, "ok")])
    led.apply_batch([Incoming("outbox", "T1", m) for m in msgs[:2]])
    led.db.execute("UPDATE pools SET amount = amount + 1 WHERE id = ?", (P,))  # tampering
    assert led.apply_batch([Incoming("outbox", "T1", m) for m in msgs[2:]]).stopped == [P]
    (a,) = active(led, "conservation")
    assert a["severity"] == "critical" and a["pool_id"] == P and "STOPPED" in a["text"]
    # A condition: acknowledging it says someone is on it, it does not end it.
    led.ack_alarm(a["alarm_no"], person="alice", note="investigating the books")
    assert [x["alarm_no"] for x in active(led, "conservation")] == [a["alarm_no"]]
    led.db.execute("UPDATE pools SET amount = amount - 1 WHERE id = ?", (P,))
    led.resume_pool(P, operator="alice", authorised=OPS, reason="the meter put back")
    assert active(led, "conservation") == []
    (done,) = [x for x in led.alarms(active_only=False) if x["alarm_no"] == a["alarm_no"]]
    assert done["cleared_utc"] and done["acked_by"] == "alice"


@pytest.mark.skipif(not mqtt_broker.available(), reason="mosquitto not installed")
def test_a_broker_down_is_an_alarm_until_the_worker_is_back_on_it(
    broker: mqtt_broker.Broker, tmp_path: Path
) -> None:
    db = tmp_path / "ledger.db"

    def broker_alarms(led: Ledger, active_only: bool) -> list[dict[str, Any]]:
        return [
            a
            for a in led.alarms(active_only=active_only)
            if a["kind"] == "worker_down" and str(a["subject"]).startswith("broker:")
        ]

    async def main() -> None:
        async with head_office(db, broker) as (worker,):
            led = Ledger.open(str(db))
            try:
                assert broker_alarms(led, True) == []
                broker.kill()  # what a power cut of the broker's machine looks like

                async def raised() -> bool:
                    return bool(await asyncio.to_thread(broker_alarms, led, True))

                await wait_for(raised, 60, "the broker-down alarm", every=0.1)
                (a,) = broker_alarms(led, True)
                assert a["severity"] == "critical"
                assert a["subject"] == f"broker:{worker.cfg.broker.client_id}"
                assert "lost its broker connection" in a["text"]
                await asyncio.to_thread(broker.start)

                async def cleared() -> bool:
                    return not await asyncio.to_thread(broker_alarms, led, True)

                await wait_for(cleared, 60, "the broker-down alarm cleared", every=0.1)
                (done,) = broker_alarms(led, False)
                assert done["alarm_no"] == a["alarm_no"] and done["cleared_utc"]
            finally:
                led.close()

    run(main())


def test_a_held_hit_stays_an_alarm_through_the_tables_verification_and_a_first_approval(
    new_url: NewUrl,
) -> None:
    """Only a person at head office ends a held hit's alarm: not the table's own
    `jackpot_verified` (its word, recorded), nor a first approval under dual control."""
    led = ledger(new_url)
    led.policy = HitPolicy(dual_control_from=1_000_000)  # the Royal's $50,000 needs two
    apply(led, "T1", body("T1", 1, *inc(1)), body("T1", 2, *hit(1, [ROYAL])))
    (a,) = active(led, "held_hit")
    apply(
        led,
        "T1",
        body(
            "T1",
            3,
            "jackpot_verified",
            {"round": 1, "pool_id": P, "boxes": [1], "verified_by": {"uid": 1000, "user": "floor"}},
        ),
    )
    (held,) = led.held_hits()
    assert held["verified_by"] and [x["alarm_no"] for x in active(led, "held_hit")] == [
        a["alarm_no"]
    ]
    led.approve_hit(
        held["hold_no"], operator="alice", authorised=["alice", "bob"], reason="camera 4"
    )
    assert [x["alarm_no"] for x in active(led, "held_hit")] == [a["alarm_no"]]
    led.approve_hit(
        held["hold_no"], operator="bob", authorised=["alice", "bob"], reason="count agrees"
    )
    assert active(led, "held_hit") == []
