"""An operator's approval made in another process reaches the meters at once (issue 13; UTH
2.4.3, 15.1.3: every meter shows the current pool): the worker learns of the commit from the
ledger (PostgreSQL LISTEN/NOTIFY, SQLite data_version; headoffice/notify.py) and publishes the
lowered pool value and the award, with its heartbeat a minute away. So does a pool's value after
`pool set` or `pool resume` from another process. Real broker, both backends."""

from __future__ import annotations

import asyncio
import contextlib
import time

import pytest

from headoffice.ledger import Incoming, Ledger
from headoffice.notify import _TRIGGER_LOCK, CHANNEL, NOTIFY_FUNCTION, LedgerWatch
from shared.link import contract
from shared.link.transport import LinkError, connect
from tests.support.link import POOL, head_office, run, wait_for
from tests.test_headoffice_ledger import ROYAL, body, hit, inc

HEARTBEAT_S = 3600.0  # nothing the test sees can come from a heartbeat: the worker's next is
# an hour after its start, and each wait below gives up long before (a loaded machine may take
# seconds; a wall-clock bound on the delivery would be a timed assertion)
WAIT_S = 120.0


async def watch(conn, into, parse) -> None:  # type: ignore[no-untyped-def]
    """Every message on `conn`, parsed, with when it came."""
    with contextlib.suppress(LinkError):
        async for m in conn.messages():
            into.append((time.monotonic(), parse(m.payload)))


def test_an_approval_from_another_process_reaches_the_meters_before_any_heartbeat(
    broker, ledger_url: str  # type: ignore[no-untyped-def]
) -> None:
    async def main() -> None:
        async with head_office(ledger_url, broker, heartbeat_s=HEARTBEAT_S) as (worker,), \
                connect(broker.settings("T2")) as meter, connect(broker.settings("T1")) as t1:
            await meter.subscribe([contract.pool_topic(POOL)])
            await t1.subscribe([contract.award_topic("T1")])
            pools: list[tuple[float, dict]] = []
            awards: list[tuple[float, dict]] = []

            award = lambda raw: contract.parse_award(raw, "T1")  # noqa: E731
            readers = [asyncio.create_task(watch(meter, pools, contract.parse_pool)),
                       asyncio.create_task(watch(t1, awards, award))]
            # The operator's process: its own connection to the ledger. A Royal Flush is held
            # for verification (the default threshold), nothing paid.
            other = Ledger.open(ledger_url)
            try:
                res = other.apply_batch([Incoming("outbox", "T1", body("T1", 1, *inc(1))),
                                         Incoming("outbox", "T1", body("T1", 2, *hit(1, [ROYAL])))])
                assert len(res.held_hits) == 1
                before = other.pool(POOL)
                assert before is not None
                hold_no = other.held_hits(pending_only=True)[0]["hold_no"]
                committed = time.monotonic()
                # Two approvers: the Royal pays $50,000.00, above the dual-control threshold.
                other.approve_hit(hold_no, operator="alice", authorised=["alice", "bob"],
                                     reason="camera 4")
                other.approve_hit(hold_no, operator="bob", authorised=["alice", "bob"],
                                     reason="count agrees")
                after = other.pool(POOL)
                assert after is not None and after.amount < before.amount  # the hit paid
            finally:
                other.close()
            await wait_for(lambda: any(p["version"] == after.version for _, p in pools), WAIT_S,
                           "the lowered pool value on the meter")
            await wait_for(lambda: bool(awards), WAIT_S, "the award at the table")
            shown = next(t for t, p in pools if p["version"] == after.version)
            value = next(p for _, p in pools if p["version"] == after.version)
            assert value["amount"] == after.amount
            assert awards[0][1]["round"] == 1 and awards[0][1]["payouts"][0]["box"] == 1
            # Within the waits above, never a heartbeat: the notice carried it.
            assert worker.counters["ledger_notices"] >= 1
            print(f"approval -> meter {1000 * (shown - committed):.0f} ms,"
                  f" -> award {1000 * (awards[0][0] - committed):.0f} ms ({ledger_url[:10]})")
            for r in readers:
                r.cancel()

    run(main())


def test_pool_set_and_resume_from_another_process_reach_the_meters_before_any_heartbeat(
    broker, ledger_url: str  # type: ignore[no-untyped-def]
) -> None:
    async def main() -> None:
        async with head_office(ledger_url, broker, heartbeat_s=HEARTBEAT_S) as (worker,), \
                connect(broker.settings("T2")) as meter:
            await meter.subscribe([contract.pool_topic(POOL)])
            pools: list[tuple[float, dict]] = []
            reader = asyncio.create_task(watch(meter, pools, contract.parse_pool))

            async def shown(version: int, what: str) -> dict:
                await wait_for(lambda: any(p["version"] == version for _, p in pools), WAIT_S, what)
                return next(p for _, p in pools if p["version"] == version)

            other = Ledger.open(ledger_url)  # the operator's process
            try:
                # pool resume: books tampered with stop the pool (its meters go OFFLINE: no
                # value); put right and resumed, its value is back on the meter at once.
                other.db.execute("UPDATE pools SET amount = amount + 1 WHERE id = ?", (POOL,))
                other.apply_batch([Incoming("outbox", "T1", body("T1", 1, *inc(1)))])
                assert (other.pool(POOL) or pytest.fail("no pool")).stopped
                other.db.execute("UPDATE pools SET amount = amount - 1 WHERE id = ?", (POOL,))
                resumed = other.resume_pool(POOL, operator="alice", authorised=["alice"],
                                             reason="books checked")
                value = await shown(resumed.version, "the resumed pool on the meter")
                assert value["amount"] == resumed.amount
                # pool set: a qualifying wager (15.2.5.3), a new version, on the meter at once.
                # T1 is live: forced, and applied by a second approver (dual control).
                ops = ["alice", "bob"]
                first = other.set_params(POOL, {"wager": 500}, operator="alice",
                                         authorised=ops, force=True, reason="new sign")
                assert first.status == "pending"
                new = other.approve_change(first.decision_no, operator="bob", authorised=ops,
                                           reason="checked").new
                after_set = other.pool(POOL) or pytest.fail("no pool")
                value = await shown(after_set.version, "the new parameters on the meter")
                assert value["wager"] == new.wager == 500
            finally:
                other.close()
            # Within the waits above, never a heartbeat: the notices carried them.
            assert worker.counters["ledger_notices"] >= 2
            reader.cancel()

    run(main())


def test_a_decision_committed_while_the_worker_arms_its_watch_still_reaches_the_meters(
    broker, ledger_url: str  # type: ignore[no-untyped-def]
) -> None:
    """A worker is connected (and serving tables) before its ledger watch is armed. A pool set
    committed in between woke nothing (PostgreSQL: no trigger, no LISTEN yet); the worker reads
    the ledger once armed, so the new value is still on the meter long before a heartbeat. The
    window is held open deterministically: another session holds the advisory lock under which
    the watch installs its trigger (CI once lost this race and the test above waited 10 s)."""
    if not ledger_url.startswith("postgres"):
        pytest.skip("the PostgreSQL watch's arming can be held open; SQLite's is one pragma")
    blocker = Ledger.open(ledger_url)
    blocker.db.execute("SELECT pg_advisory_lock(?)", (_TRIGGER_LOCK,))
    locked = True

    async def main() -> None:
        nonlocal locked
        async with head_office(ledger_url, broker, heartbeat_s=HEARTBEAT_S), \
                connect(broker.settings("T2")) as meter:
            await meter.subscribe([contract.pool_topic(POOL)])
            pools: list[tuple[float, dict]] = []
            reader = asyncio.create_task(watch(meter, pools, contract.parse_pool))
            other = Ledger.open(ledger_url)  # the operator's process
            try:
                ops = ["alice", "bob"]
                change = other.set_params(POOL, {"wager": 500}, operator="alice",
                                          authorised=ops, force=True, reason="new sign")
                if change.status == "pending":  # a table live: the second approver applies it
                    other.approve_change(change.decision_no, operator="bob", authorised=ops,
                                         reason="checked")
                after_set = other.pool(POOL) or pytest.fail("no pool")
            finally:
                other.close()
            await asyncio.sleep(0.5)
            assert not any(p["version"] == after_set.version for _, p in pools)  # not yet armed
            blocker.db.execute("SELECT pg_advisory_unlock(?)", (_TRIGGER_LOCK,))
            locked = False
            await wait_for(lambda: any(p["version"] == after_set.version for _, p in pools), WAIT_S,
                           "the parameters set while the watch was arming, on the meter")
            value = next(p for _, p in pools if p["version"] == after_set.version)
            assert value["wager"] == 500
            reader.cancel()

    try:
        run(main())
    finally:
        if locked:
            blocker.db.execute("SELECT pg_advisory_unlock(?)", (_TRIGGER_LOCK,))
        blocker.close()


# The trigger function as the previous version installed it (headoffice/notify.py before
# tablectl_ledger_notify): named for held hits, run by param_log's trigger too.
OLD_TRIGGER = (
    f"""CREATE OR REPLACE FUNCTION tablectl_held_hits_notify() RETURNS trigger AS $$
    BEGIN PERFORM pg_notify('{CHANNEL}', ''); RETURN NULL; END $$ LANGUAGE plpgsql""",
    """CREATE TRIGGER tablectl_held_hits_decided AFTER UPDATE ON held_hits
    FOR EACH STATEMENT EXECUTE FUNCTION tablectl_held_hits_notify()""",
    """CREATE TRIGGER tablectl_param_log_entered AFTER INSERT ON param_log
    FOR EACH STATEMENT EXECUTE FUNCTION tablectl_held_hits_notify()""",
)


def test_a_ledger_with_the_old_trigger_function_is_upgraded_and_still_notifies(
    ledger_url: str,
) -> None:
    """PostgreSQL: a worker's watch re-points both triggers at `tablectl_ledger_notify`, drops
    the old `tablectl_held_hits_notify`, and a param_log entry still wakes it."""
    if not ledger_url.startswith("postgres"):
        pytest.skip("PostgreSQL's triggers; SQLite has none")
    old = Ledger.open(ledger_url)  # the ledger as the previous version left it
    for statement in OLD_TRIGGER:
        old.db.execute(statement)
    led = Ledger.open(ledger_url)

    def triggers() -> dict[str, str]:
        rows = led.db.execute(
            "SELECT t.tgname AS name, p.proname AS fn FROM pg_trigger t JOIN pg_proc p"
            " ON p.oid = t.tgfoid WHERE starts_with(t.tgname, 'tablectl_') AND NOT t.tgisinternal"
            " AND t.tgrelid IN (SELECT c.oid FROM pg_class c WHERE c.relnamespace ="
            " (SELECT oid FROM pg_namespace WHERE nspname = current_schema()))")
        return {r["name"]: r["fn"] for r in rows}

    def functions() -> set[str]:
        return {r["proname"] for r in led.db.execute(
            "SELECT proname FROM pg_proc WHERE starts_with(proname, 'tablectl_') AND pronamespace ="
            " (SELECT oid FROM pg_namespace WHERE nspname = current_schema())")}

    assert set(triggers().values()) == {"tablectl_held_hits_notify"}
    try:
        async def main() -> None:
            async def run_(fn, *args):  # type: ignore[no-untyped-def]
                return await asyncio.to_thread(fn, *args)

            watch = LedgerWatch(led.db, run_)
            try:
                await asyncio.wait_for(watch.changed(), 10)  # installs, LISTENs: armed
                waiting = asyncio.ensure_future(watch.changed())
                assert triggers() == {"tablectl_held_hits_decided": NOTIFY_FUNCTION,
                                      "tablectl_param_log_entered": NOTIFY_FUNCTION}
                assert functions() == {NOTIFY_FUNCTION}
                old.db.execute(
                    "INSERT INTO param_log (pool_id, entry_no, utc, operator, action, forced,"
                    " outcome, live_tables) VALUES ('p9', 1, '2026-01-01T00:00:00Z', 'alice',"
                    " 'set', FALSE, 'applied', '')")
                await asyncio.wait_for(waiting, 10)  # the entry's NOTIFY woke it
            finally:
                await watch.close()

        run(main())
    finally:
        old.close()
        led.close()
