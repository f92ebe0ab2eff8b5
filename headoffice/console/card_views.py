"""The console's Player Card pages (issue 29; headoffice/ledger/cards.py): every card with its Loss
Limit, period, net so far, reserved and remaining; one card's view adds where its money is
held (reservations not yet settled, by table and round), the tables it played at in the
period, head office's refusals and the restrictions and decisions made about it. Read only:
decisions are `tablectl-headoffice card ...` (the operating system's login decides). The
pages show a card's opaque id, never a name."""

from __future__ import annotations

from typing import TYPE_CHECKING

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from headoffice.console.forms import Refused
from headoffice.ledger import LedgerError, cards
from shared.link.patron import CARD_ID

if TYPE_CHECKING:
    from headoffice.console.app import Console
    from headoffice.console.sessions import Session


class CardPages:
    def __init__(self, console: Console) -> None:
        self.console = console

    async def list(self, request: Request, s: Session) -> Response:
        rows = await self.console.with_ledger(lambda led: cards.list_cards(led.db))
        return self.console.render(request, s, "cards.html",
                                   {"cards": rows, "max_cards": cards.MAX_LIST})

    async def card(self, request: Request, s: Session) -> Response:
        card = request.path_params["card"]
        if not CARD_ID.fullmatch(card):
            raise Refused(404, "bad_request", f"no card {card[:40]!r}: 4-32 of A-Z a-z 0-9 _ -")
        try:
            view = await self.console.with_ledger(lambda led: cards.show(led.db, card))
        except LedgerError as exc:
            raise Refused(404, "bad_request", str(exc)) from None
        return self.console.render(request, s, "card.html", {"c": view,
                                                             "max_log": cards.MAX_LOG})


def routes(console: Console) -> list[Route]:
    pages = CardPages(console)
    g = console.guarded
    return [Route("/cards", g(pages.list)), Route("/cards/{card:str}", g(pages.card))]
