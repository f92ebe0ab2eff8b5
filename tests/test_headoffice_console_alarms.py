"""The console's alarms, audit trail and exports (headoffice/console/alarms_views.py), and the
same from a terminal (`tablectl-headoffice alarms|audit`), on the test office of
test_headoffice_console_support (three held hits: three active alarms), in the casino's time
zone (Australia/Sydney here)."""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from headoffice import cli
from headoffice.config import load_config
from tests.test_headoffice_console_support import Browser, Office, make_office

ZONE = "Australia/Sydney"
PAGES = ("/", "/pools", "/tables", "/hits", "/alarms", "/params", "/meters", "/audit")


@pytest.fixture
def office(tmp_path: Path) -> Office:
    office = make_office(tmp_path / "office")
    text = office.ho_path.read_text().replace("[service]\n",
                                              f'[service]\ntime_zone = "{ZONE}"\n')
    office.ho_path.write_text(text)
    office.ho = load_config(office.ho_path)
    return office


@pytest.fixture
def browser(office: Office) -> Iterator[Browser]:
    b = Browser(office)
    yield b
    b.close()


def count(html: str) -> int:
    m = re.search(r'id="alarm-count"[^>]*>(\d+)<', html)
    assert m, "no alarm count in the menu bar"
    return int(m[1])


def rows(html: str, cls: str) -> list[list[str]]:
    """The cells' text of the rows of the table with this class."""
    m = re.search(rf'<table class="{cls}">(.*?)</table>', html, re.S)
    assert m, f"no table {cls}"
    body = m[1].split("<tbody>")[1]
    return [[re.sub(r"<[^>]+>", "", c).strip().replace("&#39;", "'").replace("&amp;", "&")
             for c in re.findall(r"<td[^>]*>(.*?)</td>", r, re.S)]
            for r in re.findall(r"<tr[^>]*>(.*?)</tr>", body, re.S)]


def alarm_row(html: str, no: int) -> str:
    m = re.search(rf'<tr id="(?:alarm|history)-{no}"[^>]*>(.*?)</tr>', html, re.S)
    assert m, f"no alarm #{no} on the page"
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", m[1]))


def post(b: Browser, path: str, form: dict[str, str]) -> object:
    page = b.client.get("/alarms").text
    token = re.search(r'name="csrf" value="([^"]+)"', page)
    assert token
    return b.client.post(path, data={"csrf": token[1], **form})


def test_the_menu_bar_counts_active_alarms_and_a_decision_clears_its_own(
        browser: Browser, office: Office) -> None:
    browser.login("alice")
    for page in PAGES:  # every page, from its menu bar
        assert count(browser.client.get(page).text) == 3, page
    alarms = browser.client.get("/alarms").text
    assert "jackpot hit T1 round 29 HELD for approval" in alarm_row(alarms, 2)
    assert " active " in alarm_row(alarms, 2)
    r = browser.client.post("/hits/2/approve", data={"csrf": browser.csrf(),
                                                     "reason": "seen on camera"})
    assert r.status_code == 303
    # A $50,000 Royal needs two approvers: after the first the hit still waits, and its alarm
    # stays active, now saying so.
    alarms = browser.client.get("/alarms").text
    assert count(alarms) == 3 and " active " in alarm_row(alarms, 2)
    assert "first approval by alice" in alarm_row(alarms, 2)
    second = Browser(office)
    try:
        second.login("bob")
        r = second.client.post("/hits/2/approve", data={"csrf": second.csrf(),
                                                        "reason": "count agrees"})
        assert r.status_code == 303
    finally:
        second.close()
    alarms = browser.client.get("/alarms").text
    assert count(alarms) == 2
    assert " active " not in alarm_row(alarms, 2)  # cleared, in the history
    assert browser.client.get("/live.json").json()["values"]["alarms:active"] == "2"


def test_acknowledgement_by_any_operator_once_with_a_note(browser: Browser,
                                                          office: Office) -> None:
    browser.login("victor")  # a viewer may acknowledge: it decides nothing about money
    r = browser.client.post("/alarms/1/ack", data={"note": "no token"})
    assert r.status_code == 403
    r = post(browser, "/alarms/1/ack", {"note": "  "})
    assert r.status_code == 409 and "needs a note" in r.text  # type: ignore[attr-defined]
    r = post(browser, "/alarms/1/ack", {"note": "floor supervisor called"})
    assert r.status_code == 303  # type: ignore[attr-defined]
    page = browser.client.get("/alarms").text
    row = alarm_row(page, 1)
    assert "victor" in row and "floor supervisor called" in row
    # Acknowledged but still waiting for a person: a condition stays active.
    assert " active " in row and count(page) == 3
    r = post(browser, "/alarms/1/ack", {"note": "again"})
    assert r.status_code == 409  # type: ignore[attr-defined]
    assert "already acknowledged by victor" in r.text  # type: ignore[attr-defined]
    led = office.ledger()
    try:
        (a,) = [x for x in led.alarms(active_only=False) if x["alarm_no"] == 1]
        assert (a["acked_by"], a["ack_note"]) == ("victor", "floor supervisor called")
    finally:
        led.close()


def test_the_trail_shows_logins_and_decisions_filters_and_exports_the_same_rows(
        office: Office) -> None:
    tz = ZoneInfo(ZONE)
    b = Browser(office)
    try:
        assert b.login("alice", "wrong password").status_code == 401
        assert b.login("alice").status_code == 303
        r = b.client.post("/hits/1/refuse", data={"csrf": b.csrf(), "reason": "forged"})
        assert r.status_code == 303
        post(b, "/alarms/3/ack", {"note": "checked the wager"})
        page = b.client.get("/audit").text
        entries = rows(page, "audit")
        actions = [(e[1], e[2]) for e in entries]
        assert ("login_failed", "alice") in actions and ("login", "alice") in actions
        assert ("hit_refused", "alice") in actions and ("alarm_ack", "alice") in actions
        assert ("param_create", "config") in actions
        # Newest first; every time in the casino's zone, as stored in UTC.
        led = office.ledger()
        try:
            stored = led.db.execute("SELECT utc, action FROM audit ORDER BY audit_no")
        finally:
            led.close()
        assert [s["action"] for s in stored] == ["login_failed", "login", "alarm_ack"]
        failed = next(e for e in entries if e[1] == "login_failed")
        when = datetime.fromisoformat(stored[0]["utc"].replace("Z", "+00:00")).astimezone(tz)
        assert failed[0] == when.strftime("%Y-%m-%d %H:%M:%S %Z")
        assert failed[0].endswith(("AEDT", "AEST"))
        # Filters: a person, a table, dates (in the casino's zone).
        only = rows(b.client.get("/audit?person=config").text, "audit")
        assert [e[2] for e in only] == ["config"]
        t1 = rows(b.client.get("/audit?table=T1").text, "audit")
        assert sorted(e[1] for e in t1) == ["alarm_ack", "hit_refused"]
        today = when.strftime("%Y-%m-%d")
        day = rows(b.client.get(f"/audit?since={today}&until={today}&person=alice").text,
                   "audit")
        assert len(day) == 4
        assert rows(b.client.get("/audit?since=2099-01-01").text, "audit") == [
            ["No entry."]]
        bad = b.client.get("/audit?since=yesterday")
        assert bad.status_code == 400 and "since: a date YYYY-MM-DD" in bad.text
        # The export link carries the page's filters and holds the same rows.
        filtered = b.client.get("/audit?table=T1")
        link = re.search(r'id="export-audit" href="([^"]+)"', filtered.text)
        assert link and link[1] == "/export/audit.csv?table=T1"
        exported = b.client.get(link[1])
        assert exported.headers["content-type"].startswith("text/csv")
        table = list(csv.reader(io.StringIO(exported.text)))
        assert table[0] == ["utc", "local_time", "action", "person", "table_id", "pool_id",
                            "subject", "detail"]
        assert [r[1:] for r in table[1:]] == [
            [e[0], e[1], e[2], e[3], e[4], e[5], e[6]] for e in rows(filtered.text, "audit")]
        everything = list(csv.reader(io.StringIO(b.client.get("/export/audit.csv").text)))
        assert [r[2:4] for r in everything[1:]] == [[e[1], e[2]] for e in entries]
    finally:
        b.close()


def test_a_failed_logins_name_cannot_become_a_formula(office: Office) -> None:
    b = Browser(office)
    try:
        assert b.login("alice", "x").status_code == 401
        r = b.client.post("/login", data={"csrf": re.search(
            r'name="csrf" value="([^"]+)"', b.client.get("/login").text)[1],  # type: ignore[index]
            "name": "=HYPERLINK(\"x\")", "password": "y"})
        assert r.status_code == 401
        b.login("victor")
        table = list(csv.reader(io.StringIO(b.client.get("/export/audit.csv").text)))
        names = [r[3] for r in table[1:] if r[2] == "login_failed"]
        assert names == ["'=HYPERLINK(\"x\")", "alice"]
    finally:
        b.close()


def test_the_exports_of_hits_parameters_and_meters(browser: Browser, office: Office) -> None:
    browser.login("victor")
    hits = list(csv.reader(io.StringIO(browser.client.get("/export/hits.csv").text)))
    assert hits[0][:3] == ["pool_id", "hit_no", "table_id"] and "paid_cents" in hits[0]
    led = office.ledger()
    try:
        n_hits = led.db.one("SELECT COUNT(*) AS n FROM hits")["n"]  # type: ignore[index]
        paid = {int(r["hit_no"]): int(r["paid"]) for r in led.db.execute(
            "SELECT hit_no, paid FROM hits")}
    finally:
        led.close()
    assert len(hits) - 1 == n_hits
    col = hits[0].index("paid_cents")
    assert {int(r[1]): int(r[col]) for r in hits[1:]} == paid  # integer cents
    params = list(csv.reader(io.StringIO(browser.client.get("/export/params.csv").text)))
    assert params[0][:4] == ["pool_id", "entry_no", "utc", "local_time"]
    assert [r[5] for r in params[1:]] == ["create"] and params[1][3].endswith(("AEDT", "AEST"))
    meters = browser.client.get("/export/meters.csv")
    assert meters.status_code == 200 and meters.text.startswith("table_id,shift,seq,")
    assert browser.client.get("/export/nothing.csv").status_code == 404


def test_the_cli_lists_acknowledges_as_the_os_login_and_exports_the_trail(
        office: Office, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    cfg = ["--config", str(office.ho_path)]
    assert cli.main(["alarms", *cfg]) == 0
    out = capsys.readouterr().out
    assert out.count("ALARM #") == 3 and "held hit waiting" in out and "not acknowledged" in out
    monkeypatch.setattr(cli, "login_name", lambda: "carol")  # who the OS says runs it
    assert cli.main(["alarms", "ack", "2", "--note", "pit boss told", *cfg]) == 0
    out = capsys.readouterr().out
    assert "acknowledged by carol" in out and "pit boss told" in out
    assert cli.main(["alarms", "ack", "2", "--note", "again", *cfg]) == 1
    assert "already acknowledged by carol" in capsys.readouterr().err
    assert cli.main(["alarms", "ack", "3", "--note", " ", *cfg]) == 1
    assert "needs a note" in capsys.readouterr().err
    assert cli.main(["audit", "--person", "carol", "--csv", *cfg]) == 0
    table = list(csv.reader(io.StringIO(capsys.readouterr().out)))
    assert [(r[2], r[3], r[6]) for r in table[1:]] == [("alarm_ack", "carol", "alarm #2")]
    assert table[1][1].endswith(("AEDT", "AEST"))
    b = Browser(office)  # the console's export of the same filter: the same file
    try:
        b.login("victor")
        assert list(csv.reader(io.StringIO(
            b.client.get("/export/audit.csv?person=carol").text))) == table
    finally:
        b.close()
    assert cli.main(["audit", "--since", "tomorrow", *cfg]) == 2
    assert "since: a date YYYY-MM-DD" in capsys.readouterr().err
    assert cli.main(["alarms", "--all", *cfg]) == 0
    assert capsys.readouterr().out.count("ALARM #") == 3


def test_a_time_zone_that_is_not_one_is_refused(office: Office) -> None:
    from headoffice.config import HeadOfficeConfigError

    office.ho_path.write_text(office.ho_path.read_text().replace(ZONE, "Sydney"))
    with pytest.raises(HeadOfficeConfigError, match=r"service\.time_zone: time zone 'Sydney'"):
        load_config(office.ho_path)


def test_every_page_reads_in_the_casinos_zone_with_hands_and_messages_in_words(
        office: Office) -> None:
    """Issue 26, 2 and 5: no column says UTC over a time shown in the casino's zone, and no
    hand category or message type is shown as an identifier (`royal_flush`, `jackpot_hit`):
    a paid Royal on the pools page, the hits page's decided rows, the tables' last message,
    the hits export's payouts."""
    from controller.games.uth.evaluator import Category

    raw = [c.label for c in Category if "_" in c.label] + [
        "jackpot_hit", "jackpot_increment", "round_result", "shift_meters", "claimed"]
    for name, reason in (("alice", "camera 4"), ("bob", "count agrees")):
        b = Browser(office)
        try:
            b.login(name)
            assert b.client.post("/hits/1/approve", data={
                "csrf": b.csrf(), "reason": reason}).status_code == 303
        finally:
            b.close()
    b = Browser(office)
    try:
        b.login("victor")
        for page in (*PAGES, "/hits/1"):
            html = b.client.get(page).text
            heads = re.findall(r"<th[^>]*>([^<]*)</th>", html)
            assert not [h for h in heads if "UTC" in h], (page, heads)
            text = re.sub(r"<[^>]+>", " ", html)
            assert not [w for w in raw if w in text], (page, [w for w in raw if w in text])
        pools = b.client.get("/pools").text
        assert re.search(r"<th>when \(Australia/Sydney\)</th>", pools)
        paid = re.search(r"<td>box 1 Royal Flush \$50,000\.00</td>", pools)
        assert paid and "box 1 Flush $100.00" in pools
        decided = rows(b.client.get("/hits").text, "decided")
        (royal,) = [r for r in decided if r[0] == "1"]
        assert royal[4].endswith(("AEDT", "AEST")) and royal[7].endswith(("AEDT", "AEST"))
        assert "jackpot hit (held)" in b.client.get("/tables").text
        hits = list(csv.DictReader(io.StringIO(b.client.get("/export/hits.csv").text)))
        assert "box 1 Royal Flush 5000000" in [h["payouts"] for h in hits]
    finally:
        b.close()


def test_the_terminal_shows_times_in_the_casinos_zone_and_hands_in_words(
        office: Office, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """What an operator reads in a terminal before deciding (`hit show`, `hits`, `report`,
    `decisions`, `params-log`) is in the casino's zone, as the console shows it; before, every
    time was the stored UTC string ("2026-11-27T23:57:26.023Z") and awards `royal_flush`."""
    cfg = ["--config", str(office.ho_path)]
    monkeypatch.setattr(cli, "login_name", lambda: "alice")
    assert cli.main(["hit", "approve", "1", "--reason", "camera 4", *cfg]) == 0
    capsys.readouterr()
    iso = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d")
    for command in (["hit", "show", "1"], ["hits"], ["report"], ["decisions"], ["params-log"]):
        assert cli.main([*command, *cfg]) == 0, command
        out = capsys.readouterr().out
        assert not iso.search(out), (command, iso.search(out))
        assert "_flush" not in out, command
        assert re.search(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d AE[DS]T", out), command
    assert cli.main(["hit", "show", "1", *cfg]) == 0
    out = capsys.readouterr().out
    assert re.search(r"first approval: alice at \S+ \S+ AE[DS]T \(\$50,000\.00\): camera 4",
                     out) and "box 1: Royal Flush $50,000.00" in out


def test_the_tables_page_shows_each_tables_version_and_service_as_it_said(
        office: Office, browser: Browser) -> None:
    """Issue 26, 5: the tables page shows each table's software version and whether it is in
    service, from its birth and its statuses since; out of service is an alarm too."""
    from headoffice.ledger import Incoming
    from shared.link import contract
    from tests.test_headoffice_console import cells

    browser.login("victor")
    assert cells(browser.client.get("/tables").text, "table-T2")[-2:] == [
        "not reported", "not reported"]  # never connected
    led = office.ledger()
    try:
        birth = contract.parse_birth(contract.dumps(contract.birth_message(
            "T2", "2026-01-01T00:00:00Z", {"pool_id": "p1", "software": "1.2.3",
                                           "in_service": False,
                                           "out_of_service": "journal write failed"})), "T2")
        led.apply_batch([Incoming("birth", "T2", birth)])
    finally:
        led.close()
    page = browser.client.get("/tables").text
    t2 = cells(page, "table-T2")
    assert t2[-2:] == ["1.2.3", "OUT OF SERVICE"] and "journal write failed" in t2[-3]
    assert count(page) == 4  # the three held hits and T2 out of service
    led = office.ledger()
    try:
        status = contract.status_message("T2", "online", in_service=True)
        led.apply_batch([Incoming("status", "T2",
                                  contract.parse_status(contract.dumps(status)))])
    finally:
        led.close()
    page = browser.client.get("/tables").text
    assert cells(page, "table-T2")[-2:] == ["1.2.3", "yes"] and count(page) == 3
