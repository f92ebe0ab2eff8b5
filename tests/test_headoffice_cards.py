"""Player Cards at head office (issue 29): the patron contract's parsers, the cards' database
tables, the atomic reservation against a card's Loss Limit across tables (UTH 13.1, 13.3,
13.4; Pai Gow 9.1), settlement through the outbox exactly once. SQLite and PostgreSQL."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from headoffice.db import open_database
from headoffice.ledger import Incoming, Ledger, LedgerError, cards
from shared.clock import utc_now
from shared.link import contract, patron

OPS = ["alice"]
UTC = "2026-11-28T10:00:00.000Z"


def reserve(table: str, round_: int, card: str, amount: int, n: int = 1) -> dict[str, Any]:
    return patron.parse_card_request(contract.dumps(patron.card_request(
        table, f"{table}/{n}", "card_reserve", card, round=round_, amount=amount, utc=UTC)),
        table)


def check(table: str, card: str) -> dict[str, Any]:
    return patron.parse_card_request(contract.dumps(patron.card_request(
        table, f"{table}/1", "card_check", card, utc=UTC)), table)


def settled(round_: int, card: str, reserved: int, net: int, *, wagered: int | None = None,
            void: bool = False) -> dict[str, Any]:
    return {"round": round_, "card": card, "reserved": reserved,
            "wagered": reserved if wagered is None else wagered, "net": net, "returned": 0,
            "void": void}


class Outbox:
    """A table's outbox, numbered from 1, applied through the ledger's batches."""

    def __init__(self, ledger: Ledger, table: str) -> None:
        self.ledger, self.table, self.seq = ledger, table, 0

    def send(self, type_: str, payload: dict[str, Any], *, again: bool = False) -> Any:
        if not again:
            self.seq += 1
        body = contract.outbox_message(self.table, self.seq, self.seq, type_, UTC, payload)
        return self.ledger.apply_batch([Incoming("outbox", self.table, body)])


def opened(url: str, tables: tuple[str, ...] = ("T1", "T2", "T3")) -> Ledger:
    ledger = Ledger.open(url)
    ledger.enrol(dict.fromkeys(tables))
    return ledger


# -- the contract -----------------------------------------------------------------------------
def test_topics_and_round_trip() -> None:
    assert patron.request_topic("T1") == "tablectl/v1/table/T1/patron"
    assert patron.answer_topic("T1") == "tablectl/v1/ho/table/T1/patron"
    req = reserve("T1", 7, "card-0001", 2500)
    assert (req["type"], req["round"], req["amount"], req["card"]) == (
        "card_reserve", 7, 2500, "card-0001")
    ans = patron.card_answer("T1", "T1/1", "card-0001", valid=True, limit=10000,
                             remaining=7500, granted=2500, period_end=UTC)
    assert patron.parse_card_answer(contract.dumps(ans), "T1") == ans


@pytest.mark.parametrize(("change", "field"), [
    ({"card": "x"}, "'card'"),                        # too short for an opaque id
    ({"card": "a" * 33}, "'card'"),
    ({"type": "card_steal"}, "'type'"),
    ({"amount": -1}, "'amount'"),
    ({"amount": 10**13}, "'amount'"),
    ({"round": 0}, "'round'"),
    ({"req": "T2/1"}, "'req'"),                       # another table's request numbering
    ({"req": "T1/" + "1" * 80}, "'req'"),
    ({"table": "T2"}, "topic of 'T1'"),              # a table asking on another's topic
])
def test_bad_requests_name_the_field(change: dict[str, Any], field: str) -> None:
    body = {**patron.card_request("T1", "T1/1", "card_reserve", "card-0001", round=1,
                                  amount=100, utc=UTC), **change}
    with pytest.raises(contract.SchemaError, match=field):
        patron.parse_card_request(contract.dumps(body), "T1")


def test_request_bounded_before_decoding() -> None:
    with pytest.raises(contract.SchemaError, match="bytes"):
        patron.parse_card_request(b"{" + b" " * 5000 + b"}", "T1")


@pytest.mark.parametrize(("type_", "payload", "field"), [
    ("card_settled", {**settled(1, "card-0001", 100, -100), "net": "lots"}, "'net'"),
    # a void round: net 0, or minus a forfeit (UTH 13.10, NSW 16.6) never above what was wagered
    ("card_settled", {**settled(1, "card-0001", 100, -5, wagered=0, void=True)}, "void"),
    ("card_settled", {**settled(1, "card-0001", 100, 5, void=True)}, "void"),
    ("card_settled", {**settled(1, "card-0001", 100, -100), "card": "no name!"}, "'card'"),
    ("card_restricted", {"card": "card-0001", "by": "sup", "reason": ""}, "reason"),
    ("chips_declared", {"card": "card-0001", "round": None, "amount": 5, "kind": "stolen"},
     "'kind'"),
])
def test_bad_card_outbox_payloads(type_: str, payload: dict[str, Any], field: str) -> None:
    with pytest.raises(contract.SchemaError, match=field):
        contract.check_outbox_payload(type_, payload)


# -- answering --------------------------------------------------------------------------------
def test_unknown_card_is_invalid_with_a_reason(ledger_url: str) -> None:
    ledger = opened(ledger_url)
    for req in (check("T1", "nobody-1"), reserve("T1", 1, "nobody-1", 100)):
        ans = cards.answer(ledger.db, req)
        assert ans is not None and ans["valid"] is False
        assert "unknown card" in ans["reason"]
    assert ans["granted"] == 0  # a reservation of an unknown card: nothing reserved


def test_table_not_enrolled_gets_no_answer(ledger_url: str) -> None:
    ledger = opened(ledger_url, ("T1",))
    cards.add_card(ledger.db, "card-0001", limit=1000, kind="day", length=1, start=None,
                   operator="alice", allowed=OPS, reason="new player")
    assert cards.answer(ledger.db, reserve("T9", 1, "card-0001", 100)) is None
    assert cards.show(ledger.db, "card-0001")["reserved"] == 0


def test_reserve_within_then_over_the_limit(ledger_url: str) -> None:
    """UTH 13.3: a wager that would exceed the Loss Limit is refused, with what remains."""
    ledger = opened(ledger_url)
    cards.add_card(ledger.db, "card-0001", limit=10000, kind="day", length=1, start=None,
                   operator="alice", allowed=OPS, reason="new player")
    first = cards.answer(ledger.db, reserve("T1", 1, "card-0001", 6000))
    assert first is not None
    assert (first["valid"], first["granted"], first["remaining"], first["limit"]) == (
        True, 6000, 4000, 10000)
    over = cards.answer(ledger.db, reserve("T2", 1, "card-0001", 4001))
    assert over is not None and over["granted"] == 0
    assert over["reason"] == "over the Loss Limit: $40.00 remains (UTH 13.3)"
    # Repeating a request is idempotent; a larger amount for the same round replaces the old
    # (checked again); a smaller one leaves the larger held: a table's requests may be decided
    # out of order (two workers), and what was granted is released only at settlement.
    again = cards.answer(ledger.db, reserve("T1", 1, "card-0001", 6000))
    assert again == first
    less = cards.answer(ledger.db, reserve("T1", 1, "card-0001", 2000))
    assert less is not None and (less["granted"], less["remaining"]) == (2000, 4000)
    view = cards.show(ledger.db, "card-0001")
    assert view["reserved"] == 6000
    more = cards.answer(ledger.db, reserve("T1", 1, "card-0001", 9000))
    assert more is not None and (more["granted"], more["remaining"]) == (9000, 1000)
    assert cards.show(ledger.db, "card-0001")["reserved"] == 9000
    assert view["refusals"][0]["table_id"] == "T2" and view["refusals"][0]["amount"] == 4001


def test_settlement_counts_the_net_once_and_releases(ledger_url: str) -> None:
    ledger = opened(ledger_url)
    cards.add_card(ledger.db, "card-0001", limit=10000, kind="week", length=1, start=None,
                   operator="alice", allowed=OPS, reason="new player")
    cards.answer(ledger.db, reserve("T1", 1, "card-0001", 5000))
    cards.answer(ledger.db, reserve("T2", 4, "card-0001", 3000))
    t1 = Outbox(ledger, "T1")
    result = t1.send("card_settled", settled(1, "card-0001", 5000, -3500))
    assert result.applied == 1 and not result.refused
    assert t1.send("card_settled", settled(1, "card-0001", 5000, -3500),
                   again=True).duplicates == 1  # the table's resend: applied once
    view = cards.show(ledger.db, "card-0001")
    assert (view["net"], view["net_loss"], view["reserved"], view["remaining"]) == (
        -3500, 3500, 3000, 3500)
    assert view["tables"] == [{"table_id": "T1", "rounds": 1, "wagered": 5000, "net": -3500,
                               "last_utc": view["tables"][0]["last_utc"]}]
    # A win shrinks the period's net loss (the definition's "maximum net loss over a period").
    Outbox(ledger, "T2").send("card_settled", settled(4, "card-0001", 3000, 1500))
    view = cards.show(ledger.db, "card-0001")
    assert (view["net_loss"], view["reserved"], view["remaining"]) == (2000, 0, 8000)
    # A settled round cannot be reserved again.
    again = cards.answer(ledger.db, reserve("T1", 1, "card-0001", 100))
    assert again is not None and again["granted"] == 0 and "settled" in again["reason"]
    # A second settlement of the round (another seq) is refused, never counted twice.
    assert t1.send("card_settled", settled(1, "card-0001", 5000, -3500)).refused
    assert cards.show(ledger.db, "card-0001")["net_loss"] == 2000


def test_a_forfeit_in_a_void_round_counts_toward_the_limit(ledger_url: str) -> None:
    """UTH 13.10 / NSW Pai Gow 16.6: a fraudster's forfeited wager is the card's loss: a void
    round's card_settled carries it (net -forfeit) and what remains falls by it."""
    ledger = opened(ledger_url)
    cards.add_card(ledger.db, "card-0001", limit=10000, kind="day", length=1, start=None,
                   operator="alice", allowed=OPS, reason="new player")
    assert cards.answer(ledger.db, reserve("T1", 1, "card-0001", 6500))["granted"] == 6500
    result = Outbox(ledger, "T1").send("card_settled", settled(1, "card-0001", 6500, -6500,
                                                               void=True))
    assert not result.refused
    view = cards.show(ledger.db, "card-0001")
    assert (view["net_loss"], view["reserved"], view["remaining"]) == (6500, 0, 3500)


def test_winnings_never_lift_the_allowance_above_the_limit(ledger_url: str) -> None:
    ledger = opened(ledger_url)
    cards.add_card(ledger.db, "card-0001", limit=1000, kind="day", length=1, start=None,
                   operator="alice", allowed=OPS, reason="new player")
    cards.answer(ledger.db, reserve("T1", 1, "card-0001", 1000))
    Outbox(ledger, "T1").send("card_settled", settled(1, "card-0001", 1000, 5000))
    ans = cards.answer(ledger.db, reserve("T1", 2, "card-0001", 1001))
    assert ans is not None and ans["granted"] == 0 and ans["remaining"] == 1000


def test_restriction_from_the_table_and_invalidation(ledger_url: str) -> None:
    """UTH 13.4: a supervisor restricts the player until the period resets."""
    ledger = opened(ledger_url)
    cards.add_card(ledger.db, "card-0001", limit=10000, kind="day", length=1, start=None,
                   operator="alice", allowed=OPS, reason="new player")
    Outbox(ledger, "T1").send("card_restricted", {"card": "card-0001", "by": "sup1",
                                                  "reason": "asked for a break"})
    ans = cards.answer(ledger.db, reserve("T2", 1, "card-0001", 100))
    assert ans is not None and ans["restricted"] is True and ans["granted"] == 0
    assert "sup1@T1" in ans["reason"] and "13.4" in ans["reason"]
    view = cards.show(ledger.db, "card-0001")
    assert view["restricted_by"] == "sup1@T1" and view["restricted_until"] == view["period_end"]
    with pytest.raises(LedgerError, match="reason"):
        cards.unrestrict(ledger.db, "card-0001", operator="alice", allowed=OPS, reason=" ")
    with pytest.raises(LedgerError, match="not authorised"):
        cards.unrestrict(ledger.db, "card-0001", operator="mallory", allowed=OPS, reason="x")
    cards.unrestrict(ledger.db, "card-0001", operator="alice", allowed=OPS, reason="reviewed")
    ans = cards.answer(ledger.db, reserve("T2", 1, "card-0001", 100))
    assert ans is not None and ans["granted"] == 100
    cards.invalidate(ledger.db, "card-0001", operator="alice", allowed=OPS, reason="reported lost")
    ans = cards.answer(ledger.db, check("T2", "card-0001"))
    assert ans is not None and ans["valid"] is False and "reported lost" in ans["reason"]
    actions = [e["action"] for e in cards.show(ledger.db, "card-0001")["decisions"]]
    assert actions == ["invalidated", "unrestricted", "restricted", "added"]


def test_chips_declared_recorded(ledger_url: str) -> None:
    ledger = opened(ledger_url)
    cards.add_card(ledger.db, "card-0001", limit=None, kind="day", length=1, start=None,
                   operator="alice", allowed=OPS, reason="no limit profile")
    Outbox(ledger, "T1").send("chips_declared", {"card": "card-0001", "round": None,
                                                 "amount": 20000, "kind": "purchase"})
    entry = cards.show(ledger.db, "card-0001")["decisions"][0]
    assert (entry["action"], entry["amount"], entry["table_id"]) == (
        "chips_purchase", 20000, "T1")
    # No limit set: a reservation is granted and held, and nothing remains to say.
    ans = cards.answer(ledger.db, reserve("T1", 1, "card-0001", 10**9))
    assert ans is not None and (ans["granted"], ans["limit"], ans["remaining"]) == (
        10**9, None, None)


def test_period_resets(ledger_url: str) -> None:
    ledger = opened(ledger_url)
    today = cards._day_start(utc_now())
    yesterday = cards._utc(cards._dt(today) - timedelta(days=1))
    cards.add_card(ledger.db, "card-0001", limit=1000, kind="day", length=1,
                   start=yesterday, operator="alice", allowed=OPS, reason="new player")
    then = cards._utc(cards._dt(yesterday) + timedelta(hours=10))
    ans = cards.answer(ledger.db, reserve("T1", 1, "card-0001", 1000), now=then)
    assert ans is not None and ans["granted"] == 1000 and ans["period_end"] == today
    assert cards.answer(ledger.db, reserve("T2", 1, "card-0001", 1), now=then)["granted"] == 0
    Outbox(ledger, "T1").send("card_settled", settled(1, "card-0001", 1000, -1000))
    # The loss counts in the period it was reserved in: today has the whole limit again.
    nxt = cards.answer(ledger.db, reserve("T1", 2, "card-0001", 1000))
    assert nxt is not None and nxt["granted"] == 1000
    assert nxt["period_end"] == cards._utc(cards._dt(today) + timedelta(days=1))
    assert cards.period_end("month", 1, "2026-01-31T00:00:00.000Z") == "2026-02-28T00:00:00.000Z"
    assert cards.current_start("week", 2, "2026-01-01T00:00:00.000Z",
                               "2026-01-29T00:00:00.000Z") == "2026-01-29T00:00:00.000Z"


# -- two tables racing one card ---------------------------------------------------------------
OP = st.tuples(st.sampled_from(["reserve", "settle"]), st.integers(0, 2),
               st.integers(1, 4), st.integers(0, 700), st.integers(-100, 100))


@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=st.lists(OP, max_size=30), limit=st.integers(0, 2000))
def test_interleaved_tables_never_exceed_the_limit(new_url: Callable[[], str],
                                                   ops: list[tuple[str, int, int, int, int]],
                                                   limit: int) -> None:
    """UTH 13.3 across tables: reservations and settlements of one card from three tables, each
    on its own database connection, in any interleaving: what the card has lost in the period
    plus what is reserved never exceeds its Loss Limit, and no round loses more than its
    grant (the table settles to it, 11.17.1)."""
    url = new_url()
    setup = opened(url)
    cards.add_card(setup.db, "card-0001", limit=limit, kind="day", length=1, start=None,
                   operator="alice", allowed=OPS, reason="property test")
    tables = ["T1", "T2", "T3"]
    ledgers = {t: Ledger.open(url) for t in tables}
    outboxes = {t: Outbox(ledgers[t], t) for t in tables}
    granted: dict[tuple[str, int], int] = {}
    held: dict[tuple[str, int], int] = {}
    settled_: set[tuple[str, int]] = set()
    lost = 0
    try:
        for n, (op, ti, round_, amount, pct) in enumerate(ops):
            table = tables[ti]
            key = (table, round_)
            if op == "reserve":
                ans = cards.answer(ledgers[table].db, reserve(table, round_, "card-0001",
                                                               amount, n + 1))
                assert ans is not None
                if ans["granted"]:
                    granted[key] = ans["granted"]
                    held[key] = max(held.get(key, 0), ans["granted"])  # the larger stays held
            elif key in granted and key not in settled_:
                net = granted[key] * pct // 100  # -100%..+100% of the grant
                outboxes[table].send("card_settled", settled(round_, "card-0001",
                                                             granted[key], net))
                settled_.add(key)
                lost -= net
            view = cards.show(setup.db, "card-0001")
            open_ = sum(v for k, v in held.items() if k not in settled_)
            assert view["reserved"] == open_
            assert max(view["net_loss"], 0) + view["reserved"] <= limit
            assert view["net_loss"] == lost
    finally:
        for ledger in (setup, *ledgers.values()):
            ledger.close()


def test_threads_racing_one_card_never_exceed_the_limit(ledger_url: str) -> None:
    """Eight tables at once, each on its own connection, reserve against one card: the row
    lock makes them take turns, so exactly as many fit as the limit allows."""
    ledger = opened(ledger_url, tuple(f"T{i}" for i in range(8)))
    cards.add_card(ledger.db, "card-0001", limit=10000, kind="day", length=1, start=None,
                   operator="alice", allowed=OPS, reason="race")
    grants: list[int] = []
    errors: list[BaseException] = []
    start = threading.Barrier(8)

    def table(i: int) -> None:
        db = open_database(ledger_url)
        try:
            start.wait()
            for r in range(1, 6):
                ans = cards.answer(db, reserve(f"T{i}", r, "card-0001", 700, r))
                assert ans is not None
                grants.append(ans["granted"])
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)
        finally:
            db.close()

    threads = [threading.Thread(target=table, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert sum(grants) == 14 * 700  # 40 asked for $7: 14 fit in $100, none beyond
    assert cards.show(ledger.db, "card-0001")["reserved"] == 14 * 700


def test_the_docs_agree_with_the_code() -> None:
    """docs/asyncapi.yaml and docs/mqtt.md name the patron topics and every outbox type."""
    yaml = pytest.importorskip("yaml", reason="PyYAML not installed (dev extra)")
    docs = Path(__file__).resolve().parents[1] / "docs"
    doc = yaml.safe_load((docs / "asyncapi.yaml").read_text())
    addresses = {c["address"].replace("{table}", "T1") for c in doc["channels"].values()}
    assert {patron.request_topic("T1"), patron.answer_topic("T1")} <= addresses
    outbox = doc["components"]["schemas"]["Outbox"]["properties"]["type"]["enum"]
    assert tuple(outbox) == contract.OUTBOX_TYPES
    request = doc["components"]["schemas"]["CardRequest"]["properties"]["type"]["enum"]
    assert tuple(request) == patron.REQUEST_TYPES
    mqtt = (docs / "mqtt.md").read_text()
    for name in (*contract.CARD_TYPES, "tablectl/v1/table/{table}/patron",
                 "tablectl/v1/ho/table/{table}/patron"):
        assert f"`{name}`" in mqtt


def test_an_older_ledger_gains_the_card_tables(ledger_url: str) -> None:
    """A ledger made before Player Cards (no card tables) gets them when it is opened."""
    ledger = opened(ledger_url)
    with ledger.db.transaction():
        for name in ("card_log", "card_rounds", "card_reservations", "cards"):
            ledger.db.execute(f"DROP TABLE {name}")
    ledger.close()
    ledger = opened(ledger_url)
    try:
        cards.add_card(ledger.db, "card-0001", limit=500, kind="day", length=1, start=None,
                       operator="alice", allowed=OPS, reason="after the upgrade")
        ans = cards.answer(ledger.db, reserve("T1", 1, "card-0001", 500))
        assert ans is not None and ans["granted"] == 500
    finally:
        ledger.close()
