"""Head office trusts nothing a table says about money (issue 12): only enrolled tables, a hit
only for a round whose jackpot wagers it ledgered, from boxes that wagered, with cards that can
exist together and make the claimed hands (UTH 15.2.6, 15.2.8, rule 3.1); anything else, and every
Royal Flush (the verification threshold), is held PENDING for an operator and never paid until
approved, who and when recorded. A table whose sequence goes backwards or whose messages fork
is alarmed; the table's chain head is kept for an auditor.

Every test runs on SQLite and on PostgreSQL (the `new_url` fixture, tests/conftest.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from headoffice import cli
from headoffice.hits import HitPolicy
from headoffice.ledger import Incoming, Ledger, LedgerError
from tests.test_headoffice_ledger import (
    FLUSH,
    NOTHING,
    PARAMS,
    ROYAL,
    TABLES,
    NewUrl,
    P,
    body,
    hit,
    inc,
    ledger,
    result,
)

OPS = ["alice"]


def apply(led: Ledger, table: str, *msgs: dict[str, Any]) -> Any:
    return led.apply_batch([Incoming("outbox", table, m) for m in msgs])


def alarms(led: Ledger) -> list[str]:
    return [a["text"] for a in led.db.execute("SELECT text FROM alarms ORDER BY alarm_no")]


def forged(payload: dict[str, Any], **changes: Any) -> tuple[str, dict[str, Any]]:
    return "jackpot_hit", {**payload, **changes}


def two_boxes(round_: int, a: list[str], b: list[str]) -> dict[str, Any]:
    """A hit payload with two boxes (categories as the cards really make them)."""
    from controller.games.uth.cards import parse_cards
    from controller.games.uth.evaluator import category_of, hand_rank

    entries = [{"box": i + 1, "cards": c, "category": category_of(hand_rank(
        parse_cards(c, count=5))).label, "wager": 100, "folded": False}
        for i, c in enumerate((a, b))]
    return {"round": round_, "pool_id": P, "flop": a[2:], "hits": [1, 2], "entries": entries}


# -- who may send money messages ----------------------------------------------------------------
def test_a_table_that_is_not_enrolled_is_refused_counted_and_never_created(
    new_url: NewUrl,
) -> None:
    led = ledger(new_url)
    before = led.pool(P)
    msgs = [body("X9", 1, *inc(1)), body("X9", 2, *hit(1, [ROYAL]))]
    res = apply(led, "X9", *msgs)
    res2 = led.apply_batch([Incoming("birth", "X9", {"v": 1, "table": "X9", "pool_id": P}),
                            Incoming("status", "X9", {"v": 1, "table": "X9", "state": "online"})])
    assert res.unknown == ["X9", "X9"] and res2.unknown == ["X9", "X9"]
    assert res.acks == {} and res.awards == [] and res.applied == 0
    assert led.pool(P) == before  # not a cent moved
    assert led.db.one("SELECT id FROM tables WHERE id = 'X9'") is None  # no row on the fly
    assert led.db.one("SELECT count(*) AS n FROM messages")["n"] == 0  # type: ignore[index]


def test_enrolment_follows_the_configuration_and_binds_the_pool(new_url: NewUrl) -> None:
    led = ledger(new_url)
    led.ensure_pool("p2", PARAMS)
    led.enrol({"T1": P})  # T2 and the others are no longer enrolled
    assert apply(led, "T2", body("T2", 1, *inc(1))).unknown == ["T2"]
    t, p = inc(1)
    res = apply(led, "T1", body("T1", 1, t, {**p, "pool_id": "p2"}), body("T1", 2, *inc(2)))
    # UTH 15.1.2.2: a table is linked to one pool; a message naming another is refused.
    assert len(res.refused) == 1 and "enrolled on pool p1" in res.refused[0]
    assert led.pool("p2").wagers_in == 0 and led.pool(P).wagers_in == 100  # type: ignore[union-attr]


def test_a_jackpot_wager_above_the_configured_bound_is_refused(new_url: NewUrl) -> None:
    led = ledger(new_url)
    led.policy = HitPolicy(max_wager=500)
    t, p = inc(1)
    res = apply(led, "T1", body("T1", 1, t, {**p, "wager": 600, "amount": 600}),
                body("T1", 2, *inc(2)))
    assert len(res.refused) == 1 and "above the configured 500" in res.refused[0]
    assert led.pool(P).wagers_in == 100  # type: ignore[union-attr]


# -- forged and implausible hits: held, never paid -------------------------------------------------
FORGERIES = {
    # The attack of issue 12: no jackpot wager in the round, two boxes holding the same cards.
    "no wager, same five cards twice": lambda: [
        body("T1", 1, *result(1)), body("T1", 2, "jackpot_hit", two_boxes(1, ROYAL, ROYAL))],
    "a box that did not wager": lambda: [
        body("T1", 1, *inc(1, wagers=1)),
        body("T1", 2, "jackpot_hit", two_boxes(1, ROYAL, ["2h", "3h", *ROYAL[2:]]))],
    "a hole card also in another box": lambda: [
        body("T1", 1, *inc(1, wagers=2)),
        body("T1", 2, "jackpot_hit", two_boxes(1, ROYAL, ["Ah", "9h", *ROYAL[2:]]))],
    "claims a Royal, the cards make a flush": lambda: [
        body("T1", 1, *inc(1)),
        body("T1", 2, *forged(hit(1, [FLUSH])[1], entries=[
            {**hit(1, [FLUSH])[1]["entries"][0], "category": "royal_flush"}]))],
    "names a hand that does not qualify": lambda: [
        body("T1", 1, *inc(1)), body("T1", 2, *forged(hit(1, [NOTHING])[1]))],
    "not two hole cards plus the flop": lambda: [
        body("T1", 1, *inc(1)), body("T1", 2, *forged(hit(1, [FLUSH])[1], flop=["2c", "3c",
                                                                               "4c"]))],
    "a card that is no card": lambda: [
        body("T1", 1, *inc(1)), body("T1", 2, *forged(hit(1, [FLUSH])[1], entries=[
            {**hit(1, [FLUSH])[1]["entries"][0], "cards": ["Zz", *FLUSH[1:]]}]))],
    "the round's wagers were cancelled": lambda: [
        body("T1", 1, *inc(1)), body("T1", 2, *inc(1, type_="jackpot_cancel")),
        body("T1", 3, *hit(1, [FLUSH]))],
}


@pytest.mark.parametrize("case", sorted(FORGERIES))
def test_an_implausible_hit_is_held_pending_and_never_paid(new_url: NewUrl, case: str) -> None:
    led = ledger(new_url)
    msgs = FORGERIES[case]()
    res = apply(led, "T1", *msgs[:-1])
    pool = led.pool(P)
    res = apply(led, "T1", msgs[-1])
    assert res.awards == [] and len(res.held_hits) == 1, res
    assert res.acks == {"T1": len(msgs)}  # applied as held: the table keeps it PENDING
    assert led.pool(P) == pool  # the pool is exactly as before: nothing paid, no reset
    assert led.db.one("SELECT count(*) AS n FROM hits")["n"] == 0  # type: ignore[index]
    (held,) = led.held_hits(pending_only=True)
    assert held["status"] == "pending" and held["table_id"] == "T1" and held["round"] == 1
    assert any("HELD" in a for a in alarms(led))
    # A resend of the same hit is a duplicate, not a second hold nor a payment.
    res = apply(led, "T1", msgs[-1])
    assert res.duplicates == 1 and res.awards == [] and len(led.held_hits()) == 1


def test_a_plausible_flush_is_paid_at_once(new_url: NewUrl) -> None:
    led = ledger(new_url)
    apply(led, "T1", body("T1", 1, *inc(1)))
    res = apply(led, "T1", body("T1", 2, *hit(1, [FLUSH])))
    ((table, award),) = res.awards
    assert table == "T1" and award["payouts"][0]["award"] == "flush"
    assert award["payouts"][0]["amount"] == PARAMS.paytable.fixed[_flush()]  # UTH 15.2.9.5
    assert led.held_hits() == []


def _flush() -> Any:
    from controller.games.uth.evaluator import Category

    return Category.FLUSH


# -- the verification threshold, approval and refusal ----------------------------------------------
def test_a_royal_waits_for_an_operator_and_approval_is_recorded(new_url: NewUrl) -> None:
    led = ledger(new_url)
    apply(led, "T1", body("T1", 1, *inc(1)))
    at_hit = led.pool(P)
    assert at_hit is not None
    res = apply(led, "T1", body("T1", 2, *hit(1, [ROYAL])))
    assert res.awards == [] and "waits for verification" in res.held_hits[0]
    assert led.pool(P) == at_hit
    (held,) = led.held_hits(pending_only=True)
    assert held["meter_at_hit"] == at_hit.amount
    # Other tables play on meanwhile: their contributions are not the Royal winner's.
    apply(led, "T2", body("T2", 1, *inc(1, wagers=4)))
    grown = led.pool(P)
    assert grown is not None and grown.amount > at_hit.amount
    with pytest.raises(LedgerError, match="not authorised"):
        led.approve_hit(held["hold_no"], operator="mallory", authorised=OPS, reason="mine")
    led.policy = HitPolicy(dual_control_from=None)  # one approver (dual control:
    # tests/test_headoffice_decisions.py)
    award = led.approve_hit(held["hold_no"], operator="alice", authorised=OPS,
                            reason="camera ok")["award"]
    (royal,) = award["payouts"]
    # UTH 15.2.9.1: the greater of the minimum and 100% of the jackpot as it was at the hit.
    assert royal["award"] == "royal_flush" and royal["from_meter"] == at_hit.amount
    assert royal["amount"] == max(PARAMS.paytable.royal_minimum, at_hit.amount)
    after = led.pool(P)
    assert after is not None and after.imbalance() == 0 and after.hits == 1
    assert after.amount == PARAMS.seed + (grown.amount - at_hit.amount)  # reset + later money
    (decided,) = led.held_hits()
    assert decided["status"] == "approved" and decided["operator"] == "alice"
    assert decided["decided_utc"] and decided["note"] == "camera ok"
    assert decided["award"] == award and led.award_for("T1", 1) == award
    assert led.undelivered_awards() == [(held["hold_no"], "T1", award)]
    led.mark_delivered([held["hold_no"]])
    assert led.undelivered_awards() == []
    with pytest.raises(LedgerError, match="already approved by alice"):
        led.approve_hit(held["hold_no"], operator="alice", authorised=OPS, reason="again")
    # Its alarm (a held hit waiting) ended with the decision; the decision is the trail's.
    (waiting,) = led.db.execute("SELECT * FROM alarms WHERE kind = 'held_hit'")
    assert waiting["table_id"] == "T1" and waiting["cleared_utc"] is not None
    assert led.active_alarm_count() == 0
    # The table, starting again with the hit still PENDING, is answered with the award.
    res = led.apply_batch([Incoming("birth", "T1", {"v": 1, "table": "T1", "pool_id": P,
                                                    "pending_hits": [{"round": 1}]})])
    assert res.awards == [("T1", award)]


def test_a_refusal_is_recorded_and_never_pays(new_url: NewUrl) -> None:
    led = ledger(new_url)
    apply(led, "T1", body("T1", 1, *result(1)),
          body("T1", 2, "jackpot_hit", two_boxes(1, ROYAL, ROYAL)))
    pool = led.pool(P)
    (held,) = led.held_hits()
    with pytest.raises(LedgerError, match="needs a reason"):
        led.refuse_hit(held["hold_no"], operator="alice", authorised=OPS, reason=" ")
    led.refuse_hit(held["hold_no"], operator="alice", authorised=OPS, reason="forged")
    (decided,) = led.held_hits()
    assert (decided["status"], decided["operator"], decided["note"]) == ("refused", "alice",
                                                                         "forged")
    assert decided["decided_utc"] and decided["award"] is None
    with pytest.raises(LedgerError, match="already refused"):
        led.approve_hit(held["hold_no"], operator="alice", authorised=OPS, reason="again")
    assert led.pool(P) == pool and led.undelivered_awards() == []
    assert led.held_hits(pending_only=True) == []


def test_the_console_lists_approves_and_refuses_held_hits(
    new_url: NewUrl, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    import os

    if os.geteuid() != 0:
        pytest.skip("needs root, to be 'sudo' for another user")
    led = ledger(new_url)
    apply(led, "T1", body("T1", 1, *inc(1)), body("T1", 2, *hit(1, [ROYAL])),
          body("T1", 3, *result(1)), body("T1", 4, "jackpot_hit", two_boxes(2, ROYAL, ROYAL)))
    url = led.db.url
    led.close()
    config = tmp_path / "headoffice.toml"
    config.write_text(f'[database]\nurl = "{url}"\n[service]\noperators = ["alice"]\n'
                      'dual_control_from = "none"\n')  # one approver: dual control is tested
    # in tests/test_headoffice_decisions.py and tests/test_headoffice_console.py
    base = ["--config", str(config)]
    assert cli.main([*base, "hits", "--pending", "--json"]) == 0
    pending = json.loads(capsys.readouterr().out)
    assert [(h["round"], h["status"]) for h in pending] == [(1, "pending"), (2, "pending")]
    royal, forgery = (h["hold_no"] for h in pending)
    approve = [*base, "hit", "approve", str(royal), "--reason", "camera 4"]
    monkeypatch.setenv("SUDO_USER", "mallory")
    assert cli.main(approve) == 1
    assert "not authorised" in capsys.readouterr().err
    monkeypatch.setenv("SUDO_USER", "alice")
    assert cli.main([*approve, "--operator", "bob"]) == 1
    assert "runs as 'alice'" in capsys.readouterr().err
    assert cli.main(approve) == 0
    out = capsys.readouterr().out
    assert "box 1: Royal Flush $50,000.00 (15.2.9.1)" in out
    assert "APPROVED by alice: $50,000.00 paid" in out
    assert cli.main([*base, "hit", "refuse", str(forgery), "--reason", "same cards twice"]) == 0
    capsys.readouterr()
    assert cli.main([*base, "hits"]) == 0
    text = capsys.readouterr().out
    assert f"HELD HIT #{royal}" in text and "APPROVED by alice" in text
    assert f"HELD HIT #{forgery}" in text and "REFUSED by alice" in text
    assert "same cards twice" in text
    assert cli.main([*base, "hits", "--pending"]) == 0
    assert capsys.readouterr().out.strip() == "no held hit waiting for a decision"


# -- sequences and chains ---------------------------------------------------------------------
HASH = "ab" * 32


def test_a_resent_message_with_other_content_is_alarmed_not_a_silent_duplicate(
    new_url: NewUrl,
) -> None:
    led = ledger(new_url)
    apply(led, "T1", *(body("T1", s, *inc(s)) for s in (1, 2, 3)))
    same = apply(led, "T1", body("T1", 2, *inc(2)))
    assert same.duplicates == 1 and same.forks == []  # a plain resend
    t, p = inc(2)
    res = apply(led, "T1", body("T1", 2, t, {**p, "round": 9}))  # seq 2 again, other content
    assert res.duplicates == 1 and res.acks == {"T1": 3}
    assert len(res.forks) == 1 and "went backwards or forked" in res.forks[0]
    assert any("seq 2 differs" in a for a in alarms(led))
    assert led.pool(P).wagers_in == 300  # type: ignore[union-attr]  # nothing applied twice


def test_a_journal_going_backwards_is_alarmed(new_url: NewUrl) -> None:
    led = ledger(new_url)
    apply(led, "T1", body("T1", 1, *inc(1)), body("T1", 2, *inc(2)))  # journal records 10, 20
    msg = {**body("T1", 3, *inc(3)), "journal_seq": 15}
    res = apply(led, "T1", msg)
    assert res.acks == {"T1": 3} and len(res.forks) == 1
    assert "its journal went backwards" in res.forks[0]
    # A table starting again behind what head office ledgered: journal and outbox.
    res = led.apply_batch([Incoming("birth", "T1", {
        "v": 1, "table": "T1", "pool_id": P, "journal_seq": 12,
        "outbox": {"acked_upto": 1, "pending": 0}})])
    assert len(res.forks) == 1 and "started behind head office" in res.forks[0]
    assert "outbox up to 1" in res.forks[0] and "journal at record 12" in res.forks[0]
    res = led.apply_batch([Incoming("birth", "T1", {
        "v": 1, "table": "T1", "pool_id": P, "journal_seq": 40,
        "outbox": {"acked_upto": 2, "pending": 1}})])
    assert res.forks == []


def test_the_chain_head_is_kept_and_reported(new_url: NewUrl,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    led = ledger(new_url)
    apply(led, "T1", {**body("T1", 1, *inc(1)), "journal_hash": "cd" * 32},
          {**body("T1", 2, *inc(2)), "journal_hash": HASH})
    (t1,) = [t for t in led.report()["tables"] if t["id"] == "T1"]
    assert (t1["chain_seq"], t1["journal_seq"], t1["chain_hash"]) == (2, 20, HASH)
    url = led.db.url
    led.close()
    assert cli.main(["report", "--db", url]) == 0
    assert f"chain head: seq 2 journal record 20 hash {HASH}" in capsys.readouterr().out


def test_every_enrolled_table_is_known(new_url: NewUrl) -> None:
    led = ledger(new_url)
    rows = led.db.execute("SELECT id, enrolled FROM tables ORDER BY id")
    assert {r["id"] for r in rows if r["enrolled"]} == set(TABLES)


# -- configuration ----------------------------------------------------------------------------
def test_the_configuration_enrols_tables_and_sets_the_hit_policy() -> None:
    from headoffice.config import HeadOfficeConfigError, validate_text

    base = '[database]\nurl = "x.db"\n'
    cfg = validate_text(base + '[service]\nverify_from = "straight_flush"\nverify_above = 500000'
                        '\nmax_jackpot_wager = 500\n[[tables]]\nid = "T1"\npool = "p1"\n'
                        '[[tables]]\nid = "T2"\n')
    assert cfg.tables == {"T1": "p1", "T2": None}
    assert (cfg.verify_from, cfg.verify_above, cfg.max_jackpot_wager) == (
        "straight_flush", 500_000, 500)
    defaults = validate_text(base)
    assert defaults.tables == {} and defaults.verify_from == "royal_flush"
    assert validate_text(base + '[service]\nverify_from = "none"\n').verify_from is None
    with pytest.raises(HeadOfficeConfigError) as err:
        validate_text(base + '[service]\nverify_from = "pair"\nmax_jackpot_wager = 0\n'
                      '[[tables]]\nid = "T1"\n[[tables]]\nid = "T1"\n'
                      '[[tables]]\nid = "headoffice-1"\n[[tables]]\nid = "bad id"\nseat = 1\n')
    text = str(err.value)
    for expected in ("service.verify_from: a hand category", "max_jackpot_wager: must be >= 1",
                     "table 'T1' listed twice", "a head-office worker's name",
                     "tables[3].id: 1-32", "tables[3].seat: unknown key"):
        assert expected in text, expected
