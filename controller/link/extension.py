"""`LinkExtension`: the daemon's head-office link (an `Extension`, controller/extensions/base.py).

On every connection: subscribe to our ack and award topics and to our pool's value, publish
`online` on the retained status topic (the last will says `offline`), publish a birth message
with the table's meters, then relay the outbox and hand head office's answers to the round
machine as `ho.pool` / `ho.award` events, with `link.up` / `link.down` around the session.
Reconnects forever with backoff and jitter. Bad messages from outside are logged, counted and
dropped; they never stop the link or the table.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from controller.about import program_version
from controller.events import Event, Kind
from controller.extensions.base import Table
from controller.journal import JournalError
from controller.link.numbering import Numbering
from controller.link.patron_device import card_answer, cards_on
from controller.link.pool_values import PoolValues
from controller.link.relay import OutboxRelay
from controller.link.supervise import supervised
from controller.logs import FIELDS_ATTR
from controller.logs import event as log_event
from shared.clock import utc_now
from shared.link import contract, patron
from shared.link.transport import (
    Backoff,
    BrokerSettings,
    Connection,
    LinkError,
    Tls,
    Will,
    connect,
    run_together,
)
from shared.stopping import cancel_and_wait

if TYPE_CHECKING:
    from controller.config import TableConfig


@dataclass(frozen=True)
class LinkOptions:
    max_inflight: int = 32  # outbox messages out unacknowledged at most
    resend_s: float = 5.0  # no ack within this: send again
    status_every_s: float = 30.0  # the retained status is refreshed (head office's liveness)
    tick_every_s: float = 1.0  # how often the pool timeout is checked (UTH 11.11)
    backoff_base_s: float = 0.2
    backoff_cap_s: float = 30.0
    segments_every_s: float = 60.0  # archived segments not acknowledged: sent (again)
    # Head office's pool values: a higher one journaled at most this often, the same one at
    # most every pool_refresh_s (controller/link/pool_values.py).
    pool_show_every_s: float = 2.0
    pool_refresh_s: float = 60.0
    confirm_s: float = 10.0  # at start the dealer's keys wait for head office (numbering.py)


def broker_settings(cfg: TableConfig) -> BrokerSettings:
    link = cfg.link
    assert link.host is not None, "link.host is required when the link is enabled"
    password = None
    if link.password_file is not None:
        password = link.password_file.read_text(encoding="utf-8").strip()
    tls = None
    if link.tls is not None:
        tls = Tls(link.tls.ca, link.tls.cert, link.tls.key)
    offline = contract.dumps(contract.status_message(cfg.table_id, "offline"))
    return BrokerSettings(
        host=link.host,
        port=link.port,
        client_id=link.client_id or f"tablectl-{cfg.table_id}",
        tls=tls,
        username=link.username,
        password=password,
        will=Will(contract.status_topic(cfg.table_id), offline, retain=True),
    )


def pool_id_of(cfg: TableConfig) -> str | None:
    """The linked pool this table plays for (UTH with the jackpot), else None."""
    if cfg.uth is None or cfg.jackpot is None or not cfg.jackpot.enabled:
        return None
    return cfg.uth.pool_id  # [uth.jackpot] pool_id, or `<table_id>-local` (config/games.py)


class LinkExtension:
    name = "link"

    def __init__(
        self,
        cfg: TableConfig,
        settings: BrokerSettings | None = None,
        options: LinkOptions | None = None,
    ) -> None:
        self.cfg = cfg
        self.table_id = cfg.table_id
        self.settings = settings
        self.options = options or LinkOptions()
        self.pool_id = pool_id_of(cfg)
        self.pool_timeout_s = cfg.link.pool_timeout_s
        self.table: Table | None = None
        self.relay: OutboxRelay | None = None
        self.connected = False
        self.last_error: str | None = None
        self.counters: Counter[str] = Counter()
        self._tasks: list[asyncio.Task[None]] = []
        self._pool = PoolValues(self.options.pool_show_every_s, self.options.pool_refresh_s,
                                self.pool_timeout_s, time.monotonic())
        self._log = logging.getLogger("tablectl.link")
        self._outage_logged = False  # an outage's first failure (or link down) was logged
        self._failed_attempts = 0  # connection attempts failed since the link was last up
        self._segments_refused: set[int] = set()  # segments head office refused (logged once)
        self._segment_held = asyncio.Event()  # an ack recorded: send the next segment now
        self._numbering = Numbering(self.options.confirm_s)

    # -- Extension --------------------------------------------------------------------------
    async def start(self, table: Table) -> None:
        self.table = table
        self._log = table.log
        if table.journal is None or table.out_of_service:
            self.last_error = "table out of service: the link stays down"
            return
        if self.settings is None:
            try:
                self.settings = broker_settings(self.cfg)
            except OSError as exc:
                self.last_error = f"cannot read the link password file: {exc}"
                log_event(self._log, logging.ERROR, self.last_error, code="E301")
                return
        self.relay = OutboxRelay(
            table.journal,
            self.table_id,
            max_inflight=self.options.max_inflight,
            resend_s=self.options.resend_s,
        )
        # Every task is supervised: one that dies is logged and started again, never lost
        # silently (the connection loop also survives anything a session raises, in _run).
        self._tasks = [
            asyncio.create_task(self._supervise("link", self._run), name="link"),
            asyncio.create_task(self._supervise("link_outbox_watch", self._watch_outbox),
                                name="link-outbox-watch"),
        ]
        if self.pool_id is not None:
            self._tasks.append(asyncio.create_task(self._supervise("link_ticks", self._ticks),
                                                   name="link-ticks"))
        self._numbering.start(table, self._tasks)  # the dealer's keys held until it answers

    async def _supervise(self, name: str, factory: Any) -> None:
        await supervised(name, factory, self._log, self.counters)

    async def stop(self) -> None:
        tasks, self._tasks = self._tasks, []
        running = [t for t in tasks if not t.done()]  # one that died was logged when it did
        await cancel_and_wait(tasks)
        for task in running:  # a failure while stopping is logged, never swallowed
            if not task.cancelled() and (exc := task.exception()) is not None:
                self._log.error(f"link: task {task.get_name()} failed while stopping: {exc!r}",
                                exc_info=exc)

    def handlers(self) -> dict[str, Any]:
        return {"link_status": self._h_status}

    def status(self) -> dict[str, Any]:
        relay = self.relay
        return {
            "broker": None if self.settings is None
            else f"{self.settings.host}:{self.settings.port}",
            "connected": self.connected,
            "pool": self.pool_id,
            "last_error": self.last_error,
            "outbox_pending": relay.pending() if relay else None,
            "sent": relay.stats.sent if relay else 0,
            "resent": relay.stats.resent if relay else 0,
            "acked": relay.stats.acked if relay else 0,
            "ack_upto": relay.stats.last_ack_upto if relay else 0,
            "counters": dict(self.counters),
        }

    async def _h_status(self, args: dict[str, Any]) -> dict[str, Any]:
        return self.status()

    # -- the connection loop ----------------------------------------------------------------
    async def _run(self) -> None:
        assert self.settings is not None
        backoff = Backoff(self.options.backoff_base_s, self.options.backoff_cap_s)
        while True:
            started = time.monotonic()
            try:
                async with connect(self.settings) as conn:
                    await self._session(conn)
            except LinkError as exc:
                self.last_error = str(exc)
                if not self.connected:
                    self._connect_failed()
            except asyncio.CancelledError:
                self.last_error = "the daemon is stopping"
                raise
            except Exception as exc:
                # Not a network failure: a bug, or input no check foresaw. The session is
                # dropped and made again, loudly; the table plays on (UTH 11.11 meanwhile).
                self.last_error = f"link session failed: {exc!r}"
                self.counters["session_failures"] += 1
                self._log.error("link session failed; reconnecting", exc_info=True,
                                extra={FIELDS_ATTR: {"code": "E304"}})
            finally:
                if self.connected:
                    self.connected = False
                    self.counters["disconnects"] += 1
                    self._emit(Event(Kind.LINK_DOWN, {"reason": self.last_error or ""}))
                    log_event(self._log, logging.WARNING, f"link down: {self.last_error}",
                              code="E302")
                    self._outage_logged = True  # the retries that follow are not logged again
            if time.monotonic() - started > 10:
                backoff.reset()  # it was a working connection, not a refusal loop
            await asyncio.sleep(backoff.next_delay())

    def _connect_failed(self) -> None:
        """A connection attempt failed: the first of an outage is a warning, the retries are
        only counted (a broker down for a night would otherwise log every backoff step)."""
        self.counters["connect_failures"] += 1
        self._failed_attempts += 1
        if not self._outage_logged:
            self._outage_logged = True
            assert self.settings is not None
            log_event(
                self._log,
                logging.WARNING,
                f"link: cannot connect to {self.settings.host}:{self.settings.port}:"
                f" {self.last_error} (retrying; logged again when it connects)",
                broker=f"{self.settings.host}:{self.settings.port}",
                code="E301",
            )

    async def _session(self, conn: Connection) -> None:
        assert self.relay is not None
        topics = [contract.ack_topic(self.table_id), contract.award_topic(self.table_id),
                  contract.segment_ack_topic(self.table_id), patron.answer_topic(self.table_id)]
        if self.pool_id is not None:
            topics.append(contract.pool_topic(self.pool_id))
        await conn.subscribe(topics)
        await self._publish_status(conn)
        await conn.publish(contract.birth_topic(self.table_id), contract.dumps(self._birth()))
        self.connected = True
        self.last_error = None
        self.counters["connects"] += 1
        broker = f"{self.settings.host}:{self.settings.port}"  # type: ignore[union-attr]
        if self._outage_logged:  # the recovery of an outage that was logged
            log_event(self._log, logging.INFO,
                      f"link up: connected to {broker} after {self._failed_attempts} failed"
                      " attempts", broker=broker, failed_attempts=self._failed_attempts)
        else:
            log_event(self._log, logging.INFO, "link up", broker=broker)
        self._outage_logged = False
        self._failed_attempts = 0
        self._emit(Event(Kind.LINK_UP, {}))
        self.relay.new_connection()

        async def publish(topic: str, payload: bytes) -> None:
            await conn.publish(topic, payload)

        with cards_on(self.table, publish):  # Player Card requests go out on this connection
            await run_together(self._read(conn), self.relay.run(publish),
                               self._status_loop(conn), self._segments_loop(conn))

    async def _publish_status(self, conn: Connection) -> None:
        out = self.table.out_of_service if self.table is not None else None
        body = contract.status_message(self.table_id, "online", utc_now(),
                                       in_service=out is None, reason=out)
        await conn.publish(contract.status_topic(self.table_id), contract.dumps(body), retain=True)

    async def _status_loop(self, conn: Connection) -> None:
        while True:
            await asyncio.sleep(self.options.status_every_s)
            await self._publish_status(conn)

    # -- archived journal segments (docs/journal.md "Segments, archive, retention") -------------
    async def _segments_loop(self, conn: Connection) -> None:
        """The oldest archived segment head office has not acknowledged, sent on connecting
        and again every segments_every_s until it is, then the next at once: one at a time, in
        order, so head office always hears segment n+1 after holding n and checks it chained
        (sent all together, a worker subscribing mid-burst heard n+1 first and could only hold
        it unchained). Like the outbox, a message whose answer is lost is simply sent again
        (head office answers a resend the same)."""
        while True:
            self._segment_held.clear()  # before sending: an answer that beats the wait counts
            due = self.unacked_segments()
            if due:
                await conn.publish(contract.segment_topic(self.table_id), contract.dumps(due[0]))
                self.counters["segments_sent"] += 1
            try:
                async with asyncio.timeout(self.options.segments_every_s):
                    await self._segment_held.wait()
            except TimeoutError:
                pass

    def unacked_segments(self) -> list[dict[str, Any]]:
        """The segment messages due: archived by this table (its MAC checks), not pruned, not
        acknowledged; their archive's size read from the file (a missing file: not sent)."""
        table = self.table
        assert table is not None and table.journal is not None
        journal = table.journal
        out = []
        for st in journal.retention.states():
            if st.archive is None or st.digest is None or st.ack_ok or not st.mac_ok or (
                    st.pruned_utc is not None):
                continue
            try:
                size = (journal.archive_dir / st.archive).stat().st_size
            except OSError:
                continue  # gone or unreadable: upkeep's prune plan says so; nothing to hold
            seg = st.segment
            out.append(contract.segment_message(
                self.table_id, seg.number, seg.first, seg.last, seg.prev, seg.head, st.digest,
                size, (seg.first_round, seg.last_round), seg.closed_utc))
        return out

    def _on_segment_ack(self, payload: bytes) -> None:
        """Head office's answer. `held` is recorded by `Journal.ack_segment` only if it names
        exactly the head and digest this table archived; it prunes nothing by itself (upkeep
        prunes, under the retention set, after checking the archive file's digest again)."""
        table = self.table
        assert table is not None and table.journal is not None
        data = contract.parse_segment_ack(payload, self.table_id)
        number = data["segment"]
        if data["status"] == "refused":
            self.counters["segments_refused_by_ho"] += 1
            if number not in self._segments_refused:
                self._segments_refused.add(number)
                log_event(self._log, logging.WARNING, f"link: head office refused journal "
                          f"segment {number}: {data.get('reason', '')}", segment=number,
                          code="E303")
            return
        states = {st.segment.number: st for st in table.journal.retention.states()}
        st = states.get(number)
        if st is not None and st.ack_ok and (st.segment.head, st.digest) == (
                data["head"], data["digest"]):
            self.counters["segment_acks_repeated"] += 1
            return
        try:
            ok = table.journal.ack_segment(number, data["head"], data["digest"])
        except JournalError as exc:
            table.go_out_of_service(f"journal write failed on a segment ack: {exc}",
                                    code="E102")
            return
        if not ok:
            self.counters["segment_acks_refused"] += 1
            raise contract.SchemaError(
                f"segment ack refused: segment {number} with head {data['head'][:16]}... and "
                f"digest {data['digest'][:16]}... is not one this table archived")
        self.counters["segment_acks"] += 1
        self._segment_held.set()
        log_event(self._log, logging.INFO, f"journal segment {number} held by head office",
                  segment=number)

    def _birth(self) -> dict[str, Any]:
        """Who we are and every meter we hold, so head office can reconcile on every connect
        (and answer again any hit still PENDING here)."""
        table = self.table
        assert table is not None and table.journal is not None
        status = table.game_status()
        pool = status.get("pool")
        journal = table.journal.summary()
        return contract.birth_message(
            self.table_id,
            utc_now(),
            {
                "game": self.cfg.game,
                "pool_id": self.pool_id,
                "round": status.get("round"),
                "state": status.get("state"),
                "jackpot": status.get("jackpot"),
                "pool": pool,
                "pending_hits": list((pool or {}).get("pending", [])),
                "outbox": {
                    "pending": journal.get("outbox_pending"),
                    "acked_upto": journal.get("outbox_acked_upto"),
                },
                "rounds": {
                    "completed": journal.get("rounds_completed"),
                    "voided": journal.get("rounds_voided"),
                },
                "journal_seq": journal.get("last_seq"),
                "software": program_version()[:contract.MAX_SOFTWARE],
                "in_service": table.out_of_service is None,
                "out_of_service": (None if table.out_of_service is None
                                   else table.out_of_service[:contract.MAX_REASON]),
            },
        )

    # -- incoming ---------------------------------------------------------------------------
    async def _read(self, conn: Connection) -> None:
        async for message in conn.messages():
            try:
                self._on_message(message.topic, message.payload)
            except contract.SchemaError as exc:
                self.counters["refused"] += 1
                log_event(self._log, logging.WARNING, f"link: message refused: {exc}",
                          topic=message.topic, code="E303")
            except Exception as exc:  # no one message may end the session
                self.counters["refused"] += 1
                self.counters["message_errors"] += 1
                log_event(self._log, logging.ERROR, f"link: message failed: {exc!r}",
                          topic=message.topic, code="E304")

    def _on_message(self, topic: str, payload: bytes) -> None:
        assert self.relay is not None
        if topic == contract.ack_topic(self.table_id):
            assert self.table is not None
            self._numbering.on_ack(self.table, self.relay, payload, self.table_id)
        elif topic == contract.segment_ack_topic(self.table_id):
            self._on_segment_ack(payload)
        elif topic == contract.award_topic(self.table_id):
            data = contract.parse_award(payload, self.table_id)
            if not self._award_pending(data["round"]):
                self.counters["awards_repeated"] += 1
                return  # already resolved: a redelivery, nothing to journal
            self.counters["awards"] += 1
            self._emit(Event(Kind.HO_AWARD, data))
        elif topic == patron.answer_topic(self.table_id):
            card_answer(self.table, payload)
        elif self.pool_id is not None and topic == contract.pool_topic(self.pool_id):
            data = contract.parse_pool(payload)
            if data["pool"] != self.pool_id:
                raise contract.SchemaError(f"pool value for {data['pool']!r} on our pool's topic")
            self._on_pool(data)
        else:
            raise contract.SchemaError(f"unexpected topic {topic}")

    def _on_pool(self, data: dict[str, Any]) -> None:
        if self._pool.stale(data):
            self.counters["pool_stale"] += 1
            return  # an older value (two workers' publishes crossed): the meter never goes back
        self._journal_pool(self._pool.heard(data, time.monotonic()))

    def _journal_pool(self, event: dict[str, Any] | None) -> None:
        if event is not None:
            self.counters["pool_values"] += 1
            self._emit(Event(Kind.HO_POOL, event))

    def _award_pending(self, round_: int) -> bool:
        table = self.table
        if table is None:
            return False
        pool = table.game_status().get("pool") or {}
        return any(h.get("round") == round_ for h in pool.get("pending", []))

    # -- helpers ----------------------------------------------------------------------------
    def _emit(self, event: Event) -> None:
        if self.table is not None and self.table.out_of_service is None:
            if event.kind in (Kind.LINK_UP, Kind.LINK_DOWN) and self.pool_id is None:
                return  # only the UTH jackpot machine records the link's state
            self.table.emit(event)

    async def _watch_outbox(self) -> None:
        """Wake the relay as soon as a processed event carries an outbox row."""
        assert self.table is not None
        while True:
            q = self.table.subscribe()
            try:
                while True:
                    item = await q.get()
                    if item is None:
                        break  # fell behind: subscribe again
                    if self.relay is not None and any(
                        e.get("kind") == "outbox" for e in item.get("effects", [])
                    ):
                        self.relay.wake.set()
            finally:
                self.table.unsubscribe(q)

    async def _ticks(self) -> None:
        """A higher pool value held back goes when its turn comes; head office quiet for the
        pool timeout (11.11) is a `tick` saying so, which takes the jackpot offline."""
        assert self.table is not None
        while True:
            await asyncio.sleep(self.options.tick_every_s)
            table = self.table
            if table.out_of_service is not None:
                continue
            now = time.monotonic()
            self._journal_pool(self._pool.due(now))
            quiet = self._pool.quiet_ms(now)
            if quiet is not None and table.game_status().get("jackpot") == "online":
                table.emit(Event(Kind.TICK, {"pool_quiet_ms": quiet}))


