"""The control-socket commands the daemon itself answers (extensions add their own):

    status {}               game, rules, state, round, devices, link, pool, counters, config
    journal_tail {n?}       the latest journal records
    journal_summary {}      counts and sizes
    round_show {number}     one round's record and events
    dealer {action, data?}  a keypad action, as if the dealer pressed it (journaled with who);
                            an action the running game has not is refused before the journal
    table {action}          open | close: the supervisor opens or closes the table (journaled
                            with who), for a table with no table_closed key switch
    meters {}               the accounting meters: this shift's and the lifetime's, per box
    meters_close_shift {}   close the shift: its figures journaled and sent to head office
    logs {level?, device?, round?, n?, after?, since?}  the daemon's recent log lines (its
                                        in-memory ring): newer than line `after` (the answer's
                                        `cursor`: `logs -f`), not before UTC `since`
    errors {days?}          the error history: every warning or worse, with its code
    alarms {}               the active alarms and the recently cleared ones, with how
    alarms_ack {ids?, note?}  acknowledge active alarms (all this person may, without ids):
                            logged with who; a surveillance alarm needs the supervisor group
    selftest {}             every device's self-test and the journal's health
    devices {}              every device's status
    watch {}                a stream: the status, then every processed event with its effects
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from controller.config import config_json
from controller.control import Refused, current_peer
from controller.daemon.attention import attention
from controller.daemon.logbook import RING_LINES
from controller.errorlog import ERROR_DAYS, LEVELS, read_history
from controller.events import DEALER_PREFIX, Kind, face_down, face_down_record
from controller.journal.errors import RoundPruned
from controller.logs import event as log_event
from controller.meters import CLOSE_SHIFT
from controller.rounds.base import Event
from devices.base import DeviceError

if TYPE_CHECKING:
    from controller.daemon.service import TableService

JOURNAL_TAIL_MAX = 1000  # events one `journal tail` may ask for


class TableCommands:
    def __init__(self, table: TableService) -> None:
        self.table = table

    def handlers(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "journal_tail": self.tail,
            "journal_summary": self.summary,
            "round_show": self.round,
            "dealer": self.dealer,
            "table": self.open_close,
            "selftest": self.selftest,
            "devices": self.devices,
            "meters": self.meters,
            "meters_close_shift": self.close_shift,
            "logs": self.logs,
            "errors": self.errors,
            "alarms": self.alarms,
            "alarms_ack": self.alarms_ack,
        }

    def streams(self) -> dict[str, Any]:
        return {"watch": self.watch}

    async def status(self, args: dict[str, Any]) -> dict[str, Any]:
        t = self.table
        machine = t.game_status()
        devices = {n: d.status() for n, d in t.devices.items()}
        t.effects.alarms.clear_recovered(devices)
        return {
            "table_id": t.cfg.table_id,
            "game": t.cfg.game,
            # UTH has one approved rule set (NSW, The Star 2025); Pai Gow names its profile.
            "rules": machine.get("rules") or ("nsw" if t.cfg.game == "uth" else None),
            # Starting: the machine's own state is in `machine`; until the devices and journal
            # are up the table is neither healthy nor playing (`tablectl status` exits 5).
            "state": "out_of_service" if t.out_of_service
            else machine.get("state") if t.ready else "starting",
            "out_of_service": t.out_of_service,
            "ready": t.ready,  # False while starting: device/service commands are refused
            "round": machine.get("round"),
            "machine": machine,
            "devices": devices,  # = device_list
            # What needs a person: active alarms, device faults, a stuck round (attention.py).
            "attention": attention(t.cfg.game, machine, devices, t.effects.alarms.active,
                                   t.out_of_service, starting=not t.ready),
            "link": machine.get("link", "disabled" if not t.cfg.link.enabled else "unknown"),
            "pool": machine.get("pool"),
            "meters": t.meters.headline(),
            "events": t.stats.events,
            "rounds_this_run": dict(t.stats.rounds),
            "ignored_events": t.stats.ignored,
            "mode": t.mode,
            "tasks": {
                "failures": dict(t.stats.task_failures),
                "stop_errors": t.stats.stop_errors,
                "stop_abandoned": t.stats.stop_abandoned,
            },
            "control": t.control.stats(),
            # What the background verification found wrong with the segments' archives (an
            # alarm, E106; the table plays on: controller/journal/background.py).
            "archive_faults": [] if t.journal is None else list(
                t.journal.retention.archive_faults),
            "uptime_s": round(time.monotonic() - t.stats.started_mono, 1),
            "config": config_json(t.cfg),
            **{ext.name: ext.status() for ext in t.extensions},
        }

    async def alarms(self, args: dict[str, Any]) -> dict[str, Any]:
        alarms = self.table.effects.alarms
        alarms.clear_recovered({n: d.status() for n, d in self.table.devices.items()})
        return {"active": list(alarms.active), "cleared": list(alarms.cleared)}

    async def alarms_ack(self, args: dict[str, Any]) -> dict[str, Any]:
        """Acknowledge alarms; each one logged (with its round and device, so `tablectl logs
        --round N` finds it) naming who. Surveillance alarms: the supervisor group only."""
        t = self.table
        ids = args.get("ids")
        if ids is not None and not (ids and all(type(i) is int for i in ids)):
            raise Refused("ids must be a non-empty list of alarm numbers (tablectl alarms)")
        peer = current_peer()
        who = "the daemon" if peer is None else f"{peer.user} (uid {peer.uid})"
        supervisor = peer is None or t.control.access.role(peer) == "supervisor"
        note = str(args.get("note") or "")
        t.effects.alarms.clear_recovered({n: d.status() for n, d in t.devices.items()})
        try:
            done = t.effects.alarms.acknowledge(ids, who, supervisor, note)
        except KeyError as exc:
            raise Refused(f"no active alarm {exc.args[0]} (tablectl alarms lists them)") from None
        except PermissionError as exc:
            raise Refused(
                f"permission denied: alarm {exc.args[0]} is a surveillance alarm; acknowledging"
                f" it needs group {t.control.access.super_group}") from None
        for alarm in done:
            # A warning (E603, not counted as an error): who cleared an alarm is kept in the
            # error history and journald even where info lines are not (simulation).
            about = {k: alarm[k] for k in ("round", "device") if alarm.get(k) is not None}
            log_event(t.log, logging.WARNING,
                      f"alarm {alarm['id']} acknowledged by {who}"
                      + (f" ({note})" if note else "") + f": {alarm['text']}", **about, code="E603")
        return {"acknowledged": done, "active": list(t.effects.alarms.active)}

    async def tail(self, args: dict[str, Any]) -> list[dict[str, Any]]:
        n = int(args.get("n", 20))
        if not 1 <= n <= JOURNAL_TAIL_MAX:
            raise Refused(f"n must be within 1..{JOURNAL_TAIL_MAX}, got {n}")
        journal = self.table.journal
        if journal is None:
            return []
        events = [e.as_json() for e in journal.tail(n)]
        # A round still in play shows no dealt card (as status and watch); a closed round's
        # events are the audit record, every card.
        in_play = {r for r in {e.get("round") for e in events}
                   if isinstance(r, int) and journal.round_record(r) is None}
        return [face_down_record(e) if e.get("round") in in_play else e for e in events]

    async def summary(self, args: dict[str, Any]) -> dict[str, Any]:
        journal = self.table.journal
        return {} if journal is None else journal.summary()

    async def round(self, args: dict[str, Any]) -> dict[str, Any]:
        journal = self.table.journal
        if journal is None:
            raise Refused("journal unavailable")
        number = int(args["number"])
        try:
            events = journal.round_events(number)
        except RoundPruned:
            # Out of the journal file (pruned, or moved once head office held it): read back
            # from its archive if that is here and checks out; if not, RoundPruned again says
            # where it went and why it cannot be read.
            got = await asyncio.to_thread(journal.archived_round, number)
            return {
                "round": number,
                "record": None if got.record is None else got.record.as_json(),
                "events": [e.as_json() for e in got.events],
                "archive": {"path": str(got.path), "segment": got.segment,
                            "sha256": got.digest},
            }
        record = journal.round_record(number)
        if record is None and not events:
            raise Refused(f"no round {number} in the journal")
        shown = [e.as_json() for e in events]
        return {
            "round": number,
            "record": None if record is None else record.as_json(),
            # Still in play: no dealt card's value (as status and watch); once closed, every one.
            "events": shown if record is not None else [face_down_record(e) for e in shown],
        }

    def _refuse_action(self, what: str, reason: str) -> Refused:
        """A dealer/table request refused before the journal: counted with the control
        socket's refusals (`control.refused_by_reason` in status) and logged (E701)."""
        t = self.table
        t.control.refused[reason] += 1
        peer = current_peer()
        who = "unknown peer" if peer is None else f"user {peer.user} (uid {peer.uid})"
        text = f"{what} refused before the journal ({reason}) from {who}"
        log_event(t.log, logging.WARNING, text, code="E701")
        return Refused(what)

    async def dealer(self, args: dict[str, Any]) -> dict[str, Any]:
        """Inject a keypad action, as if the dealer pressed it; the answer is its effects and,
        when the machine refused it, `refused` (its reason)."""
        t = self.table
        action = str(args.get("action", ""))
        # The CLI cannot be trusted: only an action the running machine routes reaches the
        # journal; a misspelt one would otherwise be journaled as a refused record (issue 13).
        known = t.machine.dealer_actions()
        if action not in known:
            raise self._refuse_action(
                f"dealer action {action[:40]!r} is not a {t.cfg.game} keypad action"
                f" (known: {', '.join(sorted(known))})", "unknown_action")
        data = args.get("data") or {}
        if not isinstance(data, dict):
            raise Refused("dealer data must be an object")
        if "operator" in data:
            raise Refused("dealer data may not hold 'operator': the daemon records who asked")
        return await self._act(Event(f"{DEALER_PREFIX}{action}", data))

    async def open_close(self, args: dict[str, Any]) -> dict[str, Any]:
        """`table {action: open|close}`: the supervisor's key switch. A table configured without
        `table_closed` has no other way to open (UTH/Pai Gow start closed); the event is the
        key switch's, with who turned it."""
        action = args.get("action")
        kinds = {"open": Kind.TABLE_OPEN, "close": Kind.TABLE_CLOSE}
        if action not in kinds:
            raise self._refuse_action(f"table action {str(action)[:40]!r}: open or close",
                                      "unknown_action")
        return await self._act(Event(kinds[action], {}))

    async def _act(self, event: Event) -> dict[str, Any]:
        t = self.table
        if t.out_of_service is not None:
            raise Refused(f"out of service: {t.out_of_service}")
        peer = current_peer()
        if peer is not None:
            # Journaled with the event: who acted. Not `by`: dealer.cut already says by whom
            # the cut was chosen (NSW 8.4.3); the machines ignore `operator`.
            event = Event(event.kind, {**event.data, "operator": peer.as_json()})
        await t.idle()
        seq = await t.process(event)
        said = [item["effects"] for item in t.recent if item["seq"] == seq]
        effects = said[0] if said else []
        # The machine answers an action it will not take with a log/alarm marked `refused`
        # (RoundMachine.step); anything else it says (alarms of a misdeal, logs) is an answer.
        refused = [e["data"].get("text", "") for e in effects if e["data"].get("refused")]
        if seq is None:
            refused = refused or ["not journaled (see the log)"]
        return {"seq": seq, "effects": effects, "status": t.game_status(),
                "refused": "; ".join(refused) or None}

    async def meters(self, args: dict[str, Any]) -> dict[str, Any]:
        return {"table_id": self.table.cfg.table_id, "game": self.table.cfg.game,
                **self.table.meters.as_json()}

    async def close_shift(self, args: dict[str, Any]) -> dict[str, Any]:
        """Journal `meters.close_shift` (who asked, with it); the answer is the closing figures
        the journal recorded for head office."""
        t = self.table
        if t.out_of_service is not None:
            raise Refused(f"out of service: {t.out_of_service}")
        peer = current_peer()
        data = {} if peer is None else {"operator": peer.as_json()}
        await t.idle()
        seq = await t.process(Event(CLOSE_SHIFT, data))
        if seq is None:
            raise Refused("the shift close was not journaled (see the log)")
        closing = t.meters.last_close
        assert closing is not None  # the record just journaled closed the shift
        return {"seq": seq, **closing}

    async def logs(self, args: dict[str, Any]) -> dict[str, Any]:
        level = args.get("level")
        if level is not None and level not in LEVELS:
            raise Refused(f"level {level!r}: one of {', '.join(LEVELS)}")
        n = int(args.get("n", 100))
        if not 1 <= n <= RING_LINES:
            raise Refused(f"n must be within 1..{RING_LINES}, got {n}")
        after = args.get("after", 0)
        if isinstance(after, bool) or not isinstance(after, int) or after < 0:
            raise Refused(f"after must be a line number >= 0, got {after!r}")
        ring = self.table.ring
        lines = ring.select(level, args.get("device"), args.get("round"), n, after=after,
                            since=args.get("since"))
        return {"source": "daemon", "lines": lines, "cursor": ring.count}

    async def errors(self, args: dict[str, Any]) -> dict[str, Any]:
        days = int(args.get("days", ERROR_DAYS))
        if not 1 <= days <= ERROR_DAYS:
            raise Refused(f"days must be within 1..{ERROR_DAYS}, got {days}")
        history = self.table.errors
        if history is None:
            return {"errors": [], "write_errors": 0}
        return {"errors": read_history(history.path, days), "write_errors": history.write_errors}

    async def selftest(self, args: dict[str, Any]) -> dict[str, Any]:
        t = self.table
        results: dict[str, Any] = {}
        for name, device in t.devices.items():
            try:
                results[name] = await device.selftest()
            except DeviceError as exc:
                results[name] = {"ok": False, "error": str(exc)}
        journal_ok = t.journal is not None and t.out_of_service is None
        return {
            "ok": journal_ok and all(r.get("ok") for r in results.values()),
            "journal": {"ok": journal_ok, "error": t.out_of_service},
            "devices": results,
        }

    async def devices(self, args: dict[str, Any]) -> dict[str, Any]:
        return {name: d.status() for name, d in self.table.devices.items()}

    async def watch(self, args: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
        q = self.table.subscribe()
        try:
            yield {"status": await self.status({})}
            while True:
                item = await q.get()
                if item is None:
                    return
                yield face_down(item)  # no dealt card's value on a terminal, as in status
        finally:
            self.table.unsubscribe(q)
