"""Head office's ledger without a broker: exactly once per (table, seq) whatever the delivery
order, hits serialised per pool, conservation checked after every message (a violation stops
the pool), parameter changes guarded and logged, the report.

Every test runs on SQLite and on PostgreSQL (the `new_url` fixture in tests/conftest.py: an
empty schema per ledger, emptied for a later test or dropped afterwards); the PostgreSQL half is
skipped only if no server answers on 127.0.0.1:5432."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from headoffice import cli
from headoffice.hits import HitPolicy
from headoffice.ledger import BatchResult, Incoming, Ledger, LedgerError, _Batch
from headoffice.pools import Params, Pool
from shared.link import contract
from tests.support.ledger_urls import NewUrl  # the `new_url` fixture's type (tests/conftest.py)

P = "p1"
PARAMS = Params(seed=500_000, increment=Fraction(1, 4), hidden=Fraction(1, 20))
ROYAL = ["Ah", "Kh", "Qh", "Jh", "Th"]
FLUSH = ["2h", "5h", "9h", "Jh", "Kh"]
NOTHING = ["2c", "7d", "9h", "Js", "Kh"]
CATEGORY = {tuple(ROYAL): "royal_flush", tuple(FLUSH): "flush", tuple(NOTHING): "high_card"}


def body(table: str, seq: int, type_: str, payload: dict[str, Any]) -> dict[str, Any]:
    return contract.outbox_message(table, seq, seq * 10, type_, "2026-01-01T00:00:00.000Z",
                                   payload)


def inc(round_: int, wagers: int = 1, type_: str = "jackpot_increment") -> tuple[str, dict]:
    return type_, {"round": round_, "pool_id": P, "boxes": list(range(1, wagers + 1)),
                   "wager": 100, "wagers": wagers, "amount": 100 * wagers}


def hit(round_: int, hands: list[list[str]]) -> tuple[str, dict]:
    entries = [{"box": i + 1, "cards": c, "category": CATEGORY[tuple(c)], "wager": 100,
                "folded": False} for i, c in enumerate(hands)]
    return "jackpot_hit", {"round": round_, "pool_id": P, "flop": hands[0][2:],
                           "hits": [1], "entries": entries}


def result(round_: int, status: str = "completed") -> tuple[str, dict]:
    return "round_result", {"round": round_, "status": status}


OPS = ["alice", "bob"]  # head office's [service] operators in these tests


# The tables these tests' head office knows (headoffice.toml [[tables]]).
TABLES = ("T1", "T2", "T6", "A", "B", "C")


def ledger(new_url: NewUrl) -> Ledger:
    led = Ledger.open(new_url())
    led.ensure_pool(P, PARAMS)
    led.enrol(dict.fromkeys(TABLES))
    return led


def script(table: str, rounds: list[tuple[int, str]]) -> list[dict[str, Any]]:
    """A table's outbox for rounds of (jackpot wagers, outcome)."""
    out: list[tuple[str, dict]] = []
    for n, (wagers, outcome) in enumerate(rounds, start=1):
        out.append(inc(n, wagers))
        if outcome == "void":
            out.append(inc(n, wagers, "jackpot_cancel"))
            out.append(result(n, "voided"))
            continue
        if outcome in ("royal", "flush"):
            hands = [ROYAL if outcome == "royal" else FLUSH] + [NOTHING] * 0
            out.append(hit(n, hands))
        out.append(result(n))
    return [body(table, i, t, p) for i, (t, p) in enumerate(out, start=1)]


def state(led: Ledger) -> dict[str, Any]:
    pool = led.pool(P)
    assert pool is not None
    rows = led.db.execute("SELECT table_id, seq, status, amount FROM messages"
                          " ORDER BY table_id, seq")
    hits = led.db.execute("SELECT table_id, round, paid FROM hits ORDER BY table_id, round")
    return {"pool": pool.row(), "messages": rows, "hits": hits}


ROUNDS = st.lists(st.tuples(st.integers(1, 7), st.sampled_from(["ok", "void", "royal",
                                                                  "flush"])),
                  min_size=1, max_size=12)


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rounds=ROUNDS, data=st.data())
def test_any_delivery_order_with_duplicates_applies_each_message_once(
    new_url: NewUrl, rounds: list[tuple[int, str]], data: st.DataObject
) -> None:
    msgs = script("T1", rounds)
    reference = ledger(new_url)
    reference.apply_batch([Incoming("outbox", "T1", m) for m in msgs])
    dups = data.draw(st.lists(st.sampled_from(msgs), max_size=len(msgs)))
    delivery = data.draw(st.permutations(msgs + dups))
    cuts = sorted(data.draw(st.lists(st.integers(0, len(delivery)), max_size=6)))
    led = ledger(new_url)
    acks: list[int] = []
    for lo, hi in zip([0, *cuts], [*cuts, len(delivery)], strict=True):
        res = led.apply_batch([Incoming("outbox", "T1", m) for m in delivery[lo:hi]])
        if "T1" in res.acks:
            acks.append(res.acks["T1"])
    assert state(led) == state(reference)
    assert acks == sorted(acks) and acks[-1] == len(msgs)  # cumulative, never backwards
    pool = led.pool(P)
    assert pool is not None and pool.imbalance() == 0
    assert pool.wagers_in == sum(w for w, o in rounds if o != "void") * 100
    led.close()  # one connection per example would exhaust PostgreSQL's max_connections
    reference.close()


def test_two_royal_flushes_are_serialised_in_arrival_order(new_url: NewUrl) -> None:
    led = ledger(new_url)
    # Paid at once (no verification, no dual control): this is about the order.
    led.policy = HitPolicy(verify_from=None, dual_control_from=None)
    a = [*script("A", [(3, "ok")]), body("A", 3, *inc(2))]  # round 2's jackpot wager
    b = [*script("B", [(2, "ok")]), body("B", 3, *inc(2))]
    led.apply_batch([Incoming("outbox", t, m) for t, ms in (("A", a), ("B", b)) for m in ms])
    before = led.pool(P)
    assert before is not None
    ra = body("A", 4, *hit(2, [ROYAL]))
    rb = body("B", 4, *hit(2, [ROYAL]))
    res = led.apply_batch([Incoming("outbox", "A", ra), Incoming("outbox", "B", rb)])
    (ta, award_a), (tb, award_b) = res.awards
    assert (ta, tb) == ("A", "B")
    # The first takes the whole meter (UTH 15.2.9.1); the second gets the reset meter or the
    # minimum, the house topping up.
    first = award_a["payouts"][0]
    second = award_b["payouts"][0]
    assert first["from_meter"] == before.amount
    assert second["from_meter"] == PARAMS.seed
    assert second["amount"] == max(PARAMS.paytable.royal_minimum, PARAMS.seed)
    pool = led.pool(P)
    assert pool is not None and pool.imbalance() == 0 and pool.hits == 2
    assert pool.paid == before.amount + PARAMS.seed
    hits = led.report()["pools"][0]["last_hits"]
    assert [h["table"] for h in hits] == ["B", "A"]  # newest first


def test_a_broken_invariant_stops_the_pool_loudly(new_url: NewUrl,
                                                  caplog: pytest.LogCaptureFixture) -> None:
    led = ledger(new_url)
    msgs = script("T1", [(1, "ok"), (2, "ok")])
    led.apply_batch([Incoming("outbox", "T1", m) for m in msgs[:2]])
    led.db.execute("UPDATE pools SET amount = amount + 1 WHERE id = ?", (P,))  # tampering
    res = led.apply_batch([Incoming("outbox", "T1", m) for m in msgs[2:]])
    assert res.stopped == [P] and res.held and res.acks == {}
    assert "STOPPED" in caplog.text
    pool = led.pool(P)
    assert pool is not None and pool.stopped and "off by -1" in pool.stopped
    assert led.table_totals("T1")["last_seq"] == 2  # nothing applied, nothing acknowledged
    assert "STOPPED" in cli.format_report(led.report())
    with pytest.raises(LedgerError, match="still unbalanced"):
        led.resume_pool(P, operator="alice", authorised=["alice"], reason="books checked")
    led.db.execute("UPDATE pools SET amount = amount - 1 WHERE id = ?", (P,))
    with pytest.raises(LedgerError, match="not authorised"):
        led.resume_pool(P, operator="mallory", authorised=["alice"], reason="mine now")
    with pytest.raises(LedgerError, match="needs a reason"):  # who resumes says why
        led.resume_pool(P, operator="alice", authorised=["alice"], reason=" ")
    assert led.pool(P).stopped  # type: ignore[union-attr]
    led.resume_pool(P, operator="alice", authorised=["alice"],
                    reason="ticket 12: the meter was edited by hand, put back")
    last = led.param_log(P)[-1]
    assert (last["action"], last["operator"], last["outcome"]) == (
        "resume", "alice", "applied: reason: ticket 12: the meter was edited by hand, put back")
    res = led.apply_batch([Incoming("outbox", "T1", m) for m in msgs[2:]])
    assert res.acks == {"T1": len(msgs)}


def test_a_bad_payload_is_refused_and_does_not_block_the_messages_behind_it(
    new_url: NewUrl,
) -> None:
    led = ledger(new_url)
    t, p = inc(1, 2)
    bad = body("T1", 1, t, {**p, "amount": 999})  # amount != wager x wagers
    unknown = body("T1", 2, "jackpot_refill", {"round": 1})
    good = body("T1", 3, *inc(2, 1))
    res = led.apply_batch([Incoming("outbox", "T1", m) for m in (bad, unknown, good)])
    assert res.acks == {"T1": 3} and len(res.refused) == 2
    rows = led.db.execute("SELECT seq, status, reason FROM messages ORDER BY seq")
    assert [r["status"] for r in rows] == ["refused", "refused", "applied"]
    assert "999" in rows[0]["reason"] and "jackpot_refill" in rows[1]["reason"]
    assert led.pool(P).wagers_in == 100  # type: ignore[union-attr]


def test_a_message_is_stored_as_received_parked_or_not(new_url: NewUrl) -> None:
    """The audit body of a message that came with its text (the worker's: the bytes off the
    wire) is that text, also when it was parked and applied in a later batch; one without
    is encoded. Either way it reads back as the message, and a resend is compared by content,
    not by how its text is laid out."""
    from headoffice.worker import parse

    led = ledger(new_url)
    msgs = [body("T1", n, *inc(n, n)) for n in (1, 2, 3, 4)]
    texts = [json.dumps(m, indent=n) for n, m in enumerate(msgs, start=1)]  # not canonical
    wire = [Incoming("outbox", "T1", m, t) for m, t in zip(msgs, texts, strict=True)]
    res = led.apply_batch([wire[0], wire[2]])  # 3 waits for 2: parked in the database
    assert res.acks == {"T1": 1} and res.parked == 1
    res = led.apply_batch([wire[1], Incoming("outbox", "T1", msgs[3])])  # 4 without text
    assert res.acks == {"T1": 4} and res.applied == 3
    stored = [r["body"] for r in led.db.execute(
        "SELECT body FROM messages WHERE table_id = 'T1' ORDER BY seq")]
    assert stored == [*texts[:3], json.dumps(msgs[3], sort_keys=True)]
    assert [json.loads(b) for b in stored] == msgs
    # the same message laid out otherwise is a duplicate; other content is a fork
    res = led.apply_batch([Incoming("outbox", "T1", msgs[1], json.dumps(msgs[1]))])
    assert res.duplicates == 1 and res.forks == []
    changed = {**msgs[1], "journal_seq": msgs[1]["journal_seq"] + 1}
    res = led.apply_batch([Incoming("outbox", "T1", changed, json.dumps(changed))])
    assert res.duplicates == 1 and len(res.forks) == 1
    # the worker hands the ledger the payload it parsed
    payload = contract.dumps(msgs[0])
    [item] = parse(contract.outbox_topic("T1"), payload)
    assert item.text == payload.decode() and item.body == msgs[0]
    pool = led.pool(P)
    assert pool is not None and pool.wagers_in == 100 * (1 + 2 + 3 + 4)
    assert pool.imbalance() == 0
    led.close()


def test_unknown_pool_holds_the_table_until_it_exists(new_url: NewUrl) -> None:
    led = ledger(new_url)
    t, p = inc(1)
    res = led.apply_batch([Incoming("outbox", "T1", body("T1", 1, t, {**p, "pool_id": "p9"})),
                           Incoming("outbox", "T1", body("T1", 2, *inc(2)))])
    assert res.held and res.acks == {} and res.parked == 1
    led.ensure_pool("p9", PARAMS)
    res = led.apply_batch([Incoming("outbox", "T1", body("T1", 1, t, {**p, "pool_id": "p9"}))])
    assert res.acks == {"T1": 2}  # the parked message behind it followed


def test_ceiling_overflow_keeps_the_books(new_url: NewUrl) -> None:
    led = Ledger.open(new_url())
    led.ensure_pool(P, Params(seed=1000, increment=Fraction(1, 2), hidden=Fraction(1, 10),
                              ceiling=1100))
    led.enrol({"T1": P})
    led.apply_batch([Incoming("outbox", "T1", m) for m in script("T1", [(7, "ok")] * 5)])
    pool = led.pool(P)
    assert pool is not None
    assert pool.amount == 1100 and pool.overflow == 5 * 700 // 2 - 100
    assert pool.imbalance() == 0


def at_once(target: Callable[..., None], *calls: tuple[Any, ...]) -> None:
    """Run target(*args) for each args in its own thread, all at once; wait for all."""
    threads = [threading.Thread(target=target, args=args) for args in calls]
    for th in threads:
        th.start()
    for th in threads:
        th.join()


def _live(led: Ledger, table: str) -> None:
    led.apply_batch([Incoming("birth", table, {"v": 1, "table": table, "pool_id": P,
                                               "pending_hits": []})])


def test_parameters_cannot_change_while_tables_are_live_unless_forced(new_url: NewUrl) -> None:
    led = ledger(new_url)
    _live(led, "T1")
    assert led.live_tables(P, 60) == ["T1"]
    new_rate = {"increment": Fraction(3, 10)}
    ops = ["alice", "bob"]
    with pytest.raises(LedgerError, match="live on pool p1: T1"):
        led.set_params(P, new_rate, operator="alice", authorised=ops, reason="r")
    with pytest.raises(LedgerError, match="not authorised"):
        led.set_params(P, new_rate, operator="mallory", authorised=ops, force=True, reason="r")
    first = led.set_params(P, new_rate, operator="alice", authorised=ops, force=True,
                           reason="r")  # dual control: applied by the second approver
    change = led.approve_change(first.decision_no, operator="bob", authorised=ops, reason="ok")
    old, new = change.old, change.new
    assert old.increment == Fraction(1, 4) and new.increment == Fraction(3, 10)
    log = led.param_log(P)
    assert [r["outcome"].split(":")[0] for r in log] == ["applied", "refused", "refused",
                                                          "pending", "applied"]
    last = log[-1]
    assert json.loads(last["old"])["increment"] == "1/4"
    assert json.loads(last["new"])["increment"] == "3/10"
    assert last["forced"] and json.loads(last["live_tables"]) == ["T1"]
    # The table goes offline (its last will): no force needed any more.
    led.apply_batch([Incoming("status", "T1", {"v": 1, "table": "T1", "state": "offline"})])
    led.set_params(P, {"seed": 600_000}, operator="bob", authorised=OPS, reason="r")
    assert led.pool(P).params.seed == 600_000  # type: ignore[union-attr]
    # A stale table (not seen for the live window) is not live either.
    _live(led, "T1")
    led.clock = lambda: time.time() + 3600
    assert led.live_tables(P, 60) == []


def test_birth_gets_a_lost_award_answered_again(new_url: NewUrl) -> None:
    led = ledger(new_url)
    led.policy = HitPolicy(verify_from=None, dual_control_from=None)  # the Royal is paid at once
    msgs = script("T1", [(1, "royal")])
    first = led.apply_batch([Incoming("outbox", "T1", m) for m in msgs])
    award = first.awards[0][1]
    res = led.apply_batch([Incoming("birth", "T1", {"v": 1, "table": "T1", "pool_id": P,
                                                    "pending_hits": [{"round": 1}]})])
    assert res.awards == [("T1", award)] and res.acks == {"T1": len(msgs)}
    # A resent hit (its ack was lost) is not applied twice but answered again.
    res = led.apply_batch([Incoming("outbox", "T1", msgs[1])])
    assert res.duplicates == 1 and res.awards == [("T1", award)]
    assert led.pool(P).hits == 1  # type: ignore[union-attr]


def test_report_cli_json_and_text(new_url: NewUrl, tmp_path: Path,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    led = ledger(new_url)
    led.policy = HitPolicy(verify_from=None, dual_control_from=None)  # the Royal is paid at once
    led.apply_batch([Incoming("outbox", "T1", m) for m in script("T1", [(4, "royal")])])
    url = led.db.url
    led.close()
    assert cli.main(["report", "--db", url, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    (pool,) = report["pools"]
    for key in ("in", "current", "hits", "wins", "overflow", "reserve", "base", "limit", "rate",
                "last_hits"):
        assert key in pool
    assert pool["in"] == 400 and pool["hits"] == 1 and len(pool["last_hits"]) == 1
    assert pool["wins"] == pool["last_hits"][0]["paid"] > 0
    assert cli.main(["report", "--db", url]) == 0
    text = capsys.readouterr().out
    assert "pool p1" in text and "box 1 Royal Flush $" in text and "royal_flush" not in text
    assert cli.main(["--config", str(tmp_path / "missing.toml"), "report"]) == 2


def test_pool_round_trips_through_its_row() -> None:
    pool = Pool.new(P, PARAMS)
    pool, _, _ = pool.contribute(700)
    assert Pool.from_row(pool.row()) == pool


def test_two_workers_sharing_tables_apply_everything_once(new_url: NewUrl) -> None:
    """Two workers (two connections) get the same messages, naming the tables in opposite
    orders (shared subscription plus redelivery): nothing is applied twice, no deadlock."""

    first = ledger(new_url)
    second = Ledger.open(first.db.url)
    rounds = [(2, "ok"), (1, "void"), (3, "ok")] * 4
    msgs = {t: script(t, rounds) for t in ("A", "B", "C")}
    errors: list[BaseException] = []

    def work(led: Ledger, order: list[str]) -> None:
        try:
            for i in range(len(msgs["A"])):
                led.apply_batch([Incoming("outbox", t, msgs[t][i]) for t in order])
        except BaseException as exc:  # reported below, not lost in the thread
            errors.append(exc)

    at_once(work, (first, ["A", "B", "C"]), (second, ["C", "B", "A"]))
    second.close()
    assert errors == []
    pool = first.pool(P)
    assert pool is not None and pool.imbalance() == 0
    assert pool.wagers_in == 3 * sum(w for w, o in rounds if o != "void") * 100
    for t in msgs:
        assert first.table_totals(t)["last_seq"] == len(msgs[t])
    (count,) = first.db.execute("SELECT count(*) AS n FROM messages")
    assert count["n"] == 3 * len(msgs["A"])
    first.close()



def test_three_workers_at_once_apply_each_message_once_and_keep_the_books(
        new_url: NewUrl) -> None:
    """Three workers (three connections, three threads) share twelve tables' messages as a
    shared subscription hands them out: each table's messages spread over all three, some
    twice, in batches of any size, at the same time. Contributions go to each worker's share
    of the pool, hits and cancellations fold the shares in: every message is applied once,
    the books balance to the exact fraction, and every hit is numbered in order."""
    import random

    rng = random.Random(17)
    tables = [f"W{i}" for i in range(12)]
    first = Ledger.open(new_url())
    first.ensure_pool(P, PARAMS)
    first.enrol(dict.fromkeys([*tables, "A", "B", "C"], P))
    workers = [first, Ledger.open(first.db.url), Ledger.open(first.db.url)]
    for led in workers:
        # Hits paid at once (no verification, no dual control): this is about order.
        led.policy = HitPolicy(verify_from=None, dual_control_from=None)
    rounds = {t: [(rng.randint(1, 4), rng.choice(["ok"] * 6 + ["void", "flush", "royal"]))
                  for _ in range(12)] for t in tables}
    msgs = {t: script(t, rounds[t]) for t in tables}
    # The broker's arrival order: the tables interleaved, each in its own order; then round
    # robin over the workers, and a tenth of the messages delivered again to anyone.
    queues = {t: list(m) for t, m in msgs.items()}
    arrival: list[tuple[str, dict[str, Any]]] = []
    while any(queues.values()):
        t = rng.choice([t for t in tables if queues[t]])
        arrival.append((t, queues[t].pop(0)))
    share: list[list[Incoming]] = [[], [], []]
    for n, (t, m) in enumerate(arrival):
        share[n % 3].append(Incoming("outbox", t, m))
        if rng.random() < 0.1:
            share[rng.randrange(3)].append(Incoming("outbox", t, m))
    errors: list[BaseException] = []

    def work(led: Ledger, items: list[Incoming], seed: int) -> None:
        cut = random.Random(seed)
        try:
            lo = 0
            while lo < len(items):
                hi = lo + cut.randint(1, 40)
                led.apply_batch(items[lo:hi])
                lo = hi
        except BaseException as exc:  # reported below, not lost in the thread
            errors.append(exc)

    at_once(work, *((led, share[i], i) for i, led in enumerate(workers)))
    assert errors == []
    for t in tables:
        assert first.table_totals(t)["last_seq"] == len(msgs[t]), t
    rows = first.db.execute("SELECT table_id, seq FROM messages ORDER BY table_id, seq")
    assert [(r["table_id"], r["seq"]) for r in rows] == sorted(
        (t, s) for t in tables for s in range(1, len(msgs[t]) + 1))
    pool = first.pool(P)
    assert pool is not None and pool.stopped is None
    assert pool.imbalance() == 0
    # A void round's cancellation after another table's Royal emptied the reserve is refused
    # (the reserve would go below 0): its wagers stay in. Nothing else is refused.
    refused = first.db.execute("SELECT type, reason, body FROM messages"
                               " WHERE status <> 'applied'")
    assert all(r["type"] == "jackpot_cancel" and "below 0" in r["reason"] for r in refused)
    wagered = (sum(100 * w for t in tables for w, o in rounds[t] if o != "void")
               + sum(json.loads(r["body"])["payload"]["amount"] for r in refused))
    assert wagered == sum(first.table_totals(t)["wagered"] for t in tables)
    assert pool.wagers_in == wagered
    assert pool.contributions == wagered * (PARAMS.increment + PARAMS.hidden)  # exact
    hits = first.db.execute("SELECT hit_no, pool_before, pool_after, paid FROM hits"
                            " WHERE pool_id = ? ORDER BY hit_no", (P,))
    assert [h["hit_no"] for h in hits] == list(range(1, pool.hits + 1))
    assert pool.hits == sum(o in ("flush", "royal") for t in tables for _, o in rounds[t])
    assert all(h["pool_after"] <= h["pool_before"] or h["paid"] == 0 for h in hits)
    # Then each worker contributes once more: three shares, and the pool read is the row
    # plus every share.
    for led, t in zip(workers, ("A", "B", "C"), strict=True):
        led.apply_batch([Incoming("outbox", t, body(t, 1, *inc(1, 2)))])
    shares = first.db.execute("SELECT shard, changes FROM pool_shares WHERE pool_id = ?"
                              " AND changes > 0", (P,))
    assert sorted(s["shard"] for s in shares) == sorted(led.shard for led in workers)
    row = first.db.one("SELECT version, amount FROM pools WHERE id = ?", (P,))
    now = first.pool(P)
    assert row is not None and now is not None and now.imbalance() == 0
    assert now.version == row["version"] + sum(s["changes"] for s in shares) == pool.version + 3
    assert now.wagers_in == pool.wagers_in + 3 * 200
    for led in workers:
        led.close()


def test_contributions_of_two_workers_to_one_pool_do_not_wait_for_each_other(
        new_url: NewUrl) -> None:
    """PostgreSQL: while one worker's contribution to the pool is uncommitted, another
    worker's contribution to the same pool commits (each locks only its own share, and the
    pool's row FOR KEY SHARE); the pool then holds both."""
    first = ledger(new_url)
    if first.db.dialect != "postgresql":
        first.close()
        pytest.skip("SQLite has one writer at a time: nothing to show")
    second = Ledger.open(first.db.url)
    with first.db.transaction():
        # The steps of apply_batch's transaction, stopped before the commit.
        batch = _Batch(first, BatchResult(), set())
        batch.preload([Incoming("outbox", "A", body("A", 1, *inc(1)))], skip=False)
        batch.outbox("A", body("A", 1, *inc(1)))
        batch.flush()  # written, not committed: the pool's row and A's row are held
        done = threading.Event()
        th = threading.Thread(target=lambda: (second.apply_batch(
            [Incoming("outbox", "B", body("B", 1, *inc(1, 3)))]), done.set()))
        th.start()
        assert done.wait(20), "the second worker's contribution waited for the first"
    th.join()
    pool = first.pool(P)
    assert pool is not None and pool.wagers_in == 400 and pool.imbalance() == 0
    second.close()
    first.close()


def test_a_contribution_waits_for_a_hit_on_its_pool_and_never_the_reverse_order(
        new_url: NewUrl) -> None:
    """A hit holds the pool's row: a contribution from another worker arriving meanwhile is
    applied after it (the award took the meter as it stood), and both are counted."""
    first = ledger(new_url)
    second = Ledger.open(first.db.url)
    first.policy = HitPolicy(verify_from=None, dual_control_from=None)
    a = script("A", [(3, "ok")])
    first.apply_batch([Incoming("outbox", "A", m) for m in a])
    first.apply_batch([Incoming("outbox", "A", body("A", 3, *inc(2)))])
    before = first.pool(P)
    assert before is not None
    with first.db.transaction():
        locked = first._locked_pool(P)  # what a hit's transaction does first
        assert locked == before
        done = threading.Event()

        def contribute() -> None:
            second.apply_batch([Incoming("outbox", "B", m) for m in script("B", [(1, "ok")])])
            done.set()

        th = threading.Thread(target=contribute)
        th.start()
        if first.db.dialect == "postgresql":  # SQLite: the other waits for the whole file
            assert not done.wait(0.5)  # waiting for the row
    th.join()
    assert done.is_set()
    after = first.pool(P)
    assert after is not None and after.wagers_in == before.wagers_in + 100
    assert after.version == before.version + 1 and after.imbalance() == 0
    second.close()
    first.close()

# -- the parameter audit trail ----------------------------------------------------------------
def test_param_log_keeps_the_order_changes_were_made_in_one_millisecond(
    new_url: NewUrl, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every entry carries its pool's next number; the trail is in that order, whatever the
    clock says: several changes in one millisecond, then the clock stepped back."""
    import headoffice.ledger.common

    now = {"utc": "2026-03-01T10:00:00.000Z"}
    monkeypatch.setattr(headoffice.ledger.common, "utc_now", lambda: now["utc"])
    led = ledger(new_url)  # create: #1
    for seed in (600_000, 700_000, 800_000):  # #2, #3, #4
        led.set_params(P, {"seed": seed}, operator="alice", authorised=OPS, reason="sign")
    _live(led, "T1")
    with pytest.raises(LedgerError, match="live"):  # refused: #5
        led.set_params(P, {"seed": 900_000}, operator="bob", authorised=OPS, reason="sign")
    now["utc"] = "2026-03-01T09:59:59.000Z"  # the clock steps back
    ops = ["alice", "bob"]
    first = led.set_params(P, {"seed": 1_000_000}, operator="alice", authorised=ops,
                           force=True, reason="sign")  # #6: the first of two approvals
    led.approve_change(first.decision_no, operator="bob", authorised=ops, reason="ok")  # #7
    led.ensure_pool("p2", PARAMS)  # another pool: its own numbers
    led.set_params("p2", {"seed": 650_000}, operator="alice", authorised=OPS, reason="sign")
    log = led.param_log(P)
    assert [r["entry_no"] for r in log] == [1, 2, 3, 4, 5, 6, 7]
    assert {r["utc"] for r in log[:5]} == {"2026-03-01T10:00:00.000Z"}
    assert [(r["action"], r["outcome"].split(":")[0], json.loads(r["new"])["seed"])
            for r in log[1:]] == [("set", "applied", 600_000), ("set", "applied", 700_000),
                                  ("set", "applied", 800_000), ("set", "refused", 900_000),
                                  ("set", "pending", 1_000_000), ("set", "applied", 1_000_000)]
    assert log[0]["action"] == "create" and log[-1]["forced"]
    everything = led.param_log()
    assert [(r["pool_id"], r["entry_no"]) for r in everything] == [
        *((P, n) for n in range(1, 8)), ("p2", 1), ("p2", 2)]
    url = led.db.url
    led.close()
    assert cli.main(["params-log", P, "--db", url]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines()
             if not line.startswith(" ")]  # each entry's before/after rows are indented
    assert [line.split()[:2] for line in lines] == [[P, f"#{n}"] for n in range(1, 8)]
    assert "refused" in lines[4] and "(forced)" in lines[5] and "pending" in lines[5]
    assert cli.main(["params-log", "--db", url, "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [(r["pool_id"], r["entry_no"]) for r in rows] == [(r["pool_id"], r["entry_no"])
                                                             for r in everything]


# The param_log table as ledgers before the entry numbers made it (the rest is unchanged).
OLD_PARAM_LOG = """CREATE TABLE param_log (
    pool_id TEXT NOT NULL, utc TEXT NOT NULL, operator TEXT NOT NULL, action TEXT NOT NULL,
    forced BOOLEAN NOT NULL, outcome TEXT NOT NULL, live_tables TEXT NOT NULL,
    old TEXT, new TEXT)"""


def _raw_connection(url: str) -> Any:
    """A plain driver connection, so the old DDL is not upgraded on the way in."""
    if url.startswith("postgresql://"):
        import psycopg

        return psycopg.connect(url, autocommit=True)
    import sqlite3

    return sqlite3.connect(url, isolation_level=None)


def test_an_old_param_log_is_numbered_when_the_ledger_opens(new_url: NewUrl) -> None:
    """A ledger made before `entry_no`: opening it rebuilds param_log with the numbers, each
    pool's entries in their old order (utc, then the order stored); it then goes on from there,
    and opening it again changes nothing."""
    url = new_url.bare()  # the old table is made before the ledger's
    ph = "%s" if url.startswith("postgresql://") else "?"
    old = [  # (pool, utc, action, seed) in the order they were stored
        (P, "2026-01-01T00:00:00.000Z", "create", 500_000),
        ("p2", "2026-01-01T00:00:00.000Z", "create", 500_000),
        (P, "2026-01-02T00:00:00.000Z", "set", 700_000),  # stored before an earlier entry
        (P, "2026-01-01T12:00:00.000Z", "set", 600_000),
        (P, "2026-01-02T00:00:00.000Z", "set", 800_000),  # same millisecond as 700_000
    ]
    conn = _raw_connection(url)
    conn.execute(OLD_PARAM_LOG)
    for pool_id, utc, action, seed in old:
        conn.execute(
            f"INSERT INTO param_log VALUES ({', '.join([ph] * 9)})",
            (pool_id, utc, "alice", action, False, "applied", "[]", None,
             json.dumps({"seed": seed})),
        )
    conn.close()

    led = Ledger.open(url)
    fresh = Ledger.open(new_url())
    assert led.db.columns("param_log") == fresh.db.columns("param_log")
    fresh.close()
    log = led.param_log(P)
    assert [(r["entry_no"], json.loads(r["new"])["seed"]) for r in log] == [
        (1, 500_000), (2, 600_000), (3, 700_000), (4, 800_000)]
    assert [r["entry_no"] for r in led.param_log("p2")] == [1]
    led.ensure_pool(P, PARAMS)  # the pool row did not exist: a create entry, numbered on
    led.set_params(P, {"seed": 900_000}, operator="alice", authorised=OPS, reason="sign")
    assert [r["entry_no"] for r in led.param_log(P)] == [1, 2, 3, 4, 5, 6]
    with pytest.raises(Exception, match=r"(?i)unique|duplicate"):  # (pool_id, entry_no) is a key
        led.db.execute("INSERT INTO param_log (pool_id, entry_no, utc, operator, action, forced,"
                       " outcome, live_tables) VALUES (?, 6, 'x', 'x', 'x', ?, 'x', '[]')",
                       (P, False))
    before = led.param_log()
    led.close()
    again = Ledger.open(url)
    assert again.param_log() == before
    assert [(r["pool_id"], r["entry_no"]) for r in before] == [
        *((P, n) for n in range(1, 7)), ("p2", 1)]
    again.close()


def test_workers_starting_together_create_a_pool_once(new_url: NewUrl,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Two workers start on a new ledger and both ensure the configured pool. On PostgreSQL
    the first's row is not yet committed, so the second cannot lock it: its insert must wait
    and find it (it used to fail, UniqueViolation, and the worker died at start)."""

    first = Ledger.open(new_url())
    second = Ledger.open(first.db.url)
    inside = threading.Event()
    go_on = threading.Event()
    log_entry = first._param_log

    def slow_log(*args: Any) -> None:  # the first holds its new pool row, uncommitted
        inside.set()
        assert go_on.wait(10)
        log_entry(*args)

    monkeypatch.setattr(first, "_param_log", slow_log)
    results: list[Any] = []

    def start(led: Ledger) -> None:
        try:
            results.append(led.ensure_pool(P, PARAMS))
        except Exception as exc:  # reported below
            results.append(exc)

    a = threading.Thread(target=start, args=(first,))
    a.start()
    assert inside.wait(10)
    b = threading.Thread(target=start, args=(second,))
    b.start()
    b.join(0.5)  # the second reaches its insert and waits there (SQLite: waits to begin)
    go_on.set()
    a.join()
    b.join()
    assert [type(r) for r in results] == [Pool, Pool], results
    assert results[0] == results[1]
    assert [(r["action"], r["entry_no"]) for r in first.param_log()] == [("create", 1)]
    first.close()
    second.close()


# -- alarms -----------------------------------------------------------------------------------
def test_alarms_in_one_millisecond_come_back_newest_first_in_the_order_recorded(
    new_url: NewUrl, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The report's last 25 alarms are in the order they were recorded, by `alarm_no`, however
    many share a millisecond (the clock stepped back too); `report` prints the numbers."""
    import headoffice.ledger.common

    now = {"utc": "2026-03-01T10:00:00.000Z"}
    monkeypatch.setattr(headoffice.ledger.common, "utc_now", lambda: now["utc"])
    led = ledger(new_url)
    for i in range(1, 21):
        led.alarm(f"alarm {i}", P if i % 2 else None, f"T{i}")
    now["utc"] = "2026-03-01T09:00:00.000Z"  # the clock steps back
    for i in range(21, 31):
        led.alarm(f"alarm {i}")
    alarms = led.report()["alarms"]
    assert [a["alarm_no"] for a in alarms] == list(range(30, 5, -1))  # the last 25
    assert [a["text"] for a in alarms] == [f"alarm {i}" for i in range(30, 5, -1)]
    assert alarms[-1] == {"alarm_no": 6, "utc": "2026-03-01T10:00:00.000Z", "pool_id": None,
                          "table_id": "T6", "text": "alarm 6"}
    url = led.db.url
    led.close()
    assert cli.main(["report", "--db", url, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["alarms"] == alarms
    assert cli.main(["report", "--db", url]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("ALARM")]
    assert [line.split()[1] for line in lines] == [f"#{n}" for n in range(30, 5, -1)]
    # For a person: in the casino's zone (UTC with --db alone); --json keeps the stored time.
    assert lines[-1] == "ALARM #6 2026-03-01 10:00:00 UTC  T6: alarm 6"
    assert lines[-2] == "ALARM #7 2026-03-01 10:00:00 UTC p1 T7: alarm 7"


def test_two_workers_recording_alarms_get_distinct_increasing_numbers(
    new_url: NewUrl, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two workers (two connections, no row in common) record alarms in turn, then at once:
    every alarm has its own number, each later than the ones recorded before it."""

    import headoffice.ledger.common

    monkeypatch.setattr(headoffice.ledger.common, "utc_now", lambda: "2026-03-01T10:00:00.000Z")
    first = ledger(new_url)
    second = Ledger.open(first.db.url)
    for i in range(6):  # in turn: the numbers follow the order recorded
        (first if i % 2 == 0 else second).alarm(f"turn {i}")
    numbers = {a["text"]: a["alarm_no"] for a in first.report()["alarms"]}
    assert [numbers[f"turn {i}"] for i in range(6)] == [1, 2, 3, 4, 5, 6]

    if first.db.dialect == "postgresql":  # one alarm inside a larger transaction, still open
        with first.db.transaction():
            first.db.execute("SELECT id FROM pools WHERE id = ? FOR UPDATE", (P,))
            first.alarm("inside")
            second.alarm("meanwhile")  # not held up, and not given the same number
        numbers = {a["text"]: a["alarm_no"] for a in first.report()["alarms"]}
        assert (numbers["inside"], numbers["meanwhile"]) == (7, 8)

    start = threading.Barrier(2)
    errors: list[BaseException] = []

    def record(led: Ledger, name: str) -> None:
        try:
            start.wait(10)
            for i in range(40):
                led.alarm(f"{name} {i}")
        except BaseException as exc:  # reported below, not lost in the thread
            errors.append(exc)

    at_once(record, (first, "a"), (second, "b"))
    second.close()
    assert errors == []
    rows = first.db.execute("SELECT alarm_no, text FROM alarms ORDER BY alarm_no")
    nos = [r["alarm_no"] for r in rows]
    assert len(set(nos)) == len(nos) == len(rows)
    assert nos == list(range(1, len(rows) + 1))  # nothing rolled back here: no gaps either
    for name in ("a", "b"):  # each worker's alarms in the order it recorded them
        assert [r["text"] for r in rows if r["text"].startswith(f"{name} ")] == [
            f"{name} {i}" for i in range(40)]
    reported = [a["alarm_no"] for a in first.report()["alarms"]]
    assert reported == sorted(nos, reverse=True)[:25]
    first.close()


# The alarms table as ledgers before the alarm numbers made it (the rest is unchanged).
OLD_ALARMS = """CREATE TABLE alarms (
    utc TEXT NOT NULL, pool_id TEXT, table_id TEXT, text TEXT NOT NULL)"""


def test_old_alarms_are_numbered_when_the_ledger_opens(new_url: NewUrl) -> None:
    """A ledger made before `alarm_no`: opening it rebuilds alarms with the numbers, in the
    order the old report gave (SQLite: as stored; PostgreSQL: utc, then as stored); new alarms
    go on from there, and opening it again changes nothing."""
    url = new_url.bare()  # the old table is made before the ledger's
    ph = "%s" if url.startswith("postgresql://") else "?"
    old = [  # (utc, pool, table, text) in the order they were stored
        ("2026-01-01T00:00:02.000Z", P, "T1", "A"),
        ("2026-01-01T00:00:01.000Z", None, "T2", "B"),  # stored after a later one
        ("2026-01-01T00:00:02.000Z", P, None, "C"),  # same millisecond as A
        ("2026-01-01T00:00:03.000Z", None, None, "D"),
    ]
    conn = _raw_connection(url)
    conn.execute(OLD_ALARMS)
    for row in old:
        conn.execute(f"INSERT INTO alarms VALUES ({ph}, {ph}, {ph}, {ph})", row)
    conn.close()
    empty_url = new_url.bare()  # an old ledger that never had an alarm
    conn = _raw_connection(empty_url)
    conn.execute(OLD_ALARMS)
    conn.close()

    led = Ledger.open(url)
    fresh = Ledger.open(new_url())
    assert led.db.columns("alarms") == fresh.db.columns("alarms")
    fresh.close()
    order = "ABCD" if led.db.dialect == "sqlite" else "BACD"
    rows = led.db.execute("SELECT * FROM alarms ORDER BY alarm_no")
    assert [(r["alarm_no"], r["text"]) for r in rows] == list(enumerate(order, start=1))
    by_text = {r["text"]: (r["utc"], r["pool_id"], r["table_id"]) for r in rows}
    assert by_text == {text: (utc, pool, table) for utc, pool, table, text in old}
    led.alarm("E")
    assert [(a["alarm_no"], a["text"]) for a in led.report()["alarms"]] == [
        (5, "E"), *reversed(list(enumerate(order, start=1)))]
    with pytest.raises(Exception, match=r"(?i)unique|duplicate"):  # alarm_no is the key
        led.db.execute("INSERT INTO alarms (alarm_no, utc, text) VALUES (5, 'x', 'x')")
    before = led.report()["alarms"]
    led.close()
    again = Ledger.open(url)
    assert again.report()["alarms"] == before
    again.alarm("F")
    assert again.report()["alarms"][0]["alarm_no"] == 6
    again.close()

    empty = Ledger.open(empty_url)
    empty.alarm("first")
    assert [(a["alarm_no"], a["text"]) for a in empty.report()["alarms"]] == [(1, "first")]
    empty.close()
