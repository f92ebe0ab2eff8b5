"""UTH 13.3 through the round machines and head office's own ledger (headoffice/ledger/cards.py,
SQLite and PostgreSQL): two tables wager one Player Card on several boxes each, and head office
decides the requests in any order (two workers of a shared subscription may take one table's
requests out of order). Whatever the order, what the tables hold as granted is held at head
office, and never more than the card's Loss Limit. The same over a real broker:
tests/link/test_link_patron.py."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controller.rounds.cards import CardsConfig
from controller.rounds.uth import UthConfig
from headoffice.ledger import Ledger, cards
from shared.link import contract, patron
from tests.support.uth_table import POOL, Table

LIMIT = 20_000  # $200: a few $30-$120 risks fit, not all
CARDS = CardsConfig(required=True, local=False)
UTC = "2026-11-28T10:00:00.000Z"
WAGER = st.tuples(st.sampled_from(["T1", "T2"]), st.integers(1, 7),
                  st.sampled_from([500, 1000, 2000]))


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(wagers=st.lists(WAGER, min_size=1, max_size=10), seed=st.integers(0, 2**16))
def test_13_3_two_tables_one_card_any_order_of_decisions_never_pass_the_limit(
        new_url: Callable[[], str], wagers: list[tuple[str, int, int]], seed: int) -> None:
    led = Ledger.open(new_url())
    led.enrol(dict.fromkeys(("T1", "T2")))
    cards.add_card(led.db, "card-0001", limit=LIMIT, kind="day", length=1, start=None,
                   operator="alice", allowed=["alice"], reason="property test")
    rng = random.Random(seed)
    tables = {n: Table(UthConfig(pool=POOL, cards=CARDS)) for n in ("T1", "T2")}
    asked: list[tuple[str, dict[str, Any]]] = []

    def decide(i: int) -> None:
        name, args = asked.pop(i)
        body = patron.card_request(name, f"{name}/{args['req']}", "card_reserve", args["card"],
                                   round=args["round"], amount=args["amount"], utc=UTC)
        ans = cards.answer(led.db, patron.parse_card_request(contract.dumps(body), name))
        assert ans is not None
        keys = ("valid", "reason", "limit", "remaining", "restricted", "granted")
        tables[name].step("ho.card", req=args["req"], card=args["card"],
                          **{k: ans[k] for k in keys})

    def check() -> None:
        view = cards.show(led.db, "card-0001")
        held = {h["table_id"]: h["amount"] for h in view["held"]}
        for name, t in tables.items():
            granted = sum(r["granted"] or 0 for r in t.state.patrons.values()
                          if r["status"] == "valid")
            assert granted <= held.get(name, 0), (name, t.state.patrons, held)
        assert view["reserved"] <= LIMIT

    try:
        for name, box, ante in wagers:
            out = tables[name].step("dealer.wager", box=box, ante=ante, card="card-0001")
            asked += [(name, e.data["args"]) for e in out
                      if e.kind == "device" and e.data["device"] == "patron"]
            while asked and rng.random() < 0.5:  # some decided now, in any order
                decide(rng.randrange(len(asked)))
            check()
        while asked:
            decide(rng.randrange(len(asked)))
            check()
    finally:
        led.close()
