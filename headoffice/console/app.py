"""The console's web application (Starlette): server-rendered pages, a JSON of live figures,
and the decisions a person reads before making them. A held hit's page (GET /hits/N) shows
what head office would pay, the hands in words, the checks, the attendant's verification and a
first approval; its forms POST the approval or refusal with a required reason, which call the
ledger exactly as `tablectl-headoffice hit approve|refuse` does (`Ledger.approve_hit`,
`Ledger.refuse_hit`, with head office's `[service] operators` as the authorised list). A pool's
parameter change is typed in dollars and percent, shown as a before/after table of what changes
(GET /pools/P/params) and POSTed with a reason as `pool set` makes it (`Ledger.set_params`); a
forced change on a live pool waits for a second approver (GET /decisions/N, then POST, as `pool
approve|refuse`). A stopped pool's restart is `pool resume` (`Ledger.resume_pool`).

Every request other than the login form needs a session; every POST needs the session's CSRF
token; approving, refusing, changing parameters and resuming need the approver role. A refusal is
counted (`Console.counters`), logged with who and from where, and answered with a status,
never an exception.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from headoffice import hits as hitcheck
from headoffice.config import HeadOfficeConfig
from headoffice.console import alarms_views, card_views, views
from headoffice.console.accounts import Authenticator, ConsoleConfig
from headoffice.console.forms import (
    CONTROL,
    MAX_FIELDS,
    Refused,
    client_of,
    hold_no_of,
    reason_of,
    verb_and_reason,
)
from headoffice.console.money import percent
from headoffice.console.param_views import ParamPages
from headoffice.console.sessions import COOKIE, Session, SessionStore
from headoffice.ledger import Ledger, LedgerError
from shared.link import contract
from shared.money import dollars_or_dash

log = logging.getLogger("tablectl.headoffice.console")
HERE = Path(__file__).parent
MAX_FORM = 8192  # bytes of a form body: the largest form is a refusal's reason
HEADERS = [
    (b"content-security-policy", b"default-src 'self'; script-src 'self'; style-src 'self';"
     b" img-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'"),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
    (b"cache-control", b"no-store"),
]


class Guard:
    """Before anything else, a request must name an allowed host (DNS rebinding: another
    site's name resolving to this machine is refused); every response, pages, JSON and static
    files alike, carries the same security headers."""

    def __init__(self, app: ASGIApp, console: Console) -> None:
        self.app = app
        self.console = console

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        host = _host(dict(scope["headers"]).get(b"host", b""))
        if host not in self.console.cfg.allowed_hosts:
            self.console.counters["bad_request"] += 1
            log.warning("console: refused a request for host %r from %s", host[:80],
                        scope.get("client"))
            response = Response("unknown host\n", 400, media_type="text/plain")
            return await response(scope, receive, self._with_headers(send))
        return await self.app(scope, receive, self._with_headers(send))

    @staticmethod
    def _with_headers(send: Send) -> Send:
        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *HEADERS]
            await send(message)
        return with_headers


def _host(header: bytes) -> str:
    """The Host header's name, lower case, without its port ("[::1]:8080" -> "::1")."""
    text = header.decode("latin-1").strip().lower()
    if text.startswith("["):
        return text[1:text.find("]")] if "]" in text else text
    return text.split(":")[0]


class Console(ParamPages):
    def __init__(self, ho: HeadOfficeConfig, cfg: ConsoleConfig, ledger: Ledger, *,
                 clock: Callable[[], float] = time.time,
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        self.ho = ho
        self.cfg = cfg
        self.ledger = ledger
        ledger.policy = ho.hit_policy()  # what needs one approver and what two
        self.clock = clock
        self.auth = Authenticator(cfg.users, monotonic)
        self.sessions = SessionStore(cfg.idle_timeout_s, cfg.session_max_s, monotonic)
        self.counters = {"login_refused": 0, "csrf_refused": 0, "forbidden": 0,
                         "bad_request": 0, "decisions": 0, "decisions_refused": 0}
        self._ledger_lock = threading.Lock()  # a Database is used from one thread at a time
        self.templates = Jinja2Templates(directory=str(HERE / "templates"))
        self.templates.env.filters["dollars"] = dollars_or_dash  # "-" where a page has no figure
        self.templates.env.filters["percent"] = percent
        # An award's or a hand's category in words ("royal_flush" -> "Royal Flush"); a message
        # type likewise ("jackpot_hit" -> "jackpot hit"): no identifier is shown as a word.
        self.templates.env.filters["hand"] = hitcheck.hand_in_words
        self.templates.env.filters["words"] = lambda label: str(label).replace("_", " ")
        # Alarms, the audit trail and the exports (alarms_views.py); the `local` time filter.
        self.alarm_pages = alarms_views.AlarmPages(self)

    # -- plumbing -------------------------------------------------------------------------------
    async def with_ledger(self, fn: Callable[[Ledger], Any]) -> Any:
        def locked() -> Any:
            with self._ledger_lock:
                return fn(self.ledger)
        return await run_in_threadpool(locked)

    def session(self, request: Request) -> Session | None:
        return self.sessions.get(request.cookies.get(COOKIE))

    def _cookie(self, response: Response, s: Session) -> Response:
        response.set_cookie(COOKIE, s.token, httponly=True, samesite="strict",
                            secure=self.cfg.cookie_secure, path="/")
        return response

    def refuse(self, request: Request, s: Session | None, exc: Refused) -> Response:
        self.counters[exc.counter] += 1
        who = s.account.name if s is not None and s.account is not None else "-"
        log.warning("console: refused %s %s from %s (operator %s): %s", request.method,
                    request.url.path, client_of(request), who, exc)
        return self.render(request, s, "refused.html", {"reason": str(exc)}, exc.status)

    def render(self, request: Request, s: Session | None, name: str, context: dict[str, Any],
               status: int = 200) -> Response:
        flash = list(s.flash) if s is not None else []
        if s is not None:
            s.flash.clear()
        ctx = {"account": s.account if s else None, "csrf": s.csrf if s else "",
               "flash": flash, "page": name.removesuffix(".html"),
               "alarm_count": getattr(request.state, "alarm_count", None), **context}
        response = self.templates.TemplateResponse(request, name, ctx, status_code=status)
        return self._cookie(response, s) if s is not None else response

    async def form(self, request: Request) -> dict[str, str]:
        ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if ctype != "application/x-www-form-urlencoded":
            raise Refused(415, "bad_request", f"a form is sent urlencoded, not {ctype[:60]!r}")
        body = b""
        async for chunk in request.stream():
            body += chunk
            if len(body) > MAX_FORM:
                raise Refused(413, "bad_request", f"form larger than {MAX_FORM} bytes")
        try:
            pairs = parse_qsl(body.decode("utf-8"), keep_blank_values=True,
                              max_num_fields=MAX_FIELDS)
        except (UnicodeDecodeError, ValueError) as exc:
            raise Refused(400, "bad_request", f"form not readable: {exc}") from None
        form: dict[str, str] = {}
        for key, value in pairs:
            if key in form:
                raise Refused(400, "bad_request", f"field {key[:40]!r} sent twice")
            form[key] = value
        return form

    def guarded(self, handler: Callable[[Request, Session], Awaitable[Response]], *,
                post: bool = False, approver: bool = False, json: bool = False
                ) -> Callable[[Request], Awaitable[Response]]:
        """A route that needs a logged-in session; a POST also its CSRF token (checked before
        any other field is used) and, for a decision or a change, the approver
        role."""

        async def endpoint(request: Request) -> Response:
            s = self.session(request)
            if s is None or s.account is None:
                if json or post:
                    self.counters["forbidden"] += 1
                    log.warning("console: %s %s from %s without a session", request.method,
                                request.url.path, client_of(request))
                    return JSONResponse({"error": "log in first"}, 401)
                return RedirectResponse("/login", 303)
            try:
                if post:
                    form = await self.form(request)
                    if not s.csrf_ok(form.get("csrf")):
                        raise Refused(403, "csrf_refused", "missing or wrong CSRF token")
                    if approver and not s.account.approver:
                        raise Refused(403, "forbidden", f"operator {s.account.name!r} may"
                                       " view, not decide (role viewer)")
                    request.state.form = form
                if not json:
                    await self.alarm_pages.menu_count(request)
                return await handler(request, s)
            except Refused as exc:
                return self.refuse(request, s, exc)

        return endpoint

    # -- login ----------------------------------------------------------------------------------
    async def login_form(self, request: Request) -> Response:
        s = self.session(request) or self.sessions.new()
        if s.account is not None:
            return self._cookie(RedirectResponse("/", 303), s)
        return self.render(request, s, "login.html", {})

    async def login(self, request: Request) -> Response:
        s = self.session(request)
        try:
            form = await self.form(request)
            if s is None or not s.csrf_ok(form.get("csrf")):
                raise Refused(403, "csrf_refused", "login form expired or forged: load it again")
        except Refused as exc:
            return self.refuse(request, s, exc)
        name, password = form.get("name", ""), form.get("password", "")
        account = await run_in_threadpool(self.auth.check, name, password)
        client = client_of(request)
        if account is None:
            await self.with_ledger(lambda led: led.audit(
                "login_failed", CONTROL.sub("?", name[:64]) or "-", client=client,
                detail="locked after repeated failures" if self.auth.locked(name) else
                "wrong name or password"))
            self.counters["login_refused"] += 1
            log.warning("console: login refused for %r from %s%s", name[:64], client_of(request),
                        " (locked after repeated failures)" if self.auth.locked(name) else "")
            return self.render(request, s, "login.html",
                               {"error": "wrong name or password, or locked for a while"}, 401)
        self.sessions.drop(s.token)
        fresh = self.sessions.new(account)
        await self.with_ledger(lambda led: led.audit("login", account.name, client=client,
                                                     detail=f"role {account.role}"))
        log.info("console: %s (%s) logged in from %s", account.name, account.role,
                 client_of(request))
        return self._cookie(RedirectResponse("/", 303), fresh)

    async def logout(self, request: Request, s: Session) -> Response:
        self.sessions.drop(s.token)
        assert s.account is not None
        who = s.account.name
        await self.with_ledger(lambda led: led.audit("logout", who, client=client_of(request)))
        log.info("console: %s logged out", s.account.name)
        response = RedirectResponse("/login", 303)
        response.delete_cookie(COOKIE, path="/")
        return response

    # -- pages ----------------------------------------------------------------------------------
    async def overview(self, request: Request, s: Session) -> Response:
        def read(led: Ledger) -> dict[str, Any]:
            return {"pools": views.pools(led),
                    "tables": views.tables(led, self.ho.live_window_s, self.clock()),
                    "held": views.held_hits(led)["pending"], "alarms": views.alarms(led)[:10]}
        return self.render(request, s, "overview.html", await self.with_ledger(read))

    async def pools(self, request: Request, s: Session) -> Response:
        return self.render(request, s, "pools.html",
                           {"pools": await self.with_ledger(views.pools)})

    async def tables(self, request: Request, s: Session) -> Response:
        rows = await self.with_ledger(
            lambda led: views.tables(led, self.ho.live_window_s, self.clock()))
        return self.render(request, s, "tables.html",
                           {"tables": rows, "live_window_s": self.ho.live_window_s})

    async def hits(self, request: Request, s: Session) -> Response:
        return self.render(request, s, "hits.html", await self.with_ledger(views.held_hits))

    async def alarms(self, request: Request, s: Session) -> Response:
        return await self.alarm_pages.alarms(request, s)

    async def params(self, request: Request, s: Session, status: int = 200) -> Response:
        def read(led: Ledger) -> dict[str, Any]:
            return {"entries": views.param_log(led), "pools": views.pools(led),
                    "pending": views.pending_changes(led)}
        return self.render(request, s, "params.html", await self.with_ledger(read), status)

    async def meters(self, request: Request, s: Session) -> Response:
        return self.render(request, s, "meters.html",
                           {"tables": await self.with_ledger(views.shift_meters),
                            "per_table": views.SHIFTS_PER_TABLE})

    async def live(self, request: Request, s: Session) -> Response:
        return JSONResponse(await self.with_ledger(
            lambda led: views.live(led, self.ho.live_window_s, self.clock())))

    # -- decisions ------------------------------------------------------------------------------
    async def hit_page(self, request: Request, s: Session, status: int = 200) -> Response:
        """What an approver reads before deciding a held hit (as `hit show` prints it)."""
        hold_no = hold_no_of(request.path_params["no"])
        try:
            review = await self.with_ledger(lambda led: views.hit_review(led, hold_no))
        except LedgerError as exc:
            raise Refused(404, "bad_request", str(exc)) from None
        return self.render(request, s, "hit.html", {"h": review}, status)

    async def decide(self, request: Request, s: Session) -> Response:
        """Approve or refuse a held hit, with a reason: the ledger's own methods, as the CLI
        calls them. Under dual control the first approval leaves it pending."""
        assert s.account is not None
        operator = s.account.name
        hold_no = hold_no_of(request.path_params["no"])
        verb, text = verb_and_reason(request, "a held hit")

        def act(led: Ledger) -> str:
            if verb == "approve":
                done = led.approve_hit(hold_no, operator=operator,
                                       authorised=self.ho.operators, reason=text)
                if done["status"] == "pending":
                    return (f"held hit #{hold_no}: first approval by {operator}"
                            f" ({dollars_or_dash(done['amount'])}) recorded; a second,"
                            " different"
                            " approver completes it (dual control)")
                who = f"{done['first_by']} and {operator}" if done["first_by"] else operator
                return (f"held hit #{hold_no} approved by {who}: {dollars_or_dash(done['amount'])}"
                        " paid")
            led.refuse_hit(hold_no, operator=operator, authorised=self.ho.operators,
                           reason=text)
            return f"held hit #{hold_no} refused by {operator}: {text}"

        try:
            done = await self.with_ledger(act)
        except LedgerError as exc:
            self.counters["decisions_refused"] += 1
            log.warning("console: %s of held hit #%s by %s from %s refused by the ledger: %s",
                        verb, hold_no, operator, client_of(request), exc)
            s.say(f"refused: {exc}")
            try:
                return await self.hit_page(request, s, 409)
            except Refused:
                return self.render(request, s, "hits.html",
                                   await self.with_ledger(views.held_hits), 409)
        self.counters["decisions"] += 1
        log.warning("console: %s (from %s)", done, client_of(request))
        s.say(done)
        return RedirectResponse("/hits", 303)

    async def resume(self, request: Request, s: Session) -> Response:
        """Restart a stopped pool: `Ledger.resume_pool`, as `pool resume` calls it (the books
        re-checked first; only one of head office's operators)."""
        assert s.account is not None
        operator = s.account.name
        pool_id = request.path_params["pool"]
        if not contract.POOL_ID.fullmatch(pool_id):
            raise Refused(404, "bad_request", f"no pool {pool_id[:64]!r}")
        text = reason_of(request.state.form)
        try:
            await self.with_ledger(lambda led: led.resume_pool(
                pool_id, operator=operator, authorised=self.ho.operators, reason=text))
        except LedgerError as exc:
            self.counters["decisions_refused"] += 1
            log.warning("console: resume of pool %s by %s from %s refused: %s", pool_id,
                        operator, client_of(request), exc)
            s.say(f"refused: {exc}")
            return self.render(request, s, "pools.html",
                               {"pools": await self.with_ledger(views.pools)}, 409)
        self.counters["decisions"] += 1
        done = f"pool {pool_id} resumed by {operator}"
        log.warning("console: %s (from %s)", done, client_of(request))
        s.say(done)
        return RedirectResponse("/pools", 303)

    def app(self) -> Starlette:
        g = self.guarded
        routes = [
            Route("/login", self.login_form, methods=["GET"]),
            Route("/login", self.login, methods=["POST"]),
            Route("/logout", g(self.logout, post=True), methods=["POST"]),
            Route("/", g(self.overview)),
            Route("/pools", g(self.pools)),
            Route("/tables", g(self.tables)),
            Route("/hits", g(self.hits)),
            Route("/alarms", g(self.alarms)),
            Route("/params", g(self.params)),
            Route("/meters", g(self.meters)),
            Route("/live.json", g(self.live, json=True)),
            Route("/hits/{no:int}", g(self.hit_page)),
            Route("/hits/{no:int}/{verb:str}", g(self.decide, post=True, approver=True),
                  methods=["POST"]),
            Route("/pools/{pool:str}/params", g(self.params_confirm), methods=["GET"]),
            Route("/pools/{pool:str}/params", g(self.set_params, post=True, approver=True),
                  methods=["POST"]),
            Route("/decisions/{no:int}", g(self.decision_page)),
            Route("/decisions/{no:int}/{verb:str}",
                  g(self.decide_change, post=True, approver=True), methods=["POST"]),
            Route("/pools/{pool:str}/resume", g(self.resume, post=True, approver=True),
                  methods=["POST"]),
            *alarms_views.routes(self, self.alarm_pages),
            *card_views.routes(self),  # Player Cards (issue 29)
            Mount("/static", StaticFiles(directory=str(HERE / "static")), name="static"),
        ]
        app = Starlette(routes=routes)
        app.add_middleware(Guard, console=self)
        app.state.console = self
        return app


def create_app(ho: HeadOfficeConfig, cfg: ConsoleConfig, ledger: Ledger, **kw: Any) -> Starlette:
    return Console(ho, cfg, ledger, **kw).app()
