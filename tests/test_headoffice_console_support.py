"""A head office for the console's tests: a real SQLite ledger filled through the ledger's own
code path (`Ledger.apply_batch`, as a worker applies the tables' messages), its
headoffice.toml and a headoffice-console.toml with two approvers (alice, bob) and a viewer.
The Royal Flushes pay $50,000.00 (UTH 15.2.9.1), above the default dual-control threshold of
$10,000.00: each needs alice and bob.

What is in it, by construction (the figures the pages must show):
- pool p1, seed $5,000.00, increment 25 %, hidden 5 %;
- table T1: FLUSH_ROUNDS rounds of one $1.00 jackpot wager each ending in a Flush, each paid
  at once (fixed awards, paid by the house); then two rounds with a Royal Flush, held for
  verification (#1, #2); then a hit on a round with no jackpot wager: held, with an alarm (#3);
- T1 said at its last connect that its outbox went up to BIRTH_TOP; one message beyond what
  was ledgered arrived early and is parked;
- table T2 enrolled, never seen.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from starlette.testclient import TestClient

from headoffice.config import HeadOfficeConfig, load_config
from headoffice.console.accounts import ConsoleConfig, hash_password, load_console_config
from headoffice.console.app import Console
from headoffice.ledger import Incoming, Ledger
from shared.link import contract

P = "p1"
ROYAL = ["Ah", "Kh", "Qh", "Jh", "Th"]
FLUSH = ["2h", "5h", "9h", "Jh", "Kh"]
FLUSH_ROUNDS = 27  # more than the 25 hits a pool's page lists
PASSWORDS = {"alice": "correct horse battery", "bob": "a second approver's phrase",
             "victor": "viewer's own phrase"}
WAGER = 100  # cents per jackpot wager


def body(table: str, seq: int, type_: str, payload: dict[str, Any]) -> dict[str, Any]:
    return contract.outbox_message(table, seq, seq * 10, type_, "2026-01-01T00:00:00.000Z",
                                   payload)


def inc(round_: int) -> tuple[str, dict[str, Any]]:
    return "jackpot_increment", {"round": round_, "pool_id": P, "boxes": [1], "wager": WAGER,
                                 "wagers": 1, "amount": WAGER}


def hit(round_: int, cards: list[str], category: str) -> tuple[str, dict[str, Any]]:
    return "jackpot_hit", {"round": round_, "pool_id": P, "flop": cards[2:], "hits": [1],
                           "entries": [{"box": 1, "cards": cards, "category": category,
                                        "wager": WAGER, "folded": False}]}


def t1_outbox() -> list[dict[str, Any]]:
    out: list[tuple[str, dict[str, Any]]] = []
    for n in range(1, FLUSH_ROUNDS + 1):
        out += [inc(n), hit(n, FLUSH, "flush"), ("round_result", {"round": n,
                                                                  "status": "completed"})]
    royal1, royal2, forged = FLUSH_ROUNDS + 1, FLUSH_ROUNDS + 2, FLUSH_ROUNDS + 3
    out += [inc(royal1), hit(royal1, ROYAL, "royal_flush"),
            inc(royal2), hit(royal2, ROYAL, "royal_flush"),
            hit(forged, ROYAL, "royal_flush")]  # no wager ledgered for this round
    return [body("T1", i, t, p) for i, (t, p) in enumerate(out, start=1)]


LEDGERED = len(t1_outbox())  # T1's last_seq
PARKED_SEQ = LEDGERED + 2  # arrived before LEDGERED + 1: parked
BIRTH_TOP = LEDGERED + 1  # T1's outbox at its last connect: acked_upto + pending
INCREMENTS = FLUSH_ROUNDS + 2


@dataclass
class Office:
    root: Path
    db: Path
    ho_path: Path
    console_path: Path
    ho: HeadOfficeConfig
    console: ConsoleConfig

    def ledger(self) -> Ledger:
        return Ledger.open(str(self.db))


def ho_toml(db: Path) -> str:
    return f"""[database]
url = "{db}"
[service]
operators = ["alice", "bob"]
[[pools]]
id = "{P}"
seed = 500000
increment_bp = 2500
hidden_bp = 500
[[tables]]
id = "T1"
pool = "{P}"
[[tables]]
id = "T2"
pool = "{P}"
"""


def console_toml(port: int | None = None) -> str:
    listen = f'listen = "127.0.0.1:{port}"\n' if port else ""
    return f"""[console]
{listen}[[users]]
name = "alice"
role = "approver"
password_hash = "{hash_password(PASSWORDS['alice'])}"
[[users]]
name = "bob"
role = "approver"
password_hash = "{hash_password(PASSWORDS['bob'])}"
[[users]]
name = "victor"
role = "viewer"
password_hash = "{hash_password(PASSWORDS['victor'])}"
"""


def make_office(root: Path, port: int | None = None) -> Office:
    root.mkdir(parents=True, exist_ok=True)
    db = root / "ledger.db"
    ho_path = root / "headoffice.toml"
    ho_path.write_text(ho_toml(db))
    console_path = root / "headoffice-console.toml"
    console_path.write_text(console_toml(port))
    ho = load_config(ho_path)
    led = Ledger.open(str(db))
    try:
        led.ensure_pool(P, ho.pools[P])
        led.enrol(ho.tables)
        led.apply_batch([Incoming("birth", "T1", {
            "v": 1, "table": "T1", "pool_id": P, "pending_hits": [],
            "outbox": {"acked_upto": 0, "pending": BIRTH_TOP}, "journal_seq": 0})])
        led.apply_batch([Incoming("outbox", "T1", b) for b in t1_outbox()])
        early = body("T1", PARKED_SEQ, "round_result", {"round": FLUSH_ROUNDS + 3,
                                                          "status": "completed"})
        led.apply_batch([Incoming("outbox", "T1", early)])
    finally:
        led.close()
    return Office(root, db, ho_path, console_path, ho,
                  load_console_config(console_path, ho.operators))


def decisions(db: Path) -> dict[str, Any]:
    """Everything a decision on a held hit writes (the held hit, the hits, the pool, the
    alarms, the decisions and their signatures), less the clock's readings."""
    led = Ledger.open(str(db))
    try:
        held = [{k: v for k, v in h.items() if k not in ("utc", "decided_utc")}
                for h in led.held_hits()]
        hits = led.db.execute("SELECT pool_id, hit_no, table_id, round, seq, pool_before,"
                              " pool_after, paid, seed_from_house, award FROM hits"
                              " ORDER BY pool_id, hit_no")
        pool = led.pool(P)
        assert pool is not None
        alarms = [a["text"] for a in led.db.execute("SELECT text FROM alarms"
                                                    " ORDER BY alarm_no")]
        signed = [{k: v for k, v in d.items() if not k.endswith("_utc")}
                  for d in led.decisions()]
        return {"held": held, "hits": hits, "pool": pool.row(), "alarms": alarms,
                "decisions": signed}
    finally:
        led.close()


BASE = "http://127.0.0.1"  # an allowed host: the console refuses any other Host header


class Browser:
    """One operator's browser on the console (cookies kept, redirects not followed)."""

    def __init__(self, office: Office) -> None:
        self.ledger = office.ledger()
        self.console = Console(office.ho, office.console, self.ledger)
        self.client = TestClient(self.console.app(), base_url=BASE, follow_redirects=False)

    def close(self) -> None:
        self.client.close()
        self.ledger.close()

    def login(self, name: str, password: str | None = None) -> Any:
        page = self.client.get("/login")
        return self.client.post("/login", data={
            "csrf": csrf_of(page.text), "name": name,
            "password": PASSWORDS[name] if password is None else password})

    def csrf(self) -> str:
        return csrf_of(self.client.get("/hits").text)


def csrf_of(html: str) -> str:
    m = re.search(r'name="csrf" value="([^"]+)"', html)
    assert m, "no CSRF field on the page"
    return m[1]
