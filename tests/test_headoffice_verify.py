"""A Royal Flush held at head office for its size waits for a person at head office (UTH rule 15:
a large award waits before the pool resets). The table's `jackpot_verified` (the attendant's
verification, issue 12) is recorded against the held hit for that person to see and never pays
it (issue 26: the name in it is the table's word); for a hit that does not add up, an unknown
round, another table's hit, a hit not held or one verified already, it is refused with an alarm
and changes nothing.

Every test runs on SQLite and on PostgreSQL (the `new_url` fixture, tests/conftest.py)."""

from __future__ import annotations

from typing import Any

import pytest

from headoffice.hits import HitPolicy
from headoffice.ledger import Ledger
from shared.link import contract
from tests.test_headoffice_ledger import PARAMS, ROYAL, NewUrl, P, body, hit, inc, ledger
from tests.test_headoffice_trust import FORGERIES, alarms, apply


def verified(round_: int, user: str = "carol", boxes: list[int] | None = None,
             pool: str = P) -> tuple[str, dict[str, Any]]:
    return "jackpot_verified", {"round": round_, "pool_id": pool, "boxes": boxes or [1],
                                "verified_by": {"uid": 1001, "user": user}}


def held_royal(new_url: NewUrl) -> Ledger:
    led = ledger(new_url)
    apply(led, "T1", body("T1", 1, *inc(1)))
    res = apply(led, "T1", body("T1", 2, *hit(1, [ROYAL])))
    assert res.awards == [] and "waits for verification" in res.held_hits[0]
    return led


def test_the_attendants_verification_is_recorded_and_pays_nothing(new_url: NewUrl) -> None:
    led = held_royal(new_url)
    at_hit = led.pool(P)
    assert at_hit is not None and at_hit.hits == 0
    res = apply(led, "T1", body("T1", 3, *verified(1)))
    assert res.acks == {"T1": 3} and res.verify_refused == [] and res.awards == []
    assert res.verified == [(1, "T1", "carol")]
    (held,) = led.held_hits()
    assert held["status"] == "pending" and held["operator"] is None
    assert held["verified_by"] == "carol (uid 1001) at table T1" and held["verified_utc"]
    assert led.pool(P) == at_hit and led.undelivered_awards() == []
    # A person at head office pays it: 15.2.9.1 on the meter as it was at the hit; then the
    # pool resets to its seed.
    led.policy = HitPolicy(dual_control_from=None)
    done = led.approve_hit(held["hold_no"], operator="alice", authorised=["alice"],
                           reason="camera 4 and the attendant agree")
    (royal,) = done["award"]["payouts"]
    assert royal["award"] == "royal_flush"
    assert royal["amount"] == max(PARAMS.paytable.royal_minimum, at_hit.amount)
    after = led.pool(P)
    assert after is not None and after.hits == 1 and after.amount == PARAMS.seed
    assert after.imbalance() == 0
    (decided,) = led.held_hits()
    assert decided["operator"] == "alice" and decided["verified_by"].startswith("carol ")
    assert led.db.one("SELECT cleared_utc FROM alarms WHERE kind = 'held_hit'")["cleared_utc"]
    # A verification after the decision finds the hit decided: refused.
    res = apply(led, "T1", body("T1", 4, *verified(1)))
    assert len(res.verify_refused) == 1 and "already approved" in res.verify_refused[0]
    assert led.pool(P) == after


REFUSED = {
    "an unknown round": ("T1", lambda: verified(7), "no hit of this table held"),
    "another table's hit": ("T2", lambda: verified(1), "no hit of this table held"),
    "boxes that are not the hit's": ("T1", lambda: verified(1, boxes=[2]), "not the hit's"),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_a_verification_for_no_held_hit_of_the_table_is_refused(new_url: NewUrl,
                                                                case: str) -> None:
    led = held_royal(new_url)
    table, message, why = REFUSED[case]
    pool = led.pool(P)
    seq = 3 if table == "T1" else 1
    res = apply(led, table, body(table, seq, *message()))
    assert res.acks == {table: seq}  # refused, recorded, the table's next messages go on
    assert len(res.verify_refused) == 1 and why in res.verify_refused[0]
    assert res.verified == [] and res.awards == []
    assert led.pool(P) == pool
    (still,) = led.held_hits(pending_only=True)
    assert still["operator"] is None and still["verified_by"] is None
    assert led.undelivered_awards() == []
    assert any("jackpot_verified" in a and why in a for a in alarms(led))


def test_a_verification_of_a_hit_that_does_not_add_up_is_refused(new_url: NewUrl) -> None:
    led = ledger(new_url)
    msgs = FORGERIES["a box that did not wager"]()  # a Royal from a box with no wager
    apply(led, "T1", *msgs)
    pool = led.pool(P)
    res = apply(led, "T1", body("T1", len(msgs) + 1, *verified(1)))
    assert len(res.verify_refused) == 1 and "does not add up" in res.verify_refused[0]
    assert "15.2.4" in res.verify_refused[0] and res.verified == []
    assert led.pool(P) == pool and led.undelivered_awards() == []
    (still,) = led.held_hits(pending_only=True)
    assert still["status"] == "pending"


def test_a_hit_refused_at_head_office_is_never_paid_on_a_verification(new_url: NewUrl) -> None:
    """A refused hit stays refused: the table's verification cannot pay it."""
    led = held_royal(new_url)
    (held,) = led.held_hits()
    led.refuse_hit(held["hold_no"], operator="alice", authorised=["alice"], reason="camera")
    pool = led.pool(P)
    res = apply(led, "T1", body("T1", 3, *verified(1)))
    assert "already refused" in res.verify_refused[0] and led.pool(P) == pool


@pytest.mark.parametrize("payload", [
    {"round": 1, "pool_id": P, "boxes": [], "verified_by": {"uid": 1, "user": "carol"}},
    {"round": 1, "pool_id": P, "boxes": [1, 1], "verified_by": {"uid": 1, "user": "carol"}},
    {"round": 1, "pool_id": P, "boxes": [8], "verified_by": {"uid": 1, "user": "carol"}},
    {"round": 1, "pool_id": P, "boxes": [None, []], "verified_by": {"uid": 1, "user": "c"}},
    {"round": 1, "pool_id": P, "boxes": [1], "verified_by": {"uid": 1, "user": "c" * 65}},
    {"round": 1, "pool_id": P, "boxes": [1], "verified_by": {"uid": 1, "user": ""}},
    {"round": 1, "pool_id": P, "boxes": [1], "verified_by": {"uid": -1, "user": "carol"}},
    {"round": 1, "pool_id": P, "boxes": [1], "verified_by": "carol"},
    {"round": 1, "pool_id": P, "boxes": [1]},
])
def test_the_contract_bounds_a_verification(payload: dict[str, Any]) -> None:
    with pytest.raises(contract.SchemaError):
        contract.check_outbox_payload("jackpot_verified", payload)
    good = {**payload, "boxes": [1], "verified_by": {"uid": 1001, "user": "carol"}}
    assert contract.check_outbox_payload("jackpot_verified", good) == good


@pytest.mark.parametrize("type_", ["jackpot_increment", "jackpot_cancel"])
def test_unhashable_boxes_are_a_schema_error_not_a_crash(type_: str) -> None:
    """Found by tests/test_fuzz_parsers.py: boxes [None, []] raised TypeError (unhashable)."""
    with pytest.raises(contract.SchemaError, match="do not match"):
        contract.check_outbox_payload(type_, {"round": 3, "pool_id": P, "amount": 200,
                                              "wager": 100, "wagers": 2, "boxes": [None, []]})
