"""The console's alarms, audit trail and CSV exports.

Alarms: the active ones (most severe first) with an acknowledgement form, and the history.
Any logged-in operator, viewer or approver, may acknowledge: it says "seen, and this is what I
did", it decides nothing about money (`Ledger.ack_alarm`: a note is required, a second
acknowledgement is refused; recorded in the trail with the operator's console name).

Every page's menu bar shows the number of active alarms (`menu_count`, run before each page;
it also looks for conditions nobody reports, `Ledger.sweep_alarms`, at most every SWEEP_S, so
a head office whose workers are all down still shows it).

The audit trail (headoffice/audit.py) filtered by table, person and dates typed in the casino's
time zone; the CSV exports (headoffice/exports.py) of hits, the parameter log, shift meters and
the trail, the trail's with the same filters as the page.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from headoffice import audit, exports
from headoffice.ledger import Ledger, LedgerError
from headoffice.ledger.alarms import KINDS
from headoffice.localtime import local_time, zone
from headoffice.worker import lease_for
from shared.errors import InputError

if TYPE_CHECKING:
    from headoffice.console.app import Console
    from headoffice.console.sessions import Session

log = logging.getLogger("tablectl.headoffice.console")
HISTORY = 200  # alarms on the history table, newest first
SWEEP_S = 5.0  # the console looks for unreported conditions at most this often
EXPORTS = {"hits": exports.hits_csv, "params": exports.params_csv,
           "meters": exports.meters_csv}


class AlarmPages:
    def __init__(self, console: Console) -> None:
        self.console = console
        self.tz = zone(console.ho.time_zone)
        self._swept = float("-inf")
        env = console.templates.env
        env.filters["local"] = lambda utc: local_time(utc, self.tz)
        env.globals["time_zone"] = console.ho.time_zone
        env.globals["alarm_kinds"] = KINDS

    async def menu_count(self, request: Request) -> None:
        """The active alarms' number for the menu bar (request.state.alarm_count)."""
        c = self.console
        now = time.monotonic()
        sweep = now - self._swept >= SWEEP_S
        if sweep:
            self._swept = now

        def read(led: Ledger) -> int:
            if sweep:
                try:
                    led.sweep_alarms(c.clock(), c.ho.live_window_s, lease_for(c.ho.heartbeat_s))
                except Exception:  # a page still shows; the workers sweep too
                    log.exception("console: looking for alarm conditions failed")
            return led.active_alarm_count()

        request.state.alarm_count = await c.with_ledger(read)

    # -- pages ------------------------------------------------------------------------------------
    async def alarms(self, request: Request, s: Session, status: int = 200) -> Response:
        def read(led: Ledger) -> dict[str, Any]:
            return {"active": led.alarms(active_only=True),
                    "history": led.alarms(active_only=False, limit=HISTORY),
                    "history_size": HISTORY}
        return self.console.render(request, s, "alarms.html", await self.console.with_ledger(read),
                                   status)

    async def ack(self, request: Request, s: Session) -> Response:
        """Acknowledge an alarm: the operator's console name, now, and the note."""
        from headoffice.console.forms import Refused as _Refused
        from headoffice.console.forms import client_of as _client

        assert s.account is not None
        person = s.account.name
        no = request.path_params["no"]
        if not 1 <= no < 2**62:
            raise _Refused(404, "bad_request", f"no alarm #{no}")
        note = request.state.form.get("note", "")
        client = _client(request)
        try:
            await self.console.with_ledger(
                lambda led: led.ack_alarm(no, person=person, note=note, client=client))
        except LedgerError as exc:
            self.console.counters["acks_refused"] = self.console.counters.get(
                "acks_refused", 0) + 1
            log.warning("console: acknowledgement of alarm #%s by %s from %s refused: %s", no,
                        person, client, exc)
            s.say(f"refused: {exc}")
            return await self.alarms(request, s, 409)
        log.warning("console: alarm #%s acknowledged by %s from %s", no, person, client)
        s.say(f"alarm #{no} acknowledged by {person}")
        return RedirectResponse("/alarms", 303)

    def _filter(self, request: Request) -> tuple[audit.Filter, dict[str, str]]:
        from headoffice.console.forms import Refused as _Refused

        q = request.query_params
        typed = {k: q.get(k, "")[:100] for k in ("table", "person", "since", "until")}
        try:
            return audit.Filter.of(self.tz, **typed), typed
        except InputError as exc:
            raise _Refused(400, "bad_request", str(exc)) from None

    async def trail(self, request: Request, s: Session) -> Response:
        f, typed = self._filter(request)
        entries = await self.console.with_ledger(lambda led: audit.trail(led.db, f))
        query = "&".join(f"{k}={v}" for k, v in _query(typed))
        return self.console.render(request, s, "audit.html", {
            "entries": entries, "typed": typed, "csv_query": query,
            "max_rows": audit.MAX_ROWS})

    async def trail_csv(self, request: Request, s: Session) -> Response:
        f, _ = self._filter(request)
        text = await self.console.with_ledger(
            lambda led: exports.trail_csv(audit.trail(led.db, f), self.tz))
        return _csv(text, "audit-trail.csv")

    async def export(self, request: Request, s: Session) -> Response:
        from headoffice.console.forms import Refused as _Refused

        name = request.path_params["name"]
        make = EXPORTS.get(name)
        if make is None:
            raise _Refused(404, "bad_request", f"no export {name[:20]!r}")
        text = await self.console.with_ledger(lambda led: make(led.db, self.tz))
        return _csv(text, f"{name}.csv")


def _query(typed: dict[str, str]) -> list[tuple[str, str]]:
    from urllib.parse import quote

    return [(k, quote(v, safe="")) for k, v in typed.items() if v]


def _csv(text: str, filename: str) -> Response:
    return Response(text, media_type="text/csv; charset=utf-8",
                    headers={"content-disposition": f'attachment; filename="{filename}"'})


def routes(console: Console, pages: AlarmPages) -> list[Route]:
    g = console.guarded
    return [
        Route("/alarms/{no:int}/ack", g(pages.ack, post=True), methods=["POST"]),
        Route("/audit", g(pages.trail)),
        Route("/export/audit.csv", g(pages.trail_csv)),
        Route("/export/{name:str}.csv", g(pages.export)),
    ]
