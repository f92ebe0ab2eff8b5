"""The console's parameter changes: typed in dollars and percent, shown as a before/after
table of only what changes before anything is made, a reason with each; a forced change on a
pool with live tables waits for a second, different approver (`Ledger.set_params`,
`approve_change`, `refuse_change`, as `tablectl-headoffice pool set|approve|refuse` call them).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from headoffice.console.forms import (
    MAX_FIELDS,
    PARAM_FIELDS,
    Refused,
    client_of,
    hold_no_of,
    pool_id_of,
    reason_of,
    verb_and_reason,
)
from headoffice.console.money import param_changes, parse_dollars, parse_percent
from headoffice.ledger import Ledger, LedgerError
from headoffice.pools import requested_changes
from shared.errors import InputError

if TYPE_CHECKING:
    from headoffice.config import HeadOfficeConfig
    from headoffice.console.sessions import Session

log = logging.getLogger("tablectl.headoffice.console")


class ParamPages:
    """Console: the parameter-change pages (a mixin of `Console`, whose plumbing it uses)."""

    ho: HeadOfficeConfig
    counters: dict[str, int]
    with_ledger: Callable[[Callable[[Ledger], Any]], Awaitable[Any]]
    render: Callable[..., Response]
    params: Callable[..., Awaitable[Response]]

    def _param_form(self, form: dict[str, str]) -> dict[str, Any]:
        """The changes a parameter form asks for (dollars and percent), as `Ledger.set_params`
        takes them; Refused naming the field otherwise."""
        values: dict[str, Any] = {}
        for key, field, kind in PARAM_FIELDS:
            text = form.get(key, "").strip()
            if not text:
                continue
            try:
                values[field] = (parse_dollars(text, key) if kind == "dollars"
                                 else parse_percent(text, key))
            except ValueError as exc:
                raise Refused(400, "bad_request", str(exc)) from None
        try:
            return requested_changes(**values, no_ceiling=form.get("no_ceiling") == "on")
        except InputError as exc:
            raise Refused(400, "bad_request", str(exc)) from None

    async def params_confirm(self, request: Request, s: Session) -> Response:
        """A parameter change before it is made: what changes, before and after, in dollars
        and percent; the live tables; a reason to give (GET: nothing changes here)."""
        assert s.account is not None
        if not s.account.approver:
            raise Refused(403, "forbidden", f"operator {s.account.name!r} may view, not"
                           " decide (role viewer)")
        pool_id = pool_id_of(request.path_params["pool"])
        form = dict(request.query_params)
        if len(form) > MAX_FIELDS or any(len(v) > 40 for v in form.values()):
            raise Refused(400, "bad_request", "a parameter change is a few short figures")
        changes = self._param_form(form)

        def read(led: Ledger) -> dict[str, Any]:
            pool = led.pool(pool_id)
            if pool is None:
                raise Refused(404, "bad_request", f"no pool {pool_id!r}")
            old = pool.params.as_json()
            try:
                new = replace(pool.params, **changes).as_json()
            except (TypeError, InputError) as exc:
                raise Refused(400, "bad_request", f"pool {pool_id}: bad parameters: {exc}"
                               ) from None
            return {"pool": pool_id, "rows": param_changes(old, new),
                    "live": led.live_tables(pool_id, self.ho.live_window_s),
                    "fields": {k: form.get(k, "") for k, _, _ in PARAM_FIELDS},
                    "no_ceiling": form.get("no_ceiling") == "on"}

        return self.render(request, s, "params_confirm.html", await self.with_ledger(read))

    async def set_params(self, request: Request, s: Session) -> Response:
        """Change a pool's parameters, with a reason: `Ledger.set_params`, refused while
        tables are live unless forced by one of head office's operators, and a forced change
        on a live pool waits for a second approver; every attempt is in the param_log."""
        assert s.account is not None
        operator = s.account.name
        pool_id = pool_id_of(request.path_params["pool"])
        form = request.state.form
        changes = self._param_form(form)
        text = reason_of(form)
        force = form.get("force") == "on"
        try:
            change = await self.with_ledger(lambda led: led.set_params(
                pool_id, changes, operator=operator, authorised=self.ho.operators, force=force,
                reason=text, live_window_s=self.ho.live_window_s))
        except LedgerError as exc:
            self.counters["decisions_refused"] += 1
            log.warning("console: parameters of pool %s by %s from %s refused: %s", pool_id,
                        operator, client_of(request), exc)
            s.say(f"refused: {exc}")
            return await self.params(request, s, 409)
        self.counters["decisions"] += 1
        what = "; ".join(f"{a} {b} -> {c}" for a, b, c in param_changes(
            change.old.as_json(), change.new.as_json()))
        if change.status == "pending":
            done = (f"pool {pool_id}: forced change ({what}) first approved by {operator}"
                    f" (decision #{change.decision_no}); tables are live, so a second,"
                    " different approver applies it")
        else:
            done = (f"pool {pool_id} parameters changed by {operator}"
                    f"{' (forced)' if force else ''}: {what}")
        log.warning("console: %s (from %s)", done, client_of(request))
        s.say(done)
        return RedirectResponse("/params", 303)

    async def decision_page(self, request: Request, s: Session, status: int = 200
                            ) -> Response:
        """A parameter change waiting for its second approver: what the first decided."""
        no = hold_no_of(request.path_params["no"])
        d = await self.with_ledger(lambda led: led.decision(no))
        if d is None or d["kind"] != "params":
            raise Refused(404, "bad_request", f"no parameter change #{no}")
        rows = param_changes(d["detail"]["old"], d["detail"]["new"])
        return self.render(request, s, "decision.html", {"d": d, "rows": rows}, status)

    async def decide_change(self, request: Request, s: Session) -> Response:
        """The second approval (or a refusal) of a forced parameter change, with a reason."""
        assert s.account is not None
        operator = s.account.name
        no = hold_no_of(request.path_params["no"])
        verb, text = verb_and_reason(request, "a change")

        def act(led: Ledger) -> str:
            if verb == "approve":
                change = led.approve_change(no, operator=operator, authorised=self.ho.operators,
                                            reason=text, live_window_s=self.ho.live_window_s)
                return (f"parameter change #{no} applied by {change.first_by} and {operator}")
            led.refuse_change(no, operator=operator, authorised=self.ho.operators, reason=text)
            return f"parameter change #{no} refused by {operator}: {text}"

        try:
            done = await self.with_ledger(act)
        except LedgerError as exc:
            self.counters["decisions_refused"] += 1
            log.warning("console: %s of change #%s by %s from %s refused: %s", verb, no,
                        operator, client_of(request), exc)
            s.say(f"refused: {exc}")
            return await self.decision_page(request, s, 409)
        self.counters["decisions"] += 1
        log.warning("console: %s (from %s)", done, client_of(request))
        s.say(done)
        return RedirectResponse("/params", 303)

