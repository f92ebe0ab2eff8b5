"""tablectld's core: one asyncio loop that owns the table's state.

Data flow (DESIGN.md): device/dealer event -> queue -> machine.step (pure) -> journal.append (the
event with its outbox and round effects, one fsync'd transaction) -> effects carried out (device
commands, display, alarms) -> watchers. A stalled loop stops the watchdog pings, so systemd
restarts the daemon; a corrupt journal takes the table out of service instead of starting fresh.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import signal
import time
from collections import Counter, deque
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

from controller import notify
from controller.config import TableConfig, config_json
from controller.control import SOCKET_NAME, Access, ControlServer, current_peer
from controller.journal import Entry, Journal, JournalError
from controller.journal.background import look_after_journal
from controller.logs import FIELDS_ATTR
from controller.logs import event as log_event
from controller.rounds.base import Effect, Event, Now, RoundMachine
from devices.base import Device, DeviceError
from devices.meter import display_command

WATCH_BACKLOG = 256  # events a slow `tablectl watch` may fall behind before it is cut off
STALL_S = 5.0  # an event older than this in the queue means the loop is not healthy
DEFAULT_WATCHDOG_S = 2.0
MAX_BATCH = 64  # events journaled in one transaction at most
SNAPSHOT_EVERY_ROUNDS = 16
IGNORED_SUMMARY_S = 10.0  # out of service: one line per this many seconds for ignored events
# A long-lived task that dies is restarted after RESTART_MIN_S, doubling up to RESTART_MAX_S;
# more than RESTART_LIMIT deaths within RESTART_WINDOW_S take the table out of service.
RESTART_MIN_S = 0.5
RESTART_MAX_S = 30.0
RESTART_LIMIT = 5
RESTART_WINDOW_S = 300.0
JOURNAL_TAIL_MAX = 1000  # events one `journal tail` may ask for
MODES = ("production", "simulation", "development")

# Set while an extension starts: the tasks it creates then are its long-lived ones (supervised).
_STARTING: contextvars.ContextVar[str | None] = contextvars.ContextVar("starting", default=None)


class Policy(Protocol):
    """Simulated players and dealer: what people at the table do next (controller/sim/)."""

    def next_events(self, status: dict[str, Any]) -> list[Event]: ...


class Extension(Protocol):
    """A part of the daemon beside the round machine (the head-office link, software
    verification, device test commands): started after the journal and devices, stopped before
    them. It may emit events (`table.emit`), read the journal, watch processed events
    (`table.subscribe()`), add control-socket commands and take the table out of service.
    The tasks it creates in `start()` are supervised: one that raises is logged CRITICAL with
    its traceback and the extension is stopped and started again (TableService._start_extension);
    a control command's peer is `control.current_peer()`."""

    name: str

    async def start(self, table: TableService) -> None: ...

    async def stop(self) -> None: ...

    def handlers(self) -> dict[str, Any]:
        """Control-socket commands this extension answers: {cmd: async handler(args)}."""
        ...

    def status(self) -> dict[str, Any]:
        """Shown by `tablectl status` under the extension's name."""
        ...


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def system_now() -> Now:
    return Now(utc=utc_now(), mono_ms=time.monotonic_ns() // 1_000_000)


@dataclass
class Stats:
    events: int = 0
    rounds: Counter[str] = field(default_factory=Counter)
    rejected: int = 0  # events the machine could not take (a machine fault, logged)
    effect_errors: int = 0
    ignored: int = 0  # events that arrived while out of service (counted, summarised in the log)
    task_failures: Counter[str] = field(default_factory=Counter)  # task name -> deaths
    stop_errors: int = 0  # extensions/devices that failed to stop (logged)
    started_mono: float = field(default_factory=time.monotonic)


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
        self.stats = Stats()
        self.queue: asyncio.Queue[tuple[float, Event]] = asyncio.Queue()
        self.watchers: set[asyncio.Queue[dict[str, Any] | None]] = set()
        self.recent: deque[dict[str, Any]] = deque(maxlen=50)
        self._stop = asyncio.Event()
        self._idle = asyncio.Event()
        self._last_progress = time.monotonic()
        self._exit_code = 0
        self._rounds_unsnapshotted = SNAPSHOT_EVERY_ROUNDS  # the first round closed snapshots
        self._stopping = False
        self._ignored_since_line = 0  # ignored events not yet in a log line
        self._ignored_line_mono: float | None = None  # when the last such line was written
        self._failures: dict[str, deque[float]] = {}  # task name -> recent deaths (monotonic)
        self._ext_tasks: dict[str, list[asyncio.Task[Any]]] = {}
        self._restarting: set[str] = set()
        self._gave_up: set[str] = set()  # tasks that took the table out of service
        self._helpers: set[asyncio.Task[Any]] = set()  # extension restarts in flight
        handlers: dict[str, Any] = {}
        for ext in self.extensions:
            handlers.update(ext.handlers())
        self.control = ControlServer(
            cfg.service.runtime_dir / SOCKET_NAME,
            handlers={
                **handlers,
                "status": self._h_status,
                "journal_tail": self._h_tail,
                "journal_summary": self._h_summary,
                "round_show": self._h_round,
                "dealer": self._h_dealer,
                "selftest": self._h_selftest,
                "devices": self._h_devices,
            },
            streams={"watch": self._watch},
            group=cfg.service.socket_group,
            on_error=lambda msg: log_event(log, logging.WARNING, msg),
            access=Access(cfg.service.tech_group, cfg.service.super_group),
            on_refused=lambda msg: log_event(log, logging.WARNING, msg),
            on_action=lambda msg: log_event(log, logging.INFO, msg),
        )

    # -- start and stop -----------------------------------------------------------------------

    async def run(self) -> int:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self.stop)
        notify.notify("STATUS=starting")
        await self.control.start()
        tasks: list[asyncio.Task[None]] = []
        try:
            if self.mode != "production":
                log_event(self.log, logging.WARNING, f"running in {self.mode} mode", mode=self.mode)
            self._open_journal()
            await self._start_devices()
            if self.out_of_service is not None:  # the journal: say so on the meter
                await self._run_effect(Effect("display", {"mode": "closed"}))
            for ext in self.extensions:
                await self._start_extension(ext)
            await self._resume()
            if self.out_of_service is None and self.mode != "production":
                # Unverified software may run only here: the meter says so until play shows
                # something else, status and every STATUS= line say so for good.
                await self._run_effect(
                    Effect("display", {"mode": "announce", "text": f"{self.mode.upper()} MODE"})
                )
            if self.out_of_service is None:
                await self._selftest_or_fail()
            notify.notify("READY=1", f"STATUS={self._status_line()}")
            tasks.append(self.spawn("consume", self._consume))
            tasks.append(self.spawn("watchdog", self._watchdog))
            tasks.append(asyncio.create_task(  # whole-chain verify, archive, retention
                look_after_journal(self.journal, self.go_out_of_service, self.log)))
            if self.policy is not None and self.out_of_service is None:
                tasks.append(self.spawn("autoplay", self._autoplay))
            if self.out_of_service is not None and self.autoplay is not None:
                self._exit_code = 1
                self.stop()
            await self._stop.wait()
        finally:
            self._stopping = True
            for task in [*tasks, *self._helpers]:
                task.cancel()
            await asyncio.gather(*tasks, *self._helpers, return_exceptions=True)
            self._log_ignored(final=True)
            notify.notify("STOPPING=1")
            for ext in reversed(self.extensions):
                await self._stop_part(f"extension {ext.name}", ext.stop)
            await self._stop_devices()
            await self.control.close()
            if self.journal is not None:
                self.journal.close()
        return self._exit_code

    def stop(self) -> None:
        """SIGTERM: the event in hand finishes (its journal write is synchronous), then we close."""
        self._stop.set()

    def _open_journal(self) -> None:
        try:
            self.journal = Journal.open(
                self.cfg.service.state_dir, table_id=self.cfg.table_id, game=self.cfg.game,
                fast=True,  # from the latest checkpoint; the whole chain: look_after_journal
            )
        except JournalError as exc:
            # A loss (JournalLossError) names the mark's seq and the journal's last seq.
            self._go_out_of_service(f"journal unusable: {exc}")
            return
        except OSError as exc:  # e.g. the state directory cannot be made on a read-only disk
            self._go_out_of_service(f"journal unusable: {exc.filename}: {exc.strerror}")
            return
        key = self.journal.key
        if key.dev:
            log_event(
                self.log,
                logging.WARNING,
                f"JOURNAL KEY IS A DEVELOPMENT KEY ({key.source}), kept beside the journal: its "
                "MACs stop nobody who can write the state directory. A table in play gets its "
                "key through systemd LoadCredential= (docs/journal.md)",
                key_id=key.key_id,
            )
        snapshot, events = self.journal.replay_point()
        try:
            state = self.machine.initial() if snapshot is None else self.machine.from_json(snapshot)
            for stored in events:
                state, _ = self.machine.step(state, stored.event, stored.now)
        except Exception as exc:  # a snapshot this build cannot read: never guess, never reset
            self._go_out_of_service(f"journal replay failed ({type(exc).__name__}: {exc})")
            return
        self.state = state
        log_event(
            self.log,
            logging.INFO,
            "journal verified and replayed",
            records=self.journal.last_seq,
            replayed=len(events),
            round=self._round(),
        )

    def go_out_of_service(self, reason: str) -> None:
        """Stop playing: no event is processed, the meter shows CLOSED, status says why."""
        self._go_out_of_service(reason)

    def subscribe(self) -> asyncio.Queue[dict[str, Any] | None]:
        """A queue of every processed event with its effects (what `watch` shows); a consumer
        that falls WATCH_BACKLOG behind gets None and is dropped. `unsubscribe` when done."""
        q: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        self.watchers.add(q)
        return q

    def unsubscribe(self, q: asyncio.Queue[dict[str, Any] | None]) -> None:
        self.watchers.discard(q)

    def _go_out_of_service(self, reason: str) -> None:
        if self.out_of_service is None:
            self.out_of_service = reason
        elif reason not in self.out_of_service:  # keep the first reason, add the others
            self.out_of_service = f"{self.out_of_service}; {reason}"
        log_event(self.log, logging.CRITICAL, f"OUT OF SERVICE: {reason}")
        notify.notify(f"STATUS=OUT OF SERVICE: {reason}")

    async def _start_devices(self) -> None:
        for device in self.devices.values():
            try:
                await device.start(self._emit_from_device)
            except DeviceError as exc:
                log_event(self.log, logging.ERROR, f"device {device.name} did not start: {exc}",
                          device=device.name)

    async def _resume(self) -> None:
        """After the extensions (software verification) had their say: re-issue what the open
        round was waiting for and show where the table is. Out of service, nothing is resumed
        (whoever took the table out of service put its reason on the meter)."""
        if self.out_of_service is not None:
            return
        for effect in self.machine.resume(self.state):
            await self._run_effect(effect)

    async def _selftest_or_fail(self) -> None:
        report = await self._h_selftest({})
        if not report["ok"]:
            log_event(self.log, logging.WARNING, "self-test found problems", report=report)

    async def _stop_devices(self) -> None:
        for device in self.devices.values():
            await self._stop_part(f"device {device.name}", device.stop)

    async def _stop_part(self, what: str, stop: Callable[[], Awaitable[None]]) -> None:
        """Stop one part; a failure is logged with its traceback and counted, and the other
        parts are still stopped (the journal is closed last in any case)."""
        try:
            await stop()
        except Exception as exc:
            self.stats.stop_errors += 1
            self.log.error(f"{what} failed to stop: {type(exc).__name__}: {exc}", exc_info=exc)

    # -- supervision --------------------------------------------------------------------------

    def spawn(
        self, name: str, factory: Callable[[], Coroutine[Any, Any, None]]
    ) -> asyncio.Task[None]:
        """Run `factory()` as a supervised long-lived task: if it raises (or returns while the
        table is not stopping) it is logged CRITICAL with its traceback and started again after
        a backoff; too many deaths in a row take the table out of service (and the restarts go
        on, at the longest backoff). Cancel the returned task to stop it."""
        return asyncio.create_task(self._supervised(name, factory), name=name)

    async def _supervised(
        self, name: str, factory: Callable[[], Coroutine[Any, Any, None]]
    ) -> None:
        delay = RESTART_MIN_S
        while True:
            began = time.monotonic()
            try:
                await factory()
                if self._stopping or self._stop.is_set():  # it ended because we are stopping
                    return
                raise RuntimeError(f"task {name} returned while the table runs")
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                self._task_died(name, exc)
            if time.monotonic() - began > RESTART_WINDOW_S:
                delay = RESTART_MIN_S  # it had been healthy for a while: a fresh start
            await asyncio.sleep(delay)
            delay = min(delay * 2, RESTART_MAX_S)
            log_event(self.log, logging.WARNING, f"task {name} restarted", task=name)

    def _task_died(self, name: str, exc: BaseException) -> bool:
        """Log and count a death; True when the task has now died too often (the table is
        then out of service, once, for that task)."""
        self.stats.task_failures[name] += 1
        self.log.critical(
            f"task {name} died: {type(exc).__name__}: {exc}",
            exc_info=exc,  # the traceback (journald: EXCEPTION_TEXT)
            extra={FIELDS_ATTR: {"task": name}},
        )
        now = time.monotonic()
        recent = self._failures.setdefault(name, deque(maxlen=RESTART_LIMIT + 1))
        recent.append(now)
        while recent and now - recent[0] > RESTART_WINDOW_S:
            recent.popleft()
        if len(recent) > RESTART_LIMIT:
            if name in self._gave_up:
                return True
            self._gave_up.add(name)
            self.go_out_of_service(
                f"task {name} died {len(recent)} times in {RESTART_WINDOW_S:.0f} s"
                f" (last: {type(exc).__name__}: {exc})"
            )
            self._helper(self._show_closed())
            return True
        return False

    async def _show_closed(self) -> None:
        await self._run_effect(Effect("display", {"mode": "closed"}))

    def _helper(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(coro)
        self._helpers.add(task)
        task.add_done_callback(self._helpers.discard)

    async def _start_extension(self, ext: Extension) -> None:
        """Start an extension and supervise the tasks it starts: one dying (an exception) is
        logged CRITICAL with its traceback and the extension is stopped and started again
        after a backoff (too many deaths: out of service, see _task_died)."""
        loop = asyncio.get_running_loop()
        created: list[asyncio.Task[Any]] = []
        previous = loop.get_task_factory()

        def factory(loop: asyncio.AbstractEventLoop, coro: Any, **kw: Any) -> asyncio.Future[Any]:
            task = previous(loop, coro, **kw) if previous else asyncio.Task(coro, loop=loop, **kw)
            if _STARTING.get() == ext.name and isinstance(task, asyncio.Task):
                created.append(task)
            return task

        token = _STARTING.set(ext.name)
        loop.set_task_factory(factory)  # type: ignore[arg-type]
        try:
            await ext.start(self)
        finally:
            loop.set_task_factory(previous)
            _STARTING.reset(token)
        self._ext_tasks[ext.name] = created  # one that died already reports at once
        for task in self._ext_tasks[ext.name]:
            task.add_done_callback(lambda t, ext=ext: self._ext_task_done(ext, t))  # type: ignore[misc]

    def _ext_task_done(self, ext: Extension, task: asyncio.Task[Any]) -> None:
        if task.cancelled():
            return
        exc = task.exception()  # retrieved here, whatever happens next
        if self._stopping or ext.name in self._restarting:
            return
        if exc is None:
            log_event(self.log, logging.INFO, f"extension {ext.name}: task {task.get_name()} ended")
            return
        if self._task_died(f"{ext.name}/{task.get_name()}", exc):
            return  # too many deaths: left stopped, the table is out of service
        self._restarting.add(ext.name)
        self._helper(self._restart_extension(ext))

    async def _restart_extension(self, ext: Extension) -> None:
        """Stop the extension and start it again, after a backoff that grows with its deaths."""
        while not self._stopping:
            deaths = sum(len(v) for k, v in self._failures.items() if k.startswith(f"{ext.name}/"))
            await asyncio.sleep(min(RESTART_MIN_S * 2 ** max(deaths - 1, 0), RESTART_MAX_S))
            await self._stop_part(f"extension {ext.name}", ext.stop)
            if self._stopping:
                return
            try:
                await self._start_extension(ext)
            except Exception as exc:
                if self._task_died(f"{ext.name}/start", exc):
                    self._restarting.discard(ext.name)
                    return
                continue
            log_event(self.log, logging.WARNING, f"extension {ext.name} restarted", ext=ext.name)
            self._restarting.discard(ext.name)
            return

    # -- the event path -----------------------------------------------------------------------

    def _emit_from_device(self, event: Event) -> None:
        self.emit(event)

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
            if self.out_of_service is not None:
                self._ignore(batch)
                continue
            await self.process_batch(batch)
            self._last_progress = time.monotonic()

    def _ignore(self, batch: list[Event]) -> None:
        """Out of service every event is dropped: counted, the first one logged, then one
        summary line per IGNORED_SUMMARY_S (a full disk must not flood the log as well)."""
        self.stats.ignored += len(batch)
        if self._ignored_line_mono is None:
            log_event(
                self.log,
                logging.WARNING,
                "event ignored: out of service (further ones are counted, summarised every"
                f" {IGNORED_SUMMARY_S:.0f} s)",
                kind=batch[0].kind,
            )
            self._ignored_line_mono = time.monotonic()
            self._ignored_since_line = len(batch) - 1
            return
        self._ignored_since_line += len(batch)
        self._log_ignored()

    def _log_ignored(self, final: bool = False) -> None:
        if self._ignored_line_mono is None or not self._ignored_since_line:
            return
        elapsed = time.monotonic() - self._ignored_line_mono
        if elapsed < IGNORED_SUMMARY_S and not final:
            return
        log_event(
            self.log,
            logging.WARNING,
            f"{self._ignored_since_line} events ignored in {elapsed:.0f} s: out of service",
            ignored=self._ignored_since_line,
            ignored_total=self.stats.ignored,
        )
        self._ignored_line_mono = time.monotonic()
        self._ignored_since_line = 0

    async def process(self, event: Event) -> int | None:
        """Step, journal, then act. Returns the journal seq (None if the event was refused)."""
        return (await self.process_batch([event]))[0]

    async def process_batch(self, events: list[Event]) -> list[int | None]:
        """Step each event in order (pure), journal them all in one transaction, then carry out
        their effects in order. Nothing acts on an event before it is durable."""
        assert self.journal is not None
        state = self.state
        entries: list[Entry] = []
        stepped: list[tuple[int, Entry]] = []
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
                )
                continue
            snapshot = None
            if any(e.kind == "round" for e in effects):
                # A snapshot every few rounds bounds replay to those rounds' events and keeps
                # the bytes written per round down (a snapshot is ~0.6 KB of JSON, deflated to
                # ~0.3 KB; every 16 rounds rather than 8: -0.1 KB a round, replay <= 16 rounds).
                self._rounds_unsnapshotted += 1
                if self._rounds_unsnapshotted >= SNAPSHOT_EVERY_ROUNDS:
                    snapshot = self.machine.to_json(state)
                    self._rounds_unsnapshotted = 0
            entry = Entry(event, now, round_no, tuple(effects), snapshot)
            entries.append(entry)
            stepped.append((index, entry))
        try:
            seqs = self.journal.append_batch(entries)
        except (JournalError, ValueError) as exc:
            self._go_out_of_service(f"journal write failed: {exc}")
            return [None] * len(events)
        self.state = state
        result: list[int | None] = [None] * len(events)
        for (index, entry), seq in zip(stepped, seqs, strict=True):
            result[index] = seq
            self.stats.events += 1
            for effect in entry.effects:
                await self._run_effect(effect)
            self._publish(
                {
                    "seq": seq,
                    "utc": entry.now.utc,
                    "event": entry.event.as_json(),
                    "effects": [e.as_json() for e in entry.effects],
                }
            )
        return result

    async def _run_effect(self, effect: Effect) -> None:
        data = dict(effect.data)
        try:
            if effect.kind == "device":
                await self._device(str(data.get("device"))).command(
                    str(data.get("command")), data.get("args") or {}
                )
            elif effect.kind == "display":
                if "meter" in self.devices:
                    command, args = display_command(data)
                    await self.devices["meter"].command(command, args)
            elif effect.kind == "round":
                self.stats.rounds[str(data.get("status"))] += 1
                log_event(
                    self.log, logging.INFO, f"round {data.get('number')} {data.get('status')}",
                    round=data.get("number"), status=data.get("status"),
                )
                if self.on_round is not None:
                    self.on_round(data)
                if self.autoplay and sum(self.stats.rounds.values()) >= self.autoplay:
                    self.stop()
            elif effect.kind == "alarm":
                level = (
                    logging.CRITICAL if data.get("severity") == "surveillance" else logging.WARNING
                )
                log_event(self.log, level, f"ALARM {data.get('text')}", **_scalars(data))
            elif effect.kind == "log":
                log_event(self.log, logging.INFO, str(data.get("text", data)))
        except DeviceError as exc:
            self.stats.effect_errors += 1
            device = {"device": str(data.get("device", "meter"))} if effect.kind in (
                "device", "display") else {}  # the display effect is the meter's
            log_event(self.log, logging.ERROR, f"effect failed: {exc}", kind=effect.kind,
                      **device)

    def _device(self, name: str) -> Device:
        if name not in self.devices:
            raise DeviceError(f"no device {name!r} on this table")
        return self.devices[name]

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
                log_event(self.log, logging.CRITICAL, "control socket not serving: restarted")
                await self.control.start()
            self._log_ignored()
            if self._healthy():
                notify.notify("WATCHDOG=1", f"STATUS={self._status_line()}")

    def _healthy(self) -> bool:
        """The loop runs (we are here) and the consumer is not stuck behind an old event."""
        if self.queue.empty():
            return True
        return time.monotonic() - self._last_progress < STALL_S

    # -- control socket -----------------------------------------------------------------------

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

    async def _h_status(self, args: dict[str, Any]) -> dict[str, Any]:
        machine = {} if self.state is None else self.machine.status(self.state)
        return {
            "table_id": self.cfg.table_id,
            "game": self.cfg.game,
            # UTH has one approved rule set (NSW, The Star 2025); Pai Gow names its profile.
            "rules": machine.get("rules") or ("nsw" if self.cfg.game == "uth" else None),
            "state": "out_of_service" if self.out_of_service else machine.get("state"),
            "out_of_service": self.out_of_service,
            "round": machine.get("round"),
            "machine": machine,
            "devices": {n: d.status() for n, d in self.devices.items()},  # = device_list
            "link": machine.get("link", "disabled" if not self.cfg.link.enabled else "unknown"),
            "pool": machine.get("pool"),
            "events": self.stats.events,
            "rounds_this_run": dict(self.stats.rounds),
            "ignored_events": self.stats.ignored,
            "mode": self.mode,
            "tasks": {
                "failures": dict(self.stats.task_failures),
                "stop_errors": self.stats.stop_errors,
            },
            "control": self.control.stats(),
            "uptime_s": round(time.monotonic() - self.stats.started_mono, 1),
            "config": config_json(self.cfg),
            **{ext.name: ext.status() for ext in self.extensions},
        }

    async def _h_tail(self, args: dict[str, Any]) -> list[dict[str, Any]]:
        n = int(args.get("n", 20))
        if not 1 <= n <= JOURNAL_TAIL_MAX:
            raise ValueError(f"n must be within 1..{JOURNAL_TAIL_MAX}, got {n}")
        return [] if self.journal is None else [e.as_json() for e in self.journal.tail(n)]

    async def _h_summary(self, args: dict[str, Any]) -> dict[str, Any]:
        return {} if self.journal is None else self.journal.summary()

    async def _h_round(self, args: dict[str, Any]) -> dict[str, Any]:
        if self.journal is None:
            raise ValueError("journal unavailable")
        number = int(args["number"])
        record = self.journal.round_record(number)
        events = self.journal.round_events(number)
        if record is None and not events:
            raise ValueError(f"no round {number} in the journal")
        return {
            "round": number,
            "record": None if record is None else record.as_json(),
            "events": [e.as_json() for e in events],
        }

    async def _h_dealer(self, args: dict[str, Any]) -> dict[str, Any]:
        """Inject a keypad action, as if the dealer pressed it; the answer is its effects."""
        action = str(args.get("action", ""))
        if not action.replace("_", "").isalnum():
            raise ValueError(f"dealer action {action!r} is not a keypad action name")
        data = args.get("data") or {}
        if not isinstance(data, dict):
            raise ValueError("dealer data must be an object")
        if "operator" in data:
            raise ValueError("dealer data may not hold 'operator': the daemon records who asked")
        if self.out_of_service is not None:
            raise ValueError(f"out of service: {self.out_of_service}")
        peer = current_peer()
        if peer is not None:
            # Journaled with the event: who acted. Not `by`: dealer.cut already says by whom
            # the cut was chosen (NSW 8.4.3); the machines ignore `operator`.
            data = {**data, "operator": peer.as_json()}
        await self._idle.wait()
        seq = await self.process(Event(f"dealer.{action}", data))
        said = [item["effects"] for item in self.recent if item["seq"] == seq]
        return {
            "seq": seq,
            "effects": said[0] if said else [],
            "status": self.machine.status(self.state),
        }

    async def _h_selftest(self, args: dict[str, Any]) -> dict[str, Any]:
        results: dict[str, Any] = {}
        for name, device in self.devices.items():
            try:
                results[name] = await device.selftest()
            except DeviceError as exc:
                results[name] = {"ok": False, "error": str(exc)}
        journal_ok = self.journal is not None and self.out_of_service is None
        return {
            "ok": journal_ok and all(r.get("ok") for r in results.values()),
            "journal": {"ok": journal_ok, "error": self.out_of_service},
            "devices": results,
        }

    async def _h_devices(self, args: dict[str, Any]) -> dict[str, Any]:
        return {name: d.status() for name, d in self.devices.items()}

    async def _watch(self, args: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
        q = self.subscribe()
        try:
            yield {"status": await self._h_status({})}
            while True:
                item = await q.get()
                if item is None:
                    return
                yield item
        finally:
            self.unsubscribe(q)


def _scalars(data: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in data.items() if isinstance(v, str | int | bool) and k != "text"}
