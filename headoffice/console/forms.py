"""The console's forms: what a request may carry and how a refusal is answered (shared by
app.py and the page modules beside it)."""

from __future__ import annotations

import re

from starlette.requests import Request

from shared.errors import TablectlError
from shared.link import contract

MAX_FIELDS = 12  # fields of a form: the largest is a parameter change
MAX_TEXT = 500  # characters of a reason (the ledger keeps 500)
CONTROL = re.compile(r"[\x00-\x1f\x7f]")
# A parameter change's fields: (form key, Params field, parser) in dollars and percent.
PARAM_FIELDS = (("seed", "seed", "dollars"), ("increment", "increment", "percent"),
                ("hidden", "hidden", "percent"), ("ceiling", "ceiling", "dollars"),
                ("wager", "wager", "dollars"))


class Refused(TablectlError):
    """A request refused: its HTTP status, the counter it adds to, and the text shown."""

    def __init__(self, status: int, counter: str, text: str) -> None:
        super().__init__(text)
        self.status = status
        self.counter = counter


def hold_no_of(value: int) -> int:
    if not 1 <= value < 2**62:
        raise Refused(404, "bad_request", f"no held hit #{value}")
    return value


def pool_id_of(value: str) -> str:
    if not contract.POOL_ID.fullmatch(value):
        raise Refused(404, "bad_request", f"no pool {value[:64]!r}")
    return value


def reason_of(form: dict[str, str]) -> str:
    """A decision's reason: required, one line of at most MAX_TEXT characters."""
    text = form.get("reason", "").strip()
    if not text:
        raise Refused(400, "bad_request", "a decision needs a reason: say why (it is"
                       " recorded with your name)")
    if len(text) > MAX_TEXT or CONTROL.search(text):
        raise Refused(400, "bad_request", f"the reason is one line of at most {MAX_TEXT}"
                       " characters")
    return text


def verb_and_reason(request: Request, what: str) -> tuple[str, str]:
    """A decision's POST: its verb (approve or refuse, from the path) and its reason."""
    verb = request.path_params["verb"]
    if verb not in ("approve", "refuse"):
        raise Refused(404, "bad_request", f"no action {verb[:20]!r} on {what}")
    return verb, reason_of(request.state.form)


def client_of(request: Request) -> str:
    return f"{request.client.host}:{request.client.port}" if request.client else "-"


