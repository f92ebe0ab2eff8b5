"""People in the money loop (issue 26): a table's own `jackpot_verified` never releases a held
hit, only a person head office authenticates does; above the dual-control threshold, and for a
forced parameter change on a pool with live tables, two different approvers are needed, each
with a reason; the same person twice is refused; a refusal by either ends it; the `decisions`
table records both signatures.

Every test runs on SQLite and on PostgreSQL (the `new_url` fixture, tests/conftest.py)."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest

from headoffice import audit
from headoffice import hits as hitcheck
from headoffice.hits import HitPolicy
from headoffice.ledger import Incoming, Ledger, LedgerError
from tests.test_headoffice_ledger import FLUSH, PARAMS, ROYAL, NewUrl, P, body, hit, inc, ledger
from tests.test_headoffice_trust import alarms, apply

OPS = ["alice", "bob"]


def held_royal(new_url: NewUrl, dual_from: int | None = None) -> Ledger:
    """A Royal Flush held for its size (an award of $50,000, 15.2.9.1); dual control from
    `dual_from` cents (None: one approver)."""
    led = ledger(new_url)
    led.policy = HitPolicy(dual_control_from=dual_from)
    apply(led, "T1", body("T1", 1, *inc(1)))
    res = apply(led, "T1", body("T1", 2, *hit(1, [ROYAL])))
    assert res.awards == [] and "waits for verification" in res.held_hits[0]
    return led


def verified(round_: int, user: str = "floor") -> tuple[str, dict]:
    return "jackpot_verified", {"round": round_, "pool_id": P, "boxes": [1],
                                "verified_by": {"uid": 1000, "user": user}}


def test_a_tables_own_verification_does_not_pay_its_held_royal(new_url: NewUrl) -> None:
    """Issue 26, 1: the table's certificate publishing `jackpot_verified {verified_by {uid
    1000, user "floor"}}` paid $50,000. Now it is recorded as the attendant's word and the hit
    waits for a person at head office."""
    led = held_royal(new_url)
    before = led.pool(P)
    res = apply(led, "T1", body("T1", 3, *verified(1)))
    assert res.acks == {"T1": 3} and res.verify_refused == []
    assert res.awards == [] and led.pool(P) == before and led.undelivered_awards() == []
    (held,) = led.held_hits()
    assert held["status"] == "pending" and held["operator"] is None
    assert held["verified_by"] == "floor (uid 1000) at table T1" and held["verified_utc"]
    assert led.decisions() == []
    # A second verification of the same hit is refused and alarmed: one attendant's word.
    res = apply(led, "T1", body("T1", 4, *verified(1, "mallory")))
    assert "already verified by floor" in res.verify_refused[0]
    assert led.held_hits()[0]["verified_by"].startswith("floor ")
    assert any("jackpot_verified from T1" in a for a in alarms(led))
    # The approver reads the verification before deciding.
    review = led.hit_review(held["hold_no"])
    assert review["verified_by"] == "floor (uid 1000) at table T1"


def test_an_approver_at_head_office_pays_it_with_a_reason(new_url: NewUrl) -> None:
    led = held_royal(new_url)
    apply(led, "T1", body("T1", 3, *verified(1)))
    (held,) = led.held_hits()
    at_hit = led.pool(P)
    assert at_hit is not None
    with pytest.raises(LedgerError, match="needs a reason"):
        led.approve_hit(held["hold_no"], operator="alice", authorised=OPS, reason="  ")
    with pytest.raises(LedgerError, match="not authorised"):
        led.approve_hit(held["hold_no"], operator="floor", authorised=OPS, reason="I saw it")
    done = led.approve_hit(held["hold_no"], operator="alice", authorised=OPS,
                           reason="camera 4 checked")
    amount = max(PARAMS.paytable.royal_minimum, at_hit.amount)  # UTH 15.2.9.1
    assert done["status"] == "approved" and done["amount"] == amount
    assert led.undelivered_awards() == [(held["hold_no"], "T1", done["award"])]
    (decided,) = led.held_hits()
    assert decided["status"] == "approved" and decided["operator"] == "alice"
    (d,) = led.decisions()
    assert (d["kind"], d["subject"], d["status"], d["signatures"]) == (
        "hit", str(held["hold_no"]), "approved", 1)
    assert (d["first_by"], d["first_reason"], d["amount"]) == ("alice", "camera 4 checked",
                                                               amount)
    assert d["first_utc"] and d["second_by"] is None
    after = led.pool(P)
    assert after is not None and after.hits == 1 and after.imbalance() == 0


def test_above_the_dual_control_threshold_two_different_approvers_pay(new_url: NewUrl) -> None:
    led = held_royal(new_url, dual_from=1_000_000)  # $10,000; the Royal pays $50,000
    (held,) = led.held_hits()
    no = held["hold_no"]
    before = led.pool(P)
    first = led.approve_hit(no, operator="alice", authorised=OPS, reason="camera 4 checked")
    assert first["status"] == "pending" and first["award"] is None
    assert led.pool(P) == before and led.undelivered_awards() == []  # one is not enough
    assert led.held_hits()[0]["status"] == "pending"
    with pytest.raises(LedgerError, match="second, different approver"):
        led.approve_hit(no, operator="alice", authorised=OPS, reason="again")
    # The second sees what the first decided.
    review = led.hit_review(no)
    assert review["signatures"] == 2 and review["first"]["first_by"] == "alice"
    assert review["first"]["first_reason"] == "camera 4 checked"
    assert review["first"]["amount"] == review["amount"] == first["amount"]
    done = led.approve_hit(no, operator="bob", authorised=OPS, reason="count agrees")
    assert done["status"] == "approved" and done["first_by"] == "alice"
    assert done["decision_no"] == first["decision_no"]
    (d,) = led.decisions()
    assert (d["status"], d["first_by"], d["second_by"]) == ("approved", "alice", "bob")
    assert (d["first_reason"], d["second_reason"]) == ("camera 4 checked", "count agrees")
    assert d["second_utc"] >= d["first_utc"]
    (decided,) = led.held_hits()
    assert decided["operator"] == "alice and bob"
    assert led.undelivered_awards() == [(no, "T1", done["award"])]
    # The first approval was said on the hit's own alarm (not a new one), which the second
    # approval cleared.
    (waited,) = [a for a in led.alarms(active_only=False) if a["kind"] == "held_hit"]
    assert "first approval by alice" in waited["last_text"] and waited["cleared_utc"]
    # The audit trail gives each person their own signature, with its reason, beside the
    # outcome (the held hit, decided by "alice and bob").
    mine = {t["action"]: t for t in audit.trail(led.db, audit.Filter(person="alice"))}
    assert "decision #" in mine["hit_first_approval"]["subject"]
    assert "camera 4 checked" in mine["hit_first_approval"]["detail"]
    (bobs,) = audit.trail(led.db, audit.Filter(person="bob"))
    assert bobs["action"] == "hit_second_approval" and "count agrees" in bobs["detail"]
    assert bobs["table_id"] == "T1"
    # Newest first: the first signature last (the outcome and the second are the same moment).
    actions = [t["action"] for t in audit.trail(led.db, audit.Filter(table="T1"))]
    assert sorted(actions[:2]) == ["hit_approved", "hit_second_approval"]
    assert actions[2:] == ["hit_first_approval"]


def test_an_award_from_the_dual_control_threshold_waits_whatever_the_hand(
        new_url: NewUrl) -> None:
    """Dual control is for every award from `dual_control_from`, not only the hands that wait
    for verification: a Flush's fixed award (UTH 15.2.9.5) that reaches the threshold is held
    and needs two people. Before, a hit that passed the checks below `verify_from` was paid at
    once, however large, with no signature at all."""
    paid_below = ledger(new_url)
    apply(paid_below, "T1", body("T1", 1, *inc(1)))
    res = apply(paid_below, "T1", body("T1", 2, *hit(1, [FLUSH])))
    ((_, award),) = res.awards  # the control: below the threshold it is paid at once
    flush = sum(p["amount"] for p in award["payouts"])
    assert flush > 0 and paid_below.held_hits() == []

    led = ledger(new_url)
    led.policy = HitPolicy(dual_control_from=flush)  # the Flush's award reaches it
    apply(led, "T1", body("T1", 1, *inc(1)))
    before = led.pool(P)
    res = apply(led, "T1", body("T1", 2, *hit(1, [FLUSH])))
    assert res.awards == [] and led.pool(P) == before
    (text,) = res.held_hits
    assert "reach the dual-control threshold" in text
    (held,) = led.held_hits()
    review = led.hit_review(held["hold_no"])
    assert (review["amount"], review["signatures"], review["checks"]) == (flush, 2, [])
    first = led.approve_hit(held["hold_no"], operator="alice", authorised=OPS,
                            reason="camera 2")
    assert first["status"] == "pending" and led.undelivered_awards() == []
    with pytest.raises(LedgerError, match="second, different approver"):
        led.approve_hit(held["hold_no"], operator="alice", authorised=OPS, reason="again")
    done = led.approve_hit(held["hold_no"], operator="bob", authorised=OPS, reason="agreed")
    assert (done["status"], done["amount"], done["first_by"]) == ("approved", flush, "alice")


def test_a_refusal_by_either_ends_a_dual_decision(new_url: NewUrl) -> None:
    led = held_royal(new_url, dual_from=1_000_000)
    no = led.held_hits()[0]["hold_no"]
    led.approve_hit(no, operator="alice", authorised=OPS, reason="looks fine")
    led.refuse_hit(no, operator="bob", authorised=OPS, reason="the cards on camera differ")
    (d,) = led.decisions()
    assert (d["status"], d["first_by"], d["second_by"]) == ("refused", "alice", "bob")
    assert led.held_hits()[0]["status"] == "refused" and led.undelivered_awards() == []
    with pytest.raises(LedgerError, match="already refused"):
        led.approve_hit(no, operator="alice", authorised=OPS, reason="changed my mind")


def test_below_the_threshold_one_approver_is_enough(new_url: NewUrl) -> None:
    led = held_royal(new_url, dual_from=10_000_000)  # $100,000: the $50,000 Royal is below
    no = led.held_hits()[0]["hold_no"]
    assert led.hit_review(no)["signatures"] == 1
    assert led.approve_hit(no, operator="alice", authorised=OPS, reason="ok")["status"] == (
        "approved")


def test_the_review_shows_the_award_the_hand_in_words_and_the_checks(new_url: NewUrl) -> None:
    led = held_royal(new_url)
    review = led.hit_review(led.held_hits()[0]["hold_no"])
    pool = led.pool(P)
    assert pool is not None
    assert review["amount"] == max(PARAMS.paytable.royal_minimum, pool.amount)
    assert review["payouts"][0]["award"] == "royal_flush" and review["checks"] == []
    assert review["hands"][0]["hand"] == "Royal Flush" and review["hands"][0]["cards"] == ROYAL
    assert (review["table_id"], review["round"]) == ("T1", 1)


def test_a_box_with_no_qualifying_hand_says_so() -> None:
    hands = hitcheck.hands_of({"entries": [
        {"box": 1, "cards": ROYAL, "wager": 100, "category": "royal_flush"},
        {"box": 2, "cards": ["2c", "7d", "Qh", "Jh", "Th"], "wager": 100,
         "category": "one_pair"}]})
    assert [h["hand"] for h in hands] == ["Royal Flush", "no qualifying hand"]


def _live(led: Ledger, table: str) -> None:
    led.apply_batch([Incoming("birth", table, {"v": 1, "table": table, "pool_id": P,
                                               "pending_hits": []})])


def test_a_forced_change_on_a_live_pool_needs_two_approvers_and_a_reason(
        new_url: NewUrl) -> None:
    led = ledger(new_url)
    _live(led, "T1")
    rate = {"increment": Fraction(3, 10)}
    with pytest.raises(LedgerError, match="needs a reason"):
        led.set_params(P, rate, operator="alice", authorised=OPS, force=True, reason="")
    first = led.set_params(P, rate, operator="alice", authorised=OPS, force=True,
                           reason="regulator letter 12")
    assert first.status == "pending"
    pool = led.pool(P)
    assert pool is not None and pool.params.increment == Fraction(1, 4)  # nothing changed
    with pytest.raises(LedgerError, match="second, different approver"):
        led.approve_change(first.decision_no, operator="alice", authorised=OPS, reason="again")
    with pytest.raises(LedgerError, match="needs a reason"):
        led.approve_change(first.decision_no, operator="bob", authorised=OPS, reason="")
    done = led.approve_change(first.decision_no, operator="bob", authorised=OPS,
                              reason="checked the letter")
    assert done.status == "applied" and done.first_by == "alice"
    pool = led.pool(P)
    assert pool is not None and pool.params.increment == Fraction(3, 10)
    d = led.decision(first.decision_no)
    assert d is not None and (d["kind"], d["status"], d["first_by"], d["second_by"]) == (
        "params", "approved", "alice", "bob")
    assert d["detail"]["old"]["increment"] == "1/4" and d["detail"]["live"] == ["T1"]
    log = led.param_log(P)
    assert [r["outcome"].split(":")[0] for r in log] == ["applied", "pending", "applied"]
    assert log[-1]["operator"] == "alice and bob" and json.loads(log[-1]["new"])[
        "increment"] == "3/10"


def test_only_an_operator_changes_parameters_even_with_no_table_live(new_url: NewUrl) -> None:
    led = ledger(new_url)
    with pytest.raises(LedgerError, match="'mallory' is not authorised to change parameters"):
        led.set_params(P, {"seed": 1}, operator="mallory", authorised=OPS, reason="mine")
    assert led.pool(P).params.seed == PARAMS.seed  # type: ignore[union-attr]
    assert led.param_log(P)[-1]["outcome"].startswith("refused: operator 'mallory'")
    done = led.set_params(P, {"seed": 600_000}, operator="alice", authorised=OPS,
                          reason="new sign")
    assert done.status == "applied" and led.decision(done.decision_no)["first_by"] == (  # type: ignore[index]
        "alice")


def test_a_pending_change_refused_or_overtaken_changes_nothing(new_url: NewUrl) -> None:
    led = ledger(new_url)
    _live(led, "T1")
    a = led.set_params(P, {"seed": 600_000}, operator="alice", authorised=OPS, force=True,
                       reason="new sign")
    led.refuse_change(a.decision_no, operator="bob", authorised=OPS, reason="not approved")
    assert led.pool(P).params.seed == PARAMS.seed  # type: ignore[union-attr]
    with pytest.raises(LedgerError, match="already refused"):
        led.approve_change(a.decision_no, operator="bob", authorised=OPS, reason="ok")
    b = led.set_params(P, {"seed": 600_000}, operator="alice", authorised=OPS, force=True,
                       reason="new sign")
    c = led.set_params(P, {"seed": 700_000}, operator="bob", authorised=OPS, force=True,
                       reason="other sign")
    led.approve_change(c.decision_no, operator="alice", authorised=OPS, reason="ok")
    # b was signed against the seed before c: it lapses, it is not applied over c.
    with pytest.raises(LedgerError, match="changed since the first approval"):
        led.approve_change(b.decision_no, operator="bob", authorised=OPS, reason="ok")
    assert led.pool(P).params.seed == 700_000  # type: ignore[union-attr]
    assert led.decision(b.decision_no)["status"] == "lapsed"  # type: ignore[index]


def test_an_older_ledger_gets_the_decisions_and_the_verification_columns(
        new_url: NewUrl) -> None:
    url = new_url()
    led = Ledger.open(url)
    led.db.execute("DROP TABLE decisions")
    for column in ("verified_by", "verified_utc"):
        led.db.execute(f"ALTER TABLE held_hits DROP COLUMN {column}")
    led.close()
    led = Ledger.open(url)
    assert {"verified_by", "verified_utc"} <= set(led.db.columns("held_hits"))
    assert "second_reason" in led.db.columns("decisions") and led.decisions() == []
    led.close()


def test_the_dual_control_threshold_is_configured() -> None:
    from headoffice.config import HeadOfficeConfigError, validate_text

    base = '[database]\nurl = "x.db"\n[service]\n'
    assert validate_text(base).hit_policy().dual_control_from == 1_000_000  # $10,000.00
    assert validate_text(base + "dual_control_from = 2500000\n").hit_policy(
    ).dual_control_from == 2_500_000
    assert validate_text(base + 'dual_control_from = "none"\n').dual_control_from is None
    for bad, why in (("0", "must be >= 1 cent"), ('"lots"', 'cents (an integer >= 1) or "none"'),
                     ("1.5", "expected")):
        with pytest.raises(HeadOfficeConfigError, match=r"service\.dual_control_from") as info:
            validate_text(base + f"dual_control_from = {bad}\n")
        assert why in str(info.value)


def test_two_second_approvals_at_once_apply_the_change_once(new_url: NewUrl) -> None:
    """Each on its own connection, as two operators' consoles: one applies it, the other finds
    it decided (PostgreSQL: the decision is read again under the pool's lock)."""
    import threading

    url = new_url()
    led = Ledger.open(url)
    led.ensure_pool(P, PARAMS)
    led.enrol({"T1": None})
    _live(led, "T1")
    first = led.set_params(P, {"seed": 600_000}, operator="alice", authorised=["alice", "bob",
                                                                                "carol"],
                           force=True, reason="new sign")
    outcomes: list[str] = []
    barrier = threading.Barrier(2)

    def second(who: str) -> None:
        other = Ledger.open(url)
        try:
            barrier.wait()
            other.approve_change(first.decision_no, operator=who,
                                 authorised=["alice", "bob", "carol"], reason="ok")
            outcomes.append("applied")
        except LedgerError as exc:
            outcomes.append(str(exc))
        finally:
            other.close()

    threads = [threading.Thread(target=second, args=(w,)) for w in ("bob", "carol")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes) == ["applied", f"parameter change #{first.decision_no} was already"
                                           " approved"]
    d = led.decision(first.decision_no)
    assert d is not None and d["status"] == "approved" and d["second_by"] in ("bob", "carol")
    assert [r["outcome"].split(":")[0] for r in led.param_log(P)] == ["applied", "pending",
                                                                       "applied"]
    led.close()


def test_two_approvals_of_a_held_royal_at_once_are_the_two_signatures(new_url: NewUrl) -> None:
    """alice and bob approve at the same moment, each on their own connection: one is the
    first signature, the other the second; it is paid once."""
    import threading

    led = held_royal(new_url, dual_from=1_000_000)
    url, no = led.db.url, led.held_hits()[0]["hold_no"]
    done: list[str] = []
    barrier = threading.Barrier(2)

    def approve(who: str) -> None:
        other = Ledger.open(url, HitPolicy(dual_control_from=1_000_000))
        try:
            barrier.wait()
            done.append(other.approve_hit(no, operator=who, authorised=OPS,
                                          reason="seen")["status"])
        finally:
            other.close()

    threads = [threading.Thread(target=approve, args=(w,)) for w in ("alice", "bob")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(done) == ["approved", "pending"]
    (d,) = led.decisions()
    assert d["status"] == "approved" and {d["first_by"], d["second_by"]} == {"alice", "bob"}
    pool = led.pool(P)
    assert pool is not None and pool.hits == 1 and pool.imbalance() == 0
    assert len(led.undelivered_awards()) == 1
    led.close()
