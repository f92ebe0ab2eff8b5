"""tablectld's core: one asyncio loop that owns the table's state.

Data flow (DESIGN.md): device/dealer event -> queue (`emit`) -> `consume` -> machine.step (pure)
-> journal.append_batch (the events with their outbox and round effects, one fsync'd
transaction) -> effects carried out (effects.py: device commands, display, alarms) -> watchers
(`subscribe`). A stalled loop stops the watchdog pings, so systemd restarts the daemon; a corrupt
journal takes the table out of service instead of starting fresh. Supervision of tasks and
extensions is supervisor.py's, the control-socket commands commands.py's.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import signal
import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from controller.config import TableConfig
from controller.control import control_socket
from controller.daemon import notify
from controller.daemon.accounting import (
    DAEMON_EVENTS,
    close_effects,
    load_meters,
    rounds_of_effects,
    save_checkpoint,
)
from controller.daemon.commands import TableCommands
from controller.daemon.control import Access, ControlServer
from controller.daemon.durability import needs_fsync
from controller.daemon.effects import Effects
from controller.daemon.ignored import IgnoredEvents
from controller.daemon.logbook import ErrorHistory, LogRing
from controller.daemon.opening import Unusable, open_journal, replay
from controller.daemon.stats import Stats
from controller.daemon.supervisor import Supervisor
from controller.events import EffectKind
from controller.extensions.base import Extension, Watcher
from controller.journal import Entry, Journal, JournalError
from controller.journal.background import look_after_journal
from controller.logs import event as log_event
from controller.meters import CLOSE_SHIFT, Meters
from controller.rounds.base import Event, Now, RoundMachine
from devices.base import Device, DeviceError, DeviceEvent
from shared.clock import utc_now
from shared.errors import TablectlError

WATCH_BACKLOG = 256  # events a slow `tablectl watch` may fall behind before it is cut off
STALL_S = 5.0  # an event older than this in the queue means the loop is not healthy
DEFAULT_WATCHDOG_S = 2.0
MAX_BATCH = 64  # events journaled in one transaction at most
SNAPSHOT_EVERY_ROUNDS = 32
# The meters' checkpoint (accounting.py) with every this many snapshots (and each shift close).
METERS_EVERY_SNAPSHOTS = 2
MODES = ("production", "simulation", "development")


class Policy(Protocol):
    """Simulated players and dealer: what people at the table do next (controller/sim/)."""

    def next_events(self, status: dict[str, Any]) -> list[Event]: ...


def system_now() -> Now:
    return Now(utc=utc_now(), mono_ms=time.monotonic_ns() // 1_000_000)


class TableService:
    def __init__(
        self,
        cfg: TableConfig,
        machine: RoundMachine[Any],
        devices: dict[str, Device],
        log: logging.Logger,
        *,
        clock: Callable[[], Now] = system_now,
        policy: Policy | None = None,
        autoplay: int | None = None,
        pace_s: float = 0.0,
        on_round: Callable[[dict[str, Any]], None] | None = None,
        extensions: Sequence[Extension] = (),
        mode: str = "production",
    ) -> None:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        self.cfg = cfg
        self.machine = machine
        self.devices = devices
        self.log = log
        self.clock = clock
        self.policy = policy
        self.autoplay = autoplay
        self.pace_s = pace_s
        self.on_round = on_round
        self.extensions = list(extensions)
        # production: everything verified; simulation (--simulate) and development
        # (service.development) may run unverified and say so in status and on the meter.
        self.mode = mode
        self.journal: Journal | None = None
        self.state: Any = None
        self.out_of_service: str | None = None
        # READY=1 sent: devices, extensions and the journal are up (before, the control socket
        # answers status but refuses device and service commands as still starting).
        self.ready = False
        self.stats = Stats()
        self.meters = Meters()  # replayed from the journal at start (accounting.py)
        self.ring = LogRing()  # `tablectl logs` without journald
        self.errors: ErrorHistory | None = None  # `tablectl errors` (needs the state dir)
        self.queue: asyncio.Queue[tuple[float, Event]] = asyncio.Queue()
        self.watchers: set[Watcher] = set()
        self.recent: deque[dict[str, Any]] = deque(maxlen=50)
        self._stop = asyncio.Event()
        self._idle = asyncio.Event()
        self._last_progress = time.monotonic()
        self._exit_code = 0
        self._rounds_unsnapshotted = SNAPSHOT_EVERY_ROUNDS  # the first round closed snapshots
        self._snapshots_unmetered = METERS_EVERY_SNAPSHOTS  # ... and checkpoints the meters
        self._stopping = False
        self.ignored = IgnoredEvents(log, self.stats)
        self.hold = self.ignored.hold  # the dealer's keys held (why) or released (None)
        self.supervisor = Supervisor(
            log,
            self.stats,
            stopping=lambda: self._stopping,
            stop_requested=self._stop.is_set,
            give_up=self._give_up,
        )
        self.effects = Effects(devices, log, self.stats, self._round_closed)
        self.commands = TableCommands(self)
        handlers: dict[str, Any] = {}
        for ext in self.extensions:
            handlers.update(ext.handlers())
        self.control = ControlServer(
            control_socket(cfg.service.runtime_dir),
            handlers={**handlers, **self.commands.handlers()},
            streams=self.commands.streams(),
            group=cfg.service.socket_group,
            on_error=lambda msg: log_event(log, logging.WARNING, msg, code="E702"),
            access=Access(cfg.service.tech_group, cfg.service.super_group),
            on_refused=lambda msg: log_event(log, logging.WARNING, msg, code="E701"),
            on_action=lambda msg: log_event(log, logging.INFO, msg),
        )

    # -- start and stop -----------------------------------------------------------------------

    async def run(self) -> int:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self.stop)
        notify.notify("STATUS=starting")
        self.log.addHandler(self.ring)
        self._keep_errors()
        await self.control.start()
        tasks: list[asyncio.Task[None]] = []
        try:
            if self.mode != "production":
                log_event(self.log, logging.WARNING, f"running in {self.mode} mode", mode=self.mode,
                          code="E801")
            for ext in self.extensions:  # work begun now, awaited at its start (verification)
                getattr(ext, "begin", lambda: None)()
            self._open_journal()
            self._keep_errors()
            await self._start_devices()
            if self.out_of_service is not None:  # the journal: say so on the meter
                await self.effects.show_closed()
            for ext in self.extensions:
                await self.supervisor.start_extension(ext, self)
            await self._resume()
            if self.out_of_service is None and self.mode != "production":
                # Unverified software may run only here: the meter says so until play shows
                # something else, status and every STATUS= line say so for good.
                await self.effects.announce(f"{self.mode.upper()} MODE")
            if self.out_of_service is None:
                await self._selftest_or_fail()
            notify.notify("READY=1", f"STATUS={self._status_line()}")
            self.ready = True
            tasks.append(self.supervisor.spawn("consume", self._consume))
            tasks.append(self.supervisor.spawn("watchdog", self._watchdog))
            # Whole-chain verify, then archive/retention; it ends by itself when there is no
            # journal or the chain fails (the table is then out of service), so not spawn()ed.
            tasks.append(asyncio.create_task(
                look_after_journal(self.journal, self.go_out_of_service, self.log,
                                   self.cfg.journal)))
            if self.policy is not None and self.out_of_service is None:
                tasks.append(self.supervisor.spawn("autoplay", self._autoplay))
            if self.out_of_service is not None and self.autoplay is not None:
                self._exit_code = 1
                self.stop()
            await self._stop.wait()
        finally:
            self._stopping = True
            notify.notify("STOPPING=1")
            # Every part stops within its limit or is named and abandoned (supervisor.py), so
            # the journal's close below always runs before systemd's TimeoutStopSec.
            await self.supervisor.stop_tasks(
                "the daemon's tasks", [*tasks, *self.supervisor.helpers])
            if self.journal is not None:
                # Before the parts stop: the ack held for the next commit is on disk even if
                # the process dies while they stop (the close writes any held after this).
                self.journal.write_held_ack()
            self.ignored.log_summary(final=True)
            for ext in reversed(self.extensions):
                await self.supervisor.stop_part(f"extension {ext.name}", ext.stop)
            await self._stop_devices()
            await self.supervisor.stop_part("control socket", self.control.close)
            if self.journal is not None:
                self.journal.close()
            self.log.removeHandler(self.ring)
            if self.errors is not None:
                self.log.removeHandler(self.errors)
        return self._exit_code

    def _keep_errors(self) -> None:
        """The error history beside the journal, once its directory exists (the journal makes
        it: before, if it is there already, so that a journal problem is in the history)."""
        if self.errors is None and self.cfg.service.state_dir.is_dir():
            self.errors = ErrorHistory(self.cfg.service.state_dir)
            self.log.addHandler(self.errors)

    def stop(self) -> None:
        """SIGTERM: the event in hand finishes (its journal write is synchronous), then we close."""
        self._stop.set()

    def _open_journal(self) -> None:
        try:
            self.journal = open_journal(self.cfg, self.log, mode=self.mode)
            self.state, replayed = replay(self.journal, self.machine)
        except Unusable as exc:
            self.go_out_of_service(exc.reason, code=exc.code)
            return
        self.meters, how = load_meters(self.journal, self.cfg.service.state_dir)
        log_event(
            self.log,
            logging.INFO,
            "journal verified and replayed",
            records=self.journal.last_seq,
            replayed=replayed,
            round=self._round(),
            meters=how,
            verified_from=self.journal.verified_from,
            refused_checkpoints=len(self.journal.refused_checkpoints),
        )
        lacking = self.meters.incomplete()
        if lacking is not None:
            log_event(self.log, logging.ERROR,
                      f"meters incomplete: replayed without their checkpoint from a journal"
                      f" pruned through seq {lacking['pruned_through_seq']}; the lifetime"
                      f" figures{' and the open shift' if lacking['shift'] else ''} lack those"
                      " rounds (they are in the archives and at head office)",
                      code="E105", pruned_through=lacking["pruned_through_seq"])

    def subscribe(self) -> Watcher:
        """A queue of every processed event with its effects (what `watch` shows); a consumer
        that falls WATCH_BACKLOG behind gets None and is dropped. `unsubscribe` when done."""
        q: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        self.watchers.add(q)
        return q

    def unsubscribe(self, q: Watcher) -> None:
        self.watchers.discard(q)

    def go_out_of_service(self, reason: str, code: str = "E501") -> None:
        """Stop playing: no event is processed, the meter shows CLOSED, status says why; the
        log line carries `code` (controller/codes.py)."""
        if self.out_of_service is None:
            self.out_of_service = reason
        elif reason not in self.out_of_service:  # keep the first reason, add the others
            self.out_of_service = f"{self.out_of_service}; {reason}"
        log_event(self.log, logging.CRITICAL, f"OUT OF SERVICE: {reason}", code=code)
        notify.notify(f"STATUS=OUT OF SERVICE: {reason}")

    def _give_up(self, reason: str) -> None:
        """A task died too often: out of service, and the meter says CLOSED."""
        self.go_out_of_service(reason)
        self.supervisor.helper(self.effects.show_closed())

    def game_status(self) -> dict[str, Any]:
        """The round machine's status of the current state ({} before the journal replayed)."""
        return {} if self.state is None else self.machine.status(self.state)

    async def idle(self) -> None:
        """Wait until every queued event has been processed."""
        await self._idle.wait()

    async def _start_devices(self) -> None:
        for device in self.devices.values():
            try:
                await device.start(self._emit_from_device)
            except DeviceError as exc:
                log_event(self.log, logging.ERROR, f"device {device.name} did not start: {exc}",
                          device=device.name, code="E201")

    async def _resume(self) -> None:
        """After the extensions (software verification) had their say: re-issue what the open
        round was waiting for and show where the table is. Out of service, nothing is resumed
        (whoever took the table out of service put its reason on the meter)."""
        if self.out_of_service is not None:
            return
        for effect in self.machine.resume(self.state):
            await self.effects.run(effect)

    async def _selftest_or_fail(self) -> None:
        report = await self.commands.selftest({})
        if not report["ok"]:
            log_event(self.log, logging.WARNING, "self-test found problems", report=report,
                      code="E203")

    async def _stop_devices(self) -> None:
        for device in self.devices.values():
            await self.supervisor.stop_part(f"device {device.name}", device.stop)


    # -- the event path -----------------------------------------------------------------------

    def _emit_from_device(self, event: DeviceEvent) -> None:
        self.emit(Event(event.kind, event.data))

    def emit(self, event: Event) -> None:
        """Queue an event (call on the loop)."""
        self._idle.clear()
        self.queue.put_nowait((time.monotonic(), event))

    async def _consume(self) -> None:
        while True:
            if self.queue.empty():
                self._idle.set()
            batch = [(await self.queue.get())[1]]
            await asyncio.sleep(0)  # let deliveries already scheduled (a card burst) queue up
            # Events already waiting together are journaled in one fsync'd transaction: none of
            # them has been acted on yet, and one fsync each would cost a 4 KiB page each.
            while not self.queue.empty() and len(batch) < MAX_BATCH:
                batch.append(self.queue.get_nowait()[1])
            self._last_progress = time.monotonic()
            batch = self.ignored.passing(batch, self.out_of_service)
            if not batch:
                continue
            await self.process_batch(batch)
            self._last_progress = time.monotonic()

    async def process(self, event: Event) -> int | None:
        """Step, journal, then act. Returns the journal seq (None if the event was refused)."""
        return (await self.process_batch([event]))[0]

    async def process_batch(self, events: list[Event]) -> list[int | None]:
        """Step each event in order (pure), journal them all in one transaction, then carry out
        their effects in order. Nothing that moves money acts before it is on disk
        (durability.py: which commits wait for their own fsync)."""
        assert self.journal is not None
        state = self.state
        entries: list[Entry] = []
        stepped: list[tuple[int, Entry]] = []
        meters: Meters | None = None  # a copy, once a round or a shift closes in the batch
        for index, event in enumerate(events):
            now = self.clock()
            round_no = self._round_of(state)
            try:
                state, effects = self.machine.step(state, event, now)
            except Exception as exc:  # the machine must not raise; if it does, keep the table safe
                self.stats.rejected += 1
                log_event(
                    self.log,
                    logging.CRITICAL,
                    f"machine refused event {event.kind}: {exc!r}",
                    kind=event.kind,
                    code="E505",
                )
                continue
            if event.kind in DAEMON_EVENTS:  # not the machine's to refuse: no "refused" line
                effects = [e for e in effects
                           if not (e.kind == EffectKind.LOG and e.data.get("refused"))]
            rounds = rounds_of_effects(effects)
            if rounds or event.kind == CLOSE_SHIFT:
                if meters is None:
                    meters = copy.deepcopy(self.meters)
                closing = meters.record(now.utc, event.kind, rounds)
                if closing is not None:
                    effects = [*effects, *close_effects(self.cfg.table_id, closing)]
            snapshot = None
            if any(e.kind == EffectKind.ROUND for e in effects):
                # A snapshot every few rounds bounds replay to those rounds' events and keeps
                # the bytes written per round down (a snapshot is ~0.6 KB of JSON, deflated to
                # ~0.3 KB, with its checkpoint row; every 32 rounds rather than 16, and the
                # meters' checkpoint every 64: -0.3 KB a round, replay <= 32 rounds, the meters'
                # <= 64: docs/daemon.md, "Schema 4").
                self._rounds_unsnapshotted += 1
                if self._rounds_unsnapshotted >= SNAPSHOT_EVERY_ROUNDS:
                    snapshot = self.machine.to_json(state)
                    self._rounds_unsnapshotted = 0
            entry = Entry(event, now, round_no, tuple(effects), snapshot)
            entries.append(entry)
            stepped.append((index, entry))
        try:
            seqs = self.journal.append_batch(
                entries, durable=needs_fsync(self.cfg.game, entries, meters is not None))
        except (JournalError, TablectlError) as exc:  # EntryRefused: an entry it cannot encode
            self.go_out_of_service(f"journal write failed: {exc}", code="E102")
            return [None] * len(events)
        self.state = state
        if meters is not None:
            self.meters = meters
            self._snapshots_unmetered += sum(e.snapshot is not None for e in entries)
            if self._snapshots_unmetered >= METERS_EVERY_SNAPSHOTS or any(
                    e.event.kind == CLOSE_SHIFT for e in entries):
                self._snapshots_unmetered = 0
                self._checkpoint_meters()
        result: list[int | None] = [None] * len(events)
        for (index, entry), seq in zip(stepped, seqs, strict=True):
            result[index] = seq
            self.stats.events += 1
            for effect in entry.effects:
                await self.effects.run(effect, round_no=entry.round, source=entry.event.kind,
                                       utc=entry.now.utc)
            self._publish(
                {
                    "seq": seq,
                    "utc": entry.now.utc,
                    "event": entry.event.as_json(),
                    "effects": [e.as_json() for e in entry.effects],
                }
            )
        return result

    def _checkpoint_meters(self) -> None:
        assert self.journal is not None
        try:
            save_checkpoint(self.journal, self.meters, self.cfg.service.state_dir)
        except OSError as exc:  # only a longer replay at the next start
            log_event(self.log, logging.WARNING, f"meters checkpoint not written: {exc}")

    def _round_closed(self, data: dict[str, Any]) -> None:
        if self.on_round is not None:
            self.on_round(data)
        if self.autoplay and sum(self.stats.rounds.values()) >= self.autoplay:
            self.stop()

    def _publish(self, item: dict[str, Any]) -> None:
        self.recent.append(item)
        for q in list(self.watchers):
            if q.qsize() >= WATCH_BACKLOG:
                self.watchers.discard(q)
                q.put_nowait(None)  # too slow: cut the watcher off rather than buffer forever
            else:
                q.put_nowait(item)

    # -- simulated people and health ----------------------------------------------------------

    async def _autoplay(self) -> None:
        assert self.policy is not None
        while not self._stop.is_set():
            await self._idle.wait()
            events = self.policy.next_events(self.machine.seat_view(self.state))
            if not events:
                await asyncio.sleep(0.01)  # waiting for a device: it will answer
                continue
            for event in events:
                self.emit(event)
            if self.pace_s:
                await asyncio.sleep(self.pace_s)
            else:
                await asyncio.sleep(0)

    async def _watchdog(self) -> None:
        interval = notify.watchdog_interval_s() or DEFAULT_WATCHDOG_S
        while True:
            await asyncio.sleep(interval)
            if not self.control.serving():  # the control socket server stopped: serve again
                self.stats.task_failures["control"] += 1
                log_event(self.log, logging.CRITICAL, "control socket not serving: restarted",
                          code="E504")
                await self.control.start()
            self.ignored.log_summary()
            if self._healthy():
                notify.notify("WATCHDOG=1", f"STATUS={self._status_line()}")

    def _healthy(self) -> bool:
        """The loop runs (we are here) and the consumer is not stuck behind an old event."""
        if self.queue.empty():
            return True
        return time.monotonic() - self._last_progress < STALL_S

    # -- what status says ---------------------------------------------------------------------

    def _round(self) -> int:
        return self._round_of(self.state)

    def _round_of(self, state: Any) -> int:
        if state is None:
            return 0
        return int(self.machine.status(state).get("round", 0))

    def _status_line(self) -> str:
        mode = "" if self.mode == "production" else f" [{self.mode.upper()} MODE]"
        if self.out_of_service:
            return f"OUT OF SERVICE: {self.out_of_service}{mode}"
        st = self.machine.status(self.state)
        return f"{self.cfg.game} {st.get('state')} round {st.get('round')}{mode}"
