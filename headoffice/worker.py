"""A head-office worker: the MQTT side of the ledger.

It reads the outboxes of the tables in the partitions it holds (headoffice/routing.py: one
worker per table at a time, leased in the ledger's database), and every table's birth and
status through an MQTT v5 shared subscription (`$share/headoffice/...`); applies what arrives
in batches (one durable transaction each, `Ledger.apply_batch`); and only then publishes the
cumulative acks, the awards and the new pool values. Pool values are republished every `heartbeat_s`
(retained, expiring after `pool_expiry_s`): a table that stops hearing them shows OFFLINE.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import Counter
from collections.abc import Iterable
from typing import Any

from headoffice.config import HeadOfficeConfig
from headoffice.db import open_database
from headoffice.ledger import BatchResult, Incoming, Ledger, cards, utc_now
from headoffice.notify import LedgerWatch
from headoffice.pools import Pool, PoolValue
from headoffice.routing import PARTITIONS, Routing, partition_of
from headoffice.segments import apply_segments
from shared.link import contract, patron, transport
from shared.link.transport import Backoff, Connection, LinkError, connect, run_together

log = logging.getLogger("tablectl.headoffice")
_POOL_PUBACK_S = 60.0  # how long a pool value's PUBACK may take (a dead link: keepalive)
_POOL_GAP_S = 0.05  # pool values from one worker: at most 20 a second per pool
_TOPICS_PER_PACKET = 200  # exact outbox topics per SUBSCRIBE / UNSUBSCRIBE
# The tables' Player Card requests, shared among the workers (any one answers: the decision is
# the database's, cards.py). Waiting ones beyond this are dropped: the table hears no answer in
# its [cards] answer_s and refuses the carded wager (the strict reading, UTH 13.1).
PATRON_SUBSCRIPTION = f"$share/{contract.SHARE_GROUP}/{contract.PREFIX}/table/+/patron"
_PATRON_QUEUE = 1000


def lease_for(heartbeat_s: float) -> float:
    """A worker's partition lease: three heartbeats, at least two seconds, at most a minute. A
    dead worker's tables wait this long (plus the tables' resend_s) for another reader."""
    return min(60.0, max(2.0, 3 * heartbeat_s))


class Worker:
    def __init__(self, cfg: HeadOfficeConfig, ledger: Ledger,
                 lease_s: float | None = None) -> None:
        assert cfg.broker is not None, "a worker needs [broker]"
        # paho's receive path made cheaper for the fleet's messages (issue 17): asked for here,
        # by head office's worker, never at import (a table's link reads with paho as it is).
        transport.share_paho_properties()
        self.cfg = cfg
        self.ledger = ledger
        ledger.policy = cfg.hit_policy()
        self.counters: Counter[str] = Counter()
        self.connected = asyncio.Event()
        self._db_lock = asyncio.Lock()  # one thread at a time on the ledger's connection
        # Bounded: when the ledger falls behind, the reader waits for it (what arrives
        # meanwhile waits in the MQTT client's own queue).
        self._queue: asyncio.Queue[Incoming] = asyncio.Queue(max(10_000, 4 * cfg.batch_max))
        self._unknown_alarmed: set[str] = set()  # tables not enrolled, alarmed once each
        # Pool values waiting for the publisher, newest only.
        self._pool_due: dict[str, PoolValue] = {}
        self._pool_sent: dict[str, int] = {}  # the newest version published, per pool
        self._pool_wake = asyncio.Event()
        # The worker's name in the leases is its broker identity (one certificate per worker).
        # The claims have a connection of their own (opened by `run`): queued behind the
        # ledger's batches, a busy worker's renewals came late and its leases ran out.
        self.lease_s = lease_for(cfg.heartbeat_s) if lease_s is None else lease_s
        self.routing: Routing | None = None
        self._claiming: asyncio.Future[Any] | None = None
        self.partitions: frozenset[int] = frozenset()  # held, as of the last claim
        self._released: set[int] = set()  # released, read until another worker takes them
        self._reading: set[str] = set()  # the tables whose outbox this session subscribes
        self._decided_lock = asyncio.Lock()  # the heartbeat and a ledger notice: one at a time
        # Player Card requests: answered on a connection of their own (opened by `run`), so a
        # table waiting before the first card never queues behind the ledger's batches.
        self._patron_queue: asyncio.Queue[Incoming] = asyncio.Queue(_PATRON_QUEUE)
        self._cards_lock = asyncio.Lock()  # one thread at a time on cards_db
        self.cards_db: Any = None
        self._strangers: set[str] = set()  # tables not enrolled asking for cards, logged once

    async def _db(self, fn: Any, *args: Any) -> Any:
        """Run a ledger call in a thread (`in_thread`), one at a time on its connection."""
        return await in_thread(self._db_lock, fn, *args)

    async def run(self) -> None:
        for pool_id, params in self.cfg.pools.items():
            pool = await self._db(self.ledger.ensure_pool, pool_id, params)
            if pool.params != params:  # the ledger's stand until `pool set` changes them
                log.warning("head office: pool %s keeps its ledger's parameters %s, not the"
                            " config's %s (tablectl-headoffice pool set)", pool_id,
                            pool.params.as_json(), params.as_json())
        await self._db(self.ledger.enrol, self.cfg.tables)
        self.routing = Routing(await asyncio.to_thread(open_database, self.ledger.db.url),
                               self.cfg.broker.client_id, self.lease_s)  # type: ignore[union-attr]
        self.cards_db = await asyncio.to_thread(open_database, self.ledger.db.url)
        try:
            await self._sessions()
        finally:
            if self._claiming is not None:
                with contextlib.suppress(BaseException):
                    await self._claiming
            self.routing.db.close()
            self.cards_db.close()

    async def _sessions(self) -> None:
        if not self.cfg.tables:
            log.error("head office: no [[tables]] enrolled: every table's messages are refused")
        backoff = Backoff()
        while True:
            started = time.monotonic()
            try:
                async with connect(self.cfg.broker) as conn:  # type: ignore[arg-type]
                    await self._session(conn)
            except LinkError as exc:
                log.warning("head office: broker connection: %s", exc)
                await self._broker_alarm(str(exc))
            except Exception:
                # Not the network: the ledger, a bug, input no check foresaw. Logged with its
                # traceback, counted, and the session made again; what was not acknowledged
                # the tables send again.
                self.counters["session_failures"] += 1
                log.exception("head office: session failed; reconnecting")
            finally:
                self.connected.clear()
            if time.monotonic() - started > 10:
                backoff.reset()
            await asyncio.sleep(backoff.next_delay())

    async def _session(self, conn: Connection) -> None:
        await conn.subscribe([*contract.HO_SHARED_SUBSCRIPTIONS, PATRON_SUBSCRIPTION])
        # A persistent session may still hold subscriptions of an earlier session (or of a
        # worker before issue 17, the shared outbox): dropped, then only the held tables'.
        await self._route(conn, fresh=True)
        online = {"v": contract.VERSION, "state": "online", "worker": self.cfg.broker.client_id}  # type: ignore[union-attr]
        await conn.publish(contract.HO_STATUS_TOPIC, contract.dumps(online), retain=True)
        self._offer_pools(await self._db(self.ledger.pools))
        await self._publish_due(conn)
        self.connected.set()
        self.counters["connects"] += 1
        await self._broker_alarm(None)
        await run_together(self._read(conn), self._apply(conn), self._heartbeat(conn),
                           self._pool_publisher(conn), self._routing(conn),
                           self._ledger_changes(conn), self._patron(conn))

    async def _read(self, conn: Connection) -> None:
        async for message in conn.messages():
            try:
                items = parse(message.topic, message.payload)
                self.counters["received"] += 1
                if len(items) > 1:
                    self.counters["packs"] += 1
            except contract.SchemaError as exc:
                self.counters["malformed"] += 1
                log.warning("head office: message refused: %s (topic %s)", exc,
                            message.topic[:200])
            except Exception:  # no one message may take the worker down
                self.counters["malformed"] += 1
                self.counters["message_errors"] += 1
                log.exception("head office: message failed (topic %s)", message.topic[:200])
            else:
                for item in items:
                    if item.kind != "patron":
                        await self._queue.put(item)
                        continue
                    try:
                        self._patron_queue.put_nowait(item)
                    except asyncio.QueueFull:
                        self.counters["patron_dropped"] += 1

    async def _apply(self, conn: Connection) -> None:
        while True:
            batch = [await self._queue.get()]
            while not self._queue.empty() and len(batch) < self.cfg.batch_max:
                batch.append(self._queue.get_nowait())
            # Journal segments are checked and held apart from the ledger (segments.py).
            segs = [(i.table, i.body) for i in batch if i.kind == "segment"]
            if segs:
                await self._segments(conn, segs)
                batch = [i for i in batch if i.kind != "segment"]
                if not batch:
                    continue
            result: BatchResult = await self._db(self.ledger.apply_batch, batch)
            self.counters["applied"] += result.applied
            self.counters["duplicates"] += result.duplicates
            self.counters["parked"] += result.parked
            self.counters["batches"] += 1
            for text in result.held:
                self.counters["held"] += 1
                log.error("head office: message held (not acknowledged): %s", text)
            self.counters["held_hits"] += len(result.held_hits)
            self.counters["forks"] += len(result.forks)
            self.counters["verifications"] += len(result.verified)  # recorded, not paid
            self.counters["verifications_refused"] += len(result.verify_refused)
            self.counters["refused"] += len(result.refused)
            self.counters["wager_refused"] += len(result.wager_refused)  # UTH 15.2.5.3
            self.counters["unknown_table"] += len(result.unknown)
            for table, n in Counter(result.unknown).items():
                log.warning("head office: %d message(s) from %s refused: not an enrolled table",
                            n, table)
                if table not in self._unknown_alarmed and len(self._unknown_alarmed) < 1000:
                    self._unknown_alarmed.add(table)
                    await self._db(self._alarm_unknown, table)
            # Durable now: tell the tables and the meters.
            for table, message in result.awards:
                await conn.publish(contract.award_topic(table), contract.dumps(message))
            # Acks go at QoS 0, in order, without waiting for a PUBACK each: an ack is
            # cumulative and idempotent, and one that is lost costs a resend (the relay sends
            # again after resend_s, and a duplicate is answered with the ack again; a birth
            # is answered with it too). At QoS 1, waiting for 500 tables' PUBACKs behind a
            # broker busy with their bursts took 2.4 s of a 5 s burst (bench/fleet). Queued
            # in order and not waited for at all: a task and a wait per ack, all at once,
            # cost aiomqtt O(acks^2) (transport.publish_nowait).
            for table, upto in result.acks.items():
                conn.publish_nowait(contract.ack_topic(table),
                                    contract.dumps(contract.ack_message(
                                        table, upto, result.birth_rounds.get(table),
                                        pack=contract.PACK_MAX)))
            # A hit's lower value is among them: published at once (UTH 2.4.3, 15.1.3).
            for pool_id, value in result.pools.items():
                self._due(pool_id, value)
            for pool_id in result.stopped:
                self._pool_due.pop(pool_id, None)
            self._pool_wake.set()

    async def _patron(self, conn: Connection) -> None:
        """Answer the tables' Player Card requests, one at a time on the cards' connection,
        each decided in one transaction (cards.answer) and only then published."""
        while True:
            item = await self._patron_queue.get()
            try:
                ans = await in_thread(self._cards_lock, self._answer, item.body)
            except Exception:  # the table hears nothing and refuses (strict reading)
                self.counters["patron_failures"] += 1
                log.exception("head office: card request %s failed", item.body.get("req"))
                continue
            if ans is None:
                self.counters["unknown_table"] += 1
                if item.table not in self._strangers and len(self._strangers) < 1000:
                    self._strangers.add(item.table)
                    log.warning("head office: card requests from %s refused: not an enrolled"
                                " table", item.table)
                continue
            self.counters["patron_answers"] += 1
            if not ans["valid"] or ans["restricted"] or ans["granted"] == 0:
                self.counters["patron_refusals"] += 1
            await conn.publish(patron.answer_topic(item.table), contract.dumps(ans))

    def _answer(self, req: dict[str, Any]) -> dict[str, Any] | None:
        for attempt in range(1, 4):  # PostgreSQL may abort a transaction: decided again
            try:
                return cards.answer(self.cards_db, req)
            except Exception as exc:
                if attempt == 3 or not self.cards_db.is_retryable(exc):
                    raise
        return None  # not reached

    async def _segments(self, conn: Connection, items: list[tuple[str, dict[str, Any]]]) -> None:
        res = await self._db(apply_segments, self.ledger, items)
        for key, n in (("segments_held", res.held), ("segments_refused", res.refused),
                       ("segments_repeated", res.repeated),
                       ("unknown_table", len(res.unknown))):
            self.counters[key] += n
        for table, answer in res.answers:  # committed: now the tables may hear it
            await conn.publish(contract.segment_ack_topic(table), contract.dumps(answer))

    # -- which tables this worker reads (headoffice/routing.py) ----------------------------------
    async def _route(self, conn: Connection, fresh: bool = False) -> None:
        """Claim partitions, then subscribe to the outboxes of the tables in them and drop
        the rest. A partition released stays read until another worker holds it. `fresh`: a
        new session, which may hold anything an earlier one subscribed."""
        assert self.routing is not None
        # One claim at a time on the routing connection, even across a reconnect: a claim
        # still running in its thread when its session ended is waited for, not doubled.
        if self._claiming is not None and not self._claiming.done():
            with contextlib.suppress(Exception):
                await asyncio.shield(self._claiming)
        self._claiming = asyncio.ensure_future(asyncio.to_thread(self.routing.claim))
        claim = await asyncio.shield(self._claiming)
        self._released = {p for p in self._released | (self.partitions - claim.owned)
                          if claim.owners.get(p) is None}
        parts = claim.owned | self._released
        wanted = {t for t in self.cfg.tables if partition_of(t) in parts}
        if claim.owned != self.partitions:
            log.info("%s", share_text(self.routing.worker, claim.owned, self.cfg.tables))
            self.counters["partition_changes"] += 1
        self.partitions = claim.owned
        reading = set(self.cfg.tables) if fresh else self._reading
        drop = sorted(reading - wanted)
        add = sorted(wanted if fresh else wanted - reading)
        topics = ([contract.HO_SHARED_OUTBOX] if fresh else []) + [
            contract.outbox_topic(t) for t in drop]
        for lo in range(0, len(topics), _TOPICS_PER_PACKET):
            await conn.unsubscribe(topics[lo:lo + _TOPICS_PER_PACKET])
        topics = [contract.outbox_topic(t) for t in add]
        for lo in range(0, len(topics), _TOPICS_PER_PACKET):
            await conn.subscribe(topics[lo:lo + _TOPICS_PER_PACKET])
        self._reading = wanted

    async def _routing(self, conn: Connection) -> None:
        while True:
            await asyncio.sleep(self.lease_s / 3)
            await self._route(conn)

    # -- pool values ------------------------------------------------------------------------------
    # One task publishes them, newest version only, so the apply loop never waits for their
    # PUBACKs: during a burst the broker's queue to us holds thousands of the tables' messages
    # ahead of each PUBACK, and waiting took 1.5 s per batch (bench/fleet).
    def _offer_pools(self, pools: list[Pool]) -> None:
        for pool in pools:
            if pool.stopped is None:  # a stopped pool goes quiet: its meters show OFFLINE
                self._due(pool.id, pool.value())
        self._pool_wake.set()

    def _due(self, pool_id: str, value: PoolValue) -> None:
        due = self._pool_due.get(pool_id)
        if due is None or value.version >= due.version:
            self._pool_due[pool_id] = value

    async def _publish_due(self, conn: Connection) -> bool:
        """Publish the values due; True if one of them was a new version."""
        due, self._pool_due = self._pool_due, {}
        new = False
        for pool_id, value in due.items():
            version = value.version
            # Never an older value after a newer one: the retained value is the newest.
            if version >= self._pool_sent.get(pool_id, 0):
                new = new or version > self._pool_sent.get(pool_id, 0)
                body = contract.pool_message(pool_id, value.amount, version, utc_now(),
                                             awards=value.awards, wager=value.wager)
                # A PUBACK may come late from a broker deep in a burst: waiting up to a minute
                # holds up no one (the ledger loop does not wait for this task), where the
                # default 10 s dropped the session, and with it the burst in flight to us.
                await conn.publish(contract.pool_topic(pool_id), contract.dumps(body),
                                   retain=True, expiry_s=self.cfg.pool_expiry_s,
                                   timeout_s=_POOL_PUBACK_S)
                self._pool_sent[pool_id] = version
                self.counters["pool_values"] += 1
        return new

    async def _pool_publisher(self, conn: Connection) -> None:
        while True:
            await self._pool_wake.wait()
            self._pool_wake.clear()
            # At most one new version per _POOL_GAP_S from this worker: the broker delivers
            # each value to every table of the pool, so during a burst of small batches the
            # values (newest only) would cost it more than the tables' messages. A value after
            # a quiet spell goes at once, and a heartbeat's (the same versions again) does not
            # hold back the next new one.
            if await self._publish_due(conn):
                await asyncio.sleep(_POOL_GAP_S)

    def _alarm_unknown(self, table: str) -> None:
        with self.ledger.db.transaction():
            self.ledger.alarm(f"messages from {table!r} refused: not an enrolled table"
                              " (headoffice.toml [[tables]])", None, table, kind="refused",
                              subject="not enrolled")

    async def _heartbeat(self, conn: Connection) -> None:
        """Every pool's value again, so that the meters' copies do not expire; and the awards
        of held hits an operator approved since (`tablectl-headoffice hit approve`); and the
        alarms seen by looking: tables silent or offline, workers not heard from, held hits
        waiting (`Ledger.sweep_alarms`)."""
        while True:
            await asyncio.sleep(self.cfg.heartbeat_s)
            await self._send_decided(conn)
            try:
                await self._db(self.ledger.sweep_alarms, self.ledger.clock(),
                               self.cfg.live_window_s, self.lease_s)
            except Exception:  # the money goes on; the next heartbeat looks again
                self.counters["sweep_failures"] += 1
                log.exception("head office: looking for alarm conditions failed")

    async def _broker_alarm(self, lost: str | None) -> None:
        """This worker's broker connection lost (an alarm, seen again at each failed attempt)
        or made (cleared). The ledger may be out of reach too: then only the log says it."""
        me = self.cfg.broker.client_id  # type: ignore[union-attr]

        def record() -> None:
            with self.ledger.db.transaction():
                if lost is None:
                    self.ledger.clear_alarm("worker_down", subject=f"broker:{me}")
                else:
                    self.ledger.alarm(f"head-office worker {me} lost its broker connection:"
                                      f" {lost[:300]}", kind="worker_down",
                                      subject=f"broker:{me}")
        try:
            await self._db(record)
        except Exception:
            log.exception("head office: could not record the broker connection's alarm")

    async def _send_decided(self, conn: Connection) -> None:
        async with self._decided_lock:  # an award is sent once, then marked delivered
            self._offer_pools(await self._db(self.ledger.pools))
            # Claimed first: every worker hears an approval, exactly one sends its award.
            me = self.cfg.broker.client_id  # type: ignore[union-attr]
            due = await self._db(self.ledger.claim_awards, me, time.time())
            for _, table, message in due:
                await conn.publish(contract.award_topic(table), contract.dumps(message))
                self.counters["approved_awards_sent"] += 1
            if due:
                await self._db(self.ledger.mark_delivered, [n for n, _, _ in due])

    async def _ledger_changes(self, conn: Connection) -> None:
        """An operator's decision committed by another process (hit approve/refuse, pool
        set/resume, the web console): its pool value and award go now, not at the next
        heartbeat (issue 13; headoffice/notify.py)."""
        watch = LedgerWatch(self.ledger.db, self._db)
        seen = await self._db(self.ledger.param_entries)
        try:
            await watch.changed()  # armed; a decision since `seen` (while we started) is read now
            while True:
                # Only an approval or a parameter action owes the meters anything: other
                # writers' commits (SQLite wakes on any) cost these two queries, no republish.
                entries = await self._db(self.ledger.param_entries)
                if entries != seen or await self._db(self.ledger.undelivered_awards):
                    seen = entries
                    await self._send_decided(conn)
                await watch.changed()
                self.counters["ledger_notices"] += 1
        finally:
            await watch.close()


async def in_thread(lock: asyncio.Lock, fn: Any, *args: Any) -> Any:
    """Run a database call in a thread, holding `lock` (one thread at a time on a connection).
    Cancelled meanwhile, we still wait for the thread, through every further cancel
    (`cancel_and_wait` repeats them): the lock must not pass to the next call, nor the
    connection close, under a transaction in progress."""
    async with lock:
        work = asyncio.ensure_future(asyncio.to_thread(fn, *args))
        try:
            return await asyncio.shield(work)
        except asyncio.CancelledError:
            while not work.done():
                with contextlib.suppress(asyncio.CancelledError):
                    await asyncio.wait([work])  # never cancels `work` itself
            if not work.cancelled():
                work.exception()  # retrieved; the cancellation is what we raise
            raise


def parse(topic: str, payload: bytes) -> list[Incoming]:
    """A message from a table's topic -> its Incoming (a packed outbox message: one per row,
    in order); SchemaError if it breaks the contract."""
    table, leaf = contract.table_of_topic(topic)
    if leaf == "outbox":
        # Parsed, so UTF-8 JSON: the ledger stores each row's text rather than encode it
        # again; a pack's rows as each would have come alone from the relay.
        rows, _ = contract.parse_outbox_messages(payload, table)
        return [Incoming("outbox", table, body, text) for body, text in rows]
    if leaf == "birth":
        return [Incoming("birth", table, contract.parse_birth(payload, table))]
    if leaf == "status":
        return [Incoming("status", table, contract.parse_status(payload, table))]
    if leaf == "segment":
        return [Incoming("segment", table, contract.parse_segment(payload, table))]
    if leaf == "patron":  # a Player Card request (issue 29): the topic's table asks for itself
        return [Incoming("patron", table, patron.parse_card_request(payload, table))]
    raise contract.SchemaError(f"topic {topic}: unknown leaf {leaf!r}")


def share_text(worker: str, owned: frozenset[int], tables: Iterable[str]) -> str:
    """The worker's share of the tables, in an operator's words: which of the enrolled tables it
    reads, and that the others' are read by the other workers (routing.py)."""
    enrolled = list(tables)
    mine = sum(partition_of(t) in owned for t in enrolled)
    if mine == len(enrolled) and len(owned) == PARTITIONS:
        who = "no other worker holds any now"
    else:
        who = "other workers read the rest"
    return (f"head office: worker {worker} reads the outboxes of {mine} of the"
            f" {len(enrolled)} enrolled tables ({who}; the tables are shared out among the"
            f" workers in {PARTITIONS} groups, this worker holds {len(owned)})")
