"""Head office's side of a table's recovery (issue 27 item 1): its answer to a birth names the
last round it has ledgered for the table, a `table_recovered` message is stored and alarmed
(loudly when it would reuse a round head office holds), and the contract checks the message.
SQLite and PostgreSQL (the `new_url` fixture)."""

from __future__ import annotations

from typing import Any

import pytest

from headoffice.ledger import Incoming, Ledger
from shared.link import contract
from tests.test_headoffice_ledger import NewUrl, body, inc, ledger, script


def birth(table: str) -> Incoming:
    return Incoming("birth", table, {"v": 1, "table": table, "pool_id": "p1",
                                     "pending_hits": []})


def recovered(round_next: int, outbox_next: int, **kw: Any) -> dict[str, Any]:
    return {"by": "root (sudo from alice)", "reason": "restored from a copy, ticket 9",
            "problem": "head office has ledgered round 5, the journal's last is round 2",
            "round_next": round_next, "outbox_next": outbox_next, "journal_seq": 3,
            "fresh": False, **kw}


def alarms(led: Ledger) -> list[str]:
    return [r["text"] for r in led.db.execute("SELECT text FROM alarms WHERE table_id = 'T1'"
                                              " ORDER BY alarm_no")]


def last_kind(led: Ledger) -> str:
    row = led.db.one("SELECT kind FROM alarms WHERE table_id = 'T1' ORDER BY alarm_no DESC"
                     " LIMIT 1")
    assert row is not None
    return str(row["kind"])


def test_the_answer_to_a_birth_names_the_last_round_ledgered(new_url: NewUrl) -> None:
    led = ledger(new_url)
    try:
        assert led.apply_batch([birth("T1")]).birth_rounds == {"T1": 0}
        msgs = script("T1", [(1, "ok")] * 4)  # rounds 1..4: an increment and a result each
        led.apply_batch([Incoming("outbox", "T1", m) for m in msgs])
        # Round 5 open: its increment ledgered, its result not yet.
        led.apply_batch([Incoming("outbox", "T1", body("T1", 9, "jackpot_increment", {
            "round": 5, "pool_id": "p1", "boxes": [1], "wager": 100, "wagers": 1,
            "amount": 100}))])
        res = led.apply_batch([birth("T1")])
        assert res.birth_rounds == {"T1": 5} and res.acks == {"T1": 9}
        # In the same batch as the messages before it, too.
        led2 = ledger(new_url)
        try:
            res = led2.apply_batch([*(Incoming("outbox", "T1", m) for m in msgs),
                                    birth("T1")])
            assert res.birth_rounds == {"T1": 4}
        finally:
            led2.close()
    finally:
        led.close()


def test_a_recovery_is_stored_and_alarmed(new_url: NewUrl) -> None:
    led = ledger(new_url)
    try:
        msgs = script("T1", [(1, "ok")] * 4)
        led.apply_batch([Incoming("outbox", "T1", m) for m in msgs])
        res = led.apply_batch([Incoming("outbox", "T1", body("T1", 9, "table_recovered",
                                                             recovered(5, 9)))])
        assert res.applied == 1 and res.forks == [] and res.refused == []
        row = led.db.one("SELECT type, status, amount FROM messages WHERE table_id = 'T1'"
                         " AND seq = 9")
        assert row == {"type": "table_recovered", "status": "applied", "amount": 0}
        text = alarms(led)[-1]
        assert text.startswith("table T1 accepted a loss of journal records (message 9): by "
                               "root (sudo from alice): restored from a copy, ticket 9")
        assert text.endswith("rounds go on at 5, messages at 9")
        assert last_kind(led) == "journal_loss"  # the head-office alarm model's kind
        # Its journal record (3) is behind the last one ledgered (40): not alarmed again.
        assert not any("went backwards" in a for a in alarms(led))
    finally:
        led.close()


def test_a_recovery_that_would_reuse_a_round_is_alarmed_loudly(new_url: NewUrl) -> None:
    led = ledger(new_url)
    try:
        led.apply_batch([Incoming("outbox", "T1", m) for m in script("T1", [(1, "ok")] * 4)])
        res = led.apply_batch([Incoming("outbox", "T1", body("T1", 9, "table_recovered",
                                                             recovered(3, 9, fresh=True)))])
        assert len(res.forks) == 1
        assert alarms(led)[-1].startswith("table T1 started a new journal")
        assert alarms(led)[-1].endswith("BUT head office has ledgered round 4: round numbers "
                                        "3..4 would be used twice")
        assert last_kind(led) == "chain_mismatch"
    finally:
        led.close()


@pytest.mark.parametrize(("change", "error"), [
    ({"by": ""}, "'by' must be 1..1000 printable"),
    ({"reason": "x\n"}, "'reason' must be 1..1000 printable"),
    ({"round_next": 0}, "'round_next' must be an integer in 1.."),
    ({"outbox_next": "5"}, "'outbox_next' must be an integer"),
    ({"fresh": 1}, "'fresh' must be true or false"),
    ({"voided_held": 1}, "'voided_held' must be true or false"),
    ({"outbox_lost": [3, 7]}, "'outbox_lost' must be \\[first, last\\] ids, last = outbox_next"),
    ({"outbox_lost": [9, 8]}, "'outbox_lost' must be"),
    ({"outbox_lost": [0, 8]}, "'outbox_lost' must be"),
    ({"outbox_lost": "3..8"}, "'outbox_lost' must be"),
])
def test_the_contract_checks_a_recovery(change: dict[str, Any], error: str) -> None:
    assert contract.check_outbox_payload("table_recovered", recovered(5, 9))
    with pytest.raises(contract.SchemaError, match=error):
        contract.check_outbox_payload("table_recovered", {**recovered(5, 9), **change})


def test_a_recovery_goes_on_across_the_ids_its_lost_records_never_sent(
        new_url: NewUrl) -> None:
    """Lost journal records used ids 9..12 with the link down: head office never got them and
    the table no longer has them. Its recovery message (13) names them (`outbox_lost`) and is
    applied across that gap once 1..8 are (docs/journal.md, "Recovering"), in whatever order
    the messages come; before, it and every message after it were parked for good. A message
    beyond a gap that does not name the gap as lost stays parked."""
    msgs = [Incoming("outbox", "T1", m) for m in script("T1", [(1, "ok")] * 4)]  # seqs 1..8
    rec = Incoming("outbox", "T1", body("T1", 13, "table_recovered",
                                        recovered(7, 13, outbox_lost=[9, 12])))
    after = Incoming("outbox", "T1", body("T1", 14, *inc(7)))

    def seqs(led: Ledger) -> list[int]:
        return [r["seq"] for r in led.db.execute(
            "SELECT seq FROM messages WHERE table_id = 'T1' ORDER BY seq")]

    for order in ([msgs, [rec, after]], [msgs[:6], [rec, after], msgs[6:]],
                  [msgs[:6], [rec, after, *msgs[6:]]]):
        led = ledger(new_url)
        try:
            for batch in order:
                res = led.apply_batch(batch)
            assert res.acks == {"T1": 14} and res.refused == []
            assert seqs(led) == [*range(1, 9), 13, 14]
            assert alarms(led)[-1].endswith("messages 9..12 were lost at the table before "
                                            "head office received them")
        finally:
            led.close()
    for payload in (recovered(7, 13), recovered(7, 13, outbox_lost=[10, 12]),
                    recovered(7, 13, outbox_lost=[9, 12], by="")):  # refused: never past it
        led = ledger(new_url)
        try:
            led.apply_batch(msgs)
            res = led.apply_batch([Incoming("outbox", "T1", body(
                "T1", 13, "table_recovered", payload)), after])
            assert res.parked == 2 and res.applied == 0 and seqs(led) == [*range(1, 9)]
        finally:
            led.close()


def test_the_ack_carries_the_round_only_when_given() -> None:
    assert contract.parse_ack_round(contract.dumps(contract.ack_message("T1", 7)), "T1") == (
        7, None)
    assert contract.parse_ack_round(contract.dumps(contract.ack_message("T1", 7, 704)),
                                    "T1") == (7, 704)
    assert contract.parse_ack(contract.dumps(contract.ack_message("T1", 7, 704)), "T1") == 7
    with pytest.raises(contract.SchemaError, match="'round' must be an integer"):
        contract.parse_ack_round(b'{"v":1,"table":"T1","upto":7,"round":-1}', "T1")
