"""An approved held hit's award goes to its table once, however many workers hear of the
approval (every worker LISTENs, headoffice/notify.py; every worker's heartbeat looks for awards
due; a partition may change hands meanwhile, headoffice/routing.py): the worker that claims it in
the ledger (`Ledger.claim_awards`) sends it, no other. Real PostgreSQL and SQLite, real broker."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable

from headoffice.ledger import Incoming, Ledger
from shared.link import contract
from shared.link.transport import LinkError, connect
from tests.support.link import head_office, run, wait_for
from tests.test_headoffice_ledger import ROYAL, body, hit, inc, ledger


def held_royal(url: str) -> int:
    """T1's Royal Flush held for an operator (the default threshold): its hold number."""
    led = Ledger.open(url)
    try:
        res = led.apply_batch([Incoming("outbox", "T1", body("T1", 1, *inc(1))),
                               Incoming("outbox", "T1", body("T1", 2, *hit(1, [ROYAL])))])
        assert len(res.held_hits) == 1
        return int(led.held_hits(pending_only=True)[0]["hold_no"])
    finally:
        led.close()


def test_one_claim_per_award_until_it_runs_out(new_url: Callable[[], str]) -> None:
    url = new_url()
    ledger(lambda: url).close()  # the pool, the tables enrolled
    hold_no = held_royal(url)
    a, b = Ledger.open(url), Ledger.open(url)  # two workers' connections
    try:
        assert a.claim_awards("w1", 1000.0) == []  # nothing approved yet
        # Two approvers: the Royal pays $50,000.00, above the dual-control threshold.
        a.approve_hit(hold_no, operator="alice", authorised=["alice", "bob"],
                         reason="camera 4")
        a.approve_hit(hold_no, operator="bob", authorised=["alice", "bob"],
                         reason="count agrees")
        mine = a.claim_awards("w1", 1000.0, hold_s=30)
        assert [(n, t) for n, t, _ in mine] == [(hold_no, "T1")]
        assert mine[0][2]["round"] == 1 and mine[0][2]["payouts"][0]["box"] == 1
        assert b.claim_awards("w2", 1000.0) == []  # w1 is sending it
        assert a.claim_awards("w1", 1029.0) == []  # not even again to w1 within its claim
        # w1 died before delivering: once its claim has run out, w2 sends it.
        assert [n for n, _, _ in b.claim_awards("w2", 1031.0)] == [hold_no]
        b.mark_delivered([hold_no])
        assert a.claim_awards("w1", 5000.0) == [] and b.undelivered_awards() == []
    finally:
        a.close()
        b.close()


def test_three_workers_send_an_approved_award_once(broker, ledger_url: str) -> None:  # type: ignore[no-untyped-def]
    async def main() -> None:
        async with head_office(ledger_url, broker, workers=3, heartbeat_s=0.3) as workers, \
                connect(broker.settings("T1")) as t1:
            await t1.subscribe([contract.award_topic("T1")])
            awards: list[dict] = []

            async def listen() -> None:
                with contextlib.suppress(LinkError):
                    async for m in t1.messages():
                        awards.append(contract.parse_award(m.payload, "T1"))

            reader = asyncio.create_task(listen())
            hold_no = held_royal(ledger_url)
            other = Ledger.open(ledger_url)  # the operator's process
            try:
                # Two approvers: the Royal pays $50,000.00, above the dual-control threshold.
                other.approve_hit(hold_no, operator="alice", authorised=["alice", "bob"],
                                     reason="camera 4")
                other.approve_hit(hold_no, operator="bob", authorised=["alice", "bob"],
                                     reason="count agrees")
                await wait_for(lambda: bool(awards), 10, "the award at the table")
                await wait_for(lambda: not other.undelivered_awards(), 10, "the award delivered")
            finally:
                other.close()
            # Every worker's heartbeat looks for awards due twice more after the delivery (and
            # each has heard the approval by then): still the one award.
            beats = [w.counters["pool_values"] for w in workers]
            await wait_for(lambda: all(w.counters["pool_values"] >= n + 2
                                       for w, n in zip(workers, beats, strict=True)),
                           20, "two more heartbeats each")
            assert len(awards) == 1 and awards[0]["round"] == 1
            assert sum(w.counters["approved_awards_sent"] for w in workers) == 1
            reader.cancel()

    run(main())


def test_a_ledger_from_before_the_claims_gets_their_columns(new_url: Callable[[], str]) -> None:
    url = new_url()
    led = Ledger.open(url)
    try:
        for name in ("sending_by", "sending_until"):  # as an older version made it
            led.db.execute(f"ALTER TABLE held_hits DROP COLUMN {name}")
        assert "sending_by" not in led.db.columns("held_hits")
    finally:
        led.close()
    led = Ledger.open(url)
    try:
        assert {"sending_by", "sending_until"} <= set(led.db.columns("held_hits"))
        assert led.claim_awards("w1", 1000.0) == []
    finally:
        led.close()
