"""The console's Player Card pages (issue 29): every card's Loss Limit, period, net so far,
reserved and remaining; one card's held reservations, tables, refusals and restrictions, as
head office's ledger has them (headoffice/ledger/cards.py), for any logged-in operator,
read only."""

from __future__ import annotations

from pathlib import Path

import pytest

from headoffice.ledger import Incoming, cards
from shared.link import contract, patron
from tests.test_headoffice_console import browser, cells  # noqa: F401 -- the fixture
from tests.test_headoffice_console_support import Browser, Office, make_office

UTC = "2026-11-28T10:00:00.000Z"


@pytest.fixture
def office(tmp_path: Path) -> Office:
    office = make_office(tmp_path / "office")
    led = office.ledger()
    try:
        db = led.db
        cards.add_card(db, "card-0001", limit=10000, kind="week", length=1, start=None,
                       operator="alice", allowed=["alice"], reason="new member")
        cards.add_card(db, "card-0002", limit=None, kind="day", length=1, start=None,
                       operator="alice", allowed=["alice"], reason="NZ profile: no limit")
        for table, round_, amount in (("T1", 900, 4000), ("T2", 7, 3000), ("T2", 8, 5000)):
            req = patron.card_request(table, f"{table}/{round_}", "card_reserve", "card-0001",
                                      round=round_, amount=amount, utc=UTC)
            cards.answer(db, patron.parse_card_request(contract.dumps(req), table))
        # T1 settles round 900: lost $25.00 of the $40.00 reserved (its outbox's next message).
        seq = int(led.db.one("SELECT last_seq FROM tables WHERE id = 'T1'")["last_seq"]) + 1
        parked = led.db.one("SELECT MIN(seq) AS s FROM parked WHERE table_id = 'T1'")
        assert parked is None or parked["s"] is None or parked["s"] > seq
        led.apply_batch([Incoming("outbox", "T1", contract.outbox_message(
            "T1", seq, seq, "card_settled", UTC, {"round": 900, "card": "card-0001",
                                                  "reserved": 4000, "wagered": 4000,
                                                  "net": -2500, "returned": 0,
                                                  "void": False}))])
        cards.restrict(db, "card-0001", operator="alice", allowed=["alice"],
                       reason="asked for a break")
    finally:
        led.close()
    return office


def test_the_cards_and_one_cards_view(browser: Browser) -> None:  # noqa: F811
    assert browser.login("victor").status_code == 303  # a viewer reads them too
    page = browser.client.get("/cards")
    assert page.status_code == 200 and 'href="/cards"' in page.text
    row = cells(page.text, "card-card-0001")
    # $100 limit: lost $25.00, $30.00 held at T2: $45.00 remains
    assert row[:4] == ["card-0001", "valid", "$100.00", "1 week(s)"]
    assert row[5:] == ["-$25.00", "$30.00", "$45.00", "RESTRICTED"]
    assert cells(page.text, "card-card-0002")[2] == "none"
    assert cells(page.text, "card-card-0002")[-2:] == ["no limit", "no"]
    one = browser.client.get("/cards/card-0001").text
    assert cells(one, "card-net") == ["-$25.00 (net loss $25.00)"]
    assert cells(one, "card-remaining") == ["$45.00"]
    assert cells(one, "card-restricted")[0].startswith("by alice until ")
    assert cells(one, "held-T2-7")[:3] == ["T2", "7", "$30.00"]
    assert "held-T1-900" not in one  # settled: released
    assert cells(one, "played-T1")[:4] == ["T1", "1", "$40.00", "-$25.00"]
    # T2's $50.00 did not fit what remained ($100 - $40 - $30): refused, with the reason.
    refusal = [r for r in one.split("<tr ") if 'id="refusal-' in r]
    assert len(refusal) == 1 and "over the Loss Limit: $30.00 remains (UTH 13.3)" in refusal[0]
    assert "asked for a break" in one and "new member" in one


def test_bad_or_unknown_cards_are_refused(browser: Browser) -> None:  # noqa: F811
    assert browser.login("alice").status_code == 303
    assert browser.client.get("/cards/nobody-9").status_code == 404
    assert browser.client.get("/cards/%3Cscript%3E").status_code == 404
    browser.client.cookies.clear()
    assert browser.client.get("/cards").status_code in (302, 303)  # no session: login
