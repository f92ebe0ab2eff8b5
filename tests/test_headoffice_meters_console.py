"""Each shift's meters per table at head office: the console's "Shift meters" page and
`tablectl-headoffice meters`, on a real ledger filled through the real path (`Ledger.apply_batch`
with `shift_meters` messages the table's own code builds: controller/meters.py `Meters.record`
and controller/daemon/accounting.py `close_effects`). Both show exactly those figures in dollars;
a viewer may read the page."""

from __future__ import annotations

import json
import re
from html import unescape
from pathlib import Path
from typing import Any

import pytest

from controller.daemon.accounting import close_effects
from controller.meters import CLOSE_SHIFT, SHIFT_METERS, Meters
from headoffice import cli
from headoffice.console.views import SHIFTS_PER_TABLE
from headoffice.ledger import Incoming, Ledger
from shared.link import contract
from tests.test_headoffice_console_support import Browser, Office, make_office

TABLE = "T2"  # enrolled in the console's test office, and no other message from it


def uth(box_spots: dict[int, dict[str, tuple[int, int]]], jackpot: dict[str, Any],
        house_net: int) -> dict[str, Any]:
    """A UTH round's summary as the round machine records it: per box, each spot's
    (placed, won)."""
    return {"game": "uth", "house_net": house_net, "jackpot": jackpot, "boxes": [
        {"box": b, "net": 0, "spots": [{"spot": k, "placed": p, "won": w}
                                       for k, (p, w) in spots.items()]}
        for b, spots in box_spots.items()]}


def table_shift_closes() -> list[dict[str, Any]]:
    """Two shifts closed at a UTH table, each the `shift_meters` payload its daemon journals.

    Shift 1: round 1 (box 1: ante $10/$10, blind $10/$0, play $40/$40, a $5 jackpot wager;
    the house lost $45) and round 2 voided. Shift 2: round 3 (box 1: ante $25, blind $25,
    play $50, all lost; box 2: ante $10 paid $20; $5 jackpot wagers on both, box 2 awarded
    $150; the house won $80)."""
    meters = Meters()
    round1 = uth({1: {"ante": (1000, 1000), "blind": (1000, 0), "play": (4000, 4000)}},
                 {"wager": 500, "boxes": [1], "payouts": []}, -4500)
    round3 = uth({1: {"ante": (2500, 0), "blind": (2500, 0), "play": (5000, 0)},
                  2: {"ante": (1000, 2000)}},
                 {"wager": 500, "boxes": [1, 2], "payouts": [{"box": 2, "amount": 15000}]},
                 8000)
    meters.record("2026-03-01T08:10:00Z", "dealer.result", [(1, "completed", round1)])
    meters.record("2026-03-01T08:20:00Z", "dealer.void", [(2, "voided", {"game": "uth"})])
    out = []
    for utc, rounds in (("2026-03-01T16:00:00Z", []),
                        ("2026-03-02T00:00:00Z", [(3, "completed", round3)])):
        if rounds:  # shift 2 opens with its first round's record
            meters.record("2026-03-01T17:00:00Z", "dealer.result", rounds)
        closing = meters.record(utc, CLOSE_SHIFT, [])
        assert closing is not None
        [effect] = [e for e in close_effects(TABLE, closing) if e.kind == "outbox"]
        assert effect.data["type"] == SHIFT_METERS
        out.append(effect.data["payload"])
    return out


def ledger_shift_closes(led: Ledger) -> None:
    """The table's two shift closes, received as a worker applies them."""
    bodies = [contract.outbox_message(TABLE, n, n * 100, SHIFT_METERS, p["closed_utc"], p)
              for n, p in enumerate(table_shift_closes(), start=1)]
    result = led.apply_batch([Incoming("outbox", TABLE, b) for b in bodies])
    assert result.acks == {TABLE: 2} and not result.refused


# Each closed shift as both the page and the command must show it, newest first:
# played, voided, wagers, payouts, commission, jackpot in, jackpot paid, house win, by type.
SHIFT2 = ["2", "1", "0", "$110.00", "$20.00", "$0.00", "$10.00", "$150.00", "$80.00",
          "ante $35.00 / $20.00; blind $25.00 / $0.00; play $50.00 / $0.00"]
SHIFT1 = ["1", "1", "1", "$60.00", "$50.00", "$0.00", "$5.00", "$0.00", "-$45.00",
          "ante $10.00 / $10.00; blind $10.00 / $0.00; play $40.00 / $40.00"]


@pytest.fixture
def office(tmp_path: Path) -> Office:
    office = make_office(tmp_path / "office")
    led = office.ledger()
    try:
        ledger_shift_closes(led)
    finally:
        led.close()
    return office


def cells(html: str, row_id: str) -> list[str]:
    m = re.search(rf'<tr id="{re.escape(row_id)}"[^>]*>(.*?)</tr>', html, re.S)
    assert m, f"no row {row_id}"
    return [re.sub(r"<[^>]+>", "", c).strip()
            for c in re.findall(r"<td[^>]*>(.*?)</td>", m[1], re.S)]


@pytest.mark.parametrize("who", ["alice", "victor"])  # an approver and a viewer
def test_the_page_shows_each_tables_closed_shifts(office: Office, who: str) -> None:
    b = Browser(office)
    try:
        assert b.client.get("/meters").status_code == 303  # no session: to the login form
        assert b.login(who).status_code == 303
        page = b.client.get("/meters")
        assert page.status_code == 200
        html = page.text
        assert '<a href="/meters" class="here">Shift meters</a>' in html
        # A row per shift message (its seq: a shift number can recur on a replaced journal).
        assert re.findall(rf'id="shift-{TABLE}-(\d+)"', html) == ["2", "1"]  # newest first
        row2, row1 = cells(html, f"shift-{TABLE}-2"), cells(html, f"shift-{TABLE}-1")
        # Times in the casino's zone (the test office's is UTC).
        assert row2[:3] == ["2", "2026-03-01 17:00:00 UTC", "2026-03-02 00:00:00 UTC"]
        assert [row2[0], *row2[3:]] == SHIFT2
        # Shift 1 opened with its first record, round 1.
        assert row1[:3] == ["1", "2026-03-01 08:10:00 UTC", "2026-03-01 16:00:00 UTC"]
        assert [row1[0], *row1[3:]] == SHIFT1
        t1 = html.split('id="meters-T1"')[1].split("</table>")[0]
        assert "No shift closed." in t1 and 'id="shift-T1-' not in t1
    finally:
        b.close()


def test_the_page_lists_at_most_its_bound_per_table(office: Office) -> None:
    b = Browser(office)
    try:
        payload = table_shift_closes()[0]
        extra = [contract.outbox_message(TABLE, n, n * 100, SHIFT_METERS,
                                         f"2026-04-01T00:{n:02d}:00Z", {**payload, "shift": n})
                 for n in range(3, SHIFTS_PER_TABLE + 6)]
        assert not b.ledger.apply_batch([Incoming("outbox", TABLE, m) for m in extra]).refused
        b.login("victor")
        shown = [int(n) for n in re.findall(rf'id="shift-{TABLE}-(\d+)"',
                                            b.client.get("/meters").text)]
        top = SHIFTS_PER_TABLE + 5
        assert shown == list(range(top, top - SHIFTS_PER_TABLE, -1))
    finally:
        b.close()


def test_the_command_shows_the_same_figures(office: Office,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["meters", "--db", str(office.db), "--table", TABLE]) == 0
    out = capsys.readouterr().out
    blocks = out.split("table T2 shift ")[1:]
    assert [b.split(" ", 1)[0] for b in blocks] == ["2", "1"]
    for block, want in zip(blocks, (SHIFT2, SHIFT1), strict=True):
        rows = dict(re.findall(r"^  (\S+(?: \S+)*?)\s{2,}(.+)$", block, re.M))
        assert [rows["rounds played"], rows["rounds voided"], rows["wagers"], rows["payouts"],
                rows["commission"], rows["jackpot in"], rows["jackpot paid"],
                rows["house win"], rows["by type"]] == want[1:]
    # --db alone: no casino zone configured, times in UTC (for a person, as the console shows them)
    assert "(message 2): 2026-03-01 17:00:00 UTC .. 2026-03-02 00:00:00 UTC" in blocks[0]

    assert cli.main(["meters", "--db", str(office.db), "--json"]) == 0
    shifts = json.loads(capsys.readouterr().out)
    assert [(s["table"], s["shift"]) for s in shifts] == [(TABLE, 2), (TABLE, 1)]
    assert shifts[0]["figures"]["wagers"] == {"ante": 3500, "blind": 2500, "play": 5000}
    assert shifts[1]["figures"]["house_win"] == -4500  # cents in JSON, as the table sent

    assert cli.main(["meters", "--db", str(office.db), "--table", "T1"]) == 0
    assert capsys.readouterr().out.strip() == "no shift closed"
    assert cli.main(["meters", "--db", str(office.db), "--limit", "0"]) == 2
    assert "--limit must be 1..500" in capsys.readouterr().err
    assert cli.main(["meters", "--db", str(office.db), "--table", "T1\n; x"]) == 2
    assert "is no table id" in capsys.readouterr().err


def test_an_incomplete_shift_is_shown_as_such(office: Office,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    """A shift closed by a table whose meters were replayed from a pruned journal (its close
    says so: `incomplete`) is marked on the page and by the command, never shown as whole."""
    lacking = {"missing_through": 400, "shift": True, "first_round_counted": 41}
    payload = {**table_shift_closes()[1], "shift": 3, "incomplete": lacking}
    b = Browser(office)
    try:
        body = contract.outbox_message(TABLE, 3, 300, SHIFT_METERS, "2026-03-03T00:00:00Z",
                                       payload)
        assert not b.ledger.apply_batch([Incoming("outbox", TABLE, body)]).refused
        b.login("victor")
        html = b.client.get("/meters").text
        assert f'<tr id="shift-{TABLE}-3" class="incomplete">' in html
        said = [unescape(c) for c in cells(html, f"shift-{TABLE}-3-incomplete")]
        assert said == ["INCOMPLETE: rounds before 41 not counted (the table's journal records"
                        " 1..400 were pruned before its meters were replayed)"]
        assert f'id="shift-{TABLE}-2-incomplete"' not in html  # the whole shifts: no mark
    finally:
        b.close()
    assert cli.main(["meters", "--db", str(office.db), "--table", TABLE, "--limit", "1"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1] == ("  INCOMPLETE: rounds before 41 not counted (the table's journal records"
                      " 1..400 were pruned before its meters were replayed)")
