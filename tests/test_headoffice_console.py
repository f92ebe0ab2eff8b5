"""The head-office console (headoffice/console/): the real application on a real ledger filled
by the ledger's own code path (tests/test_headoffice_console_support.py says what is in it).

Pages show the ledger's figures in dollars and cents; a held hit's page shows the award, the
hands in words and the checks before any decision; approving or refusing it in the browser, with
a reason, changes the ledger exactly as `tablectl-headoffice hit approve|refuse` does (two
approvers above the dual-control threshold); a parameter change is typed in dollars and percent
and shown before and after; a viewer, a POST without the session's CSRF token or a reason, a
wrong password and a request without a session are refused, counted, and change nothing."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from headoffice import cli
from headoffice.console.accounts import FAILS_ALLOWED, ConsoleConfigError, validate_text
from headoffice.console.app import Console
from headoffice.ledger import Incoming, Ledger
from tests.test_headoffice_console_support import (
    BASE,
    FLUSH_ROUNDS,
    LEDGERED,
    PARKED_SEQ,
    PASSWORDS,
    Browser,
    Office,
    P,
    body,
    csrf_of,
    decisions,
    inc,
    make_office,
)


@pytest.fixture
def office(tmp_path: Path) -> Office:
    return make_office(tmp_path / "office")


@pytest.fixture
def browser(office: Office) -> Iterator[Browser]:
    b = Browser(office)
    yield b
    b.close()


def cells(html: str, row_id: str) -> list[str]:
    """The text of each cell of the row with this id."""
    m = re.search(rf'<tr id="{re.escape(row_id)}">(.*?)</tr>', html, re.S)
    assert m, f"no row {row_id}"
    return [re.sub(r"<[^>]+>", "", c).strip()
            for c in re.findall(r"<td[^>]*>(.*?)</td>", m[1], re.S)]


def test_pages_show_the_ledgers_figures(office: Office, browser: Browser) -> None:
    assert browser.login("alice").status_code == 303
    # 29 jackpot wagers of $1.00: 25 % to the meter, 5 % to the reserve; 27 Flushes paid
    # fixed awards of $100.00 by the house (UTH rule 15), the meter untouched.
    pool_row = ["p1", "running", "$5,007.25", "$5,000.00", "$1.45", "none", "25.00%",
                "5.00%", "27", "$2,700.00"]
    overview = browser.client.get("/")
    assert overview.status_code == 200
    assert cells(overview.text, "pool-p1") == pool_row
    assert re.search(r'id="pending-count">3<', overview.text)
    pools = browser.client.get("/pools").text
    assert cells(pools, "pool-p1") == pool_row
    section = pools.split('id="hits-p1"')[1]
    rows = re.findall(r"<tr>\s*<td class=\"n\">(\d+)</td>", section)
    # The last 25 hits, newest first: 27 down to 3.
    assert [int(r) for r in rows] == list(range(FLUSH_ROUNDS, FLUSH_ROUNDS - 25, -1))
    assert "box 1 Flush $100.00" in section
    tables = browser.client.get("/tables").text
    t1 = cells(tables, "table-T1")
    assert t1[:3] == ["T1", "p1", "online"]
    assert t1[5] == str(LEDGERED)
    assert t1[6].startswith(f"#{LEDGERED} jackpot hit (held)")
    # T1 said at its last connect that its outbox ran to LEDGERED + 1, and LEDGERED + 2
    # arrived early (parked): two messages head office knows of and has not ledgered.
    assert t1[7] == "2"
    assert f"round {FLUSH_ROUNDS + 3} HELD for approval: no jackpot wagers" in t1[8]
    assert cells(tables, "table-T2")[:3] == ["T2", "-", "unknown"]
    hits = browser.client.get("/hits").text
    assert [int(n) for n in re.findall(r'id="held-(\d+)"', hits)] == [1, 2, 3]
    assert "Why held: Royal Flush award on box 1 waits for verification" in hits
    assert "box 1: Ah Kh Qh Jh Th: Royal Flush" in hits and "claimed" not in hits
    assert 'href="/hits/1"' in hits and "/hits/1/approve" not in hits  # no one-click pay
    assert "meter at the hit $5,007.25" in hits
    alarms = browser.client.get("/alarms").text
    assert "jackpot hit T1 round 30 HELD for approval" in alarms
    params = browser.client.get("/params").text
    assert re.search(r"<td>p1</td><td class=\"n\">1</td><td>[^<]+</td><td>create</td>"
                     r"<td>config</td>", params)


def test_live_figures_for_the_pages(office: Office, browser: Browser) -> None:
    assert browser.client.get("/live.json").status_code == 401
    browser.login("victor")
    live = browser.client.get("/live.json").json()
    assert live["values"]["pool:p1:current"] == "$5,007.25"
    assert live["values"]["pool:p1:reserve"] == "$1.45"
    assert live["values"]["table:T1:outbox_lag"] == "2"
    assert live["pending"] == 3
    assert live["alarm"] == 3  # each held hit waiting is an alarm until decided
    assert live["values"]["alarms:active"] == "3"
    # Every figure the JSON refreshes is on a page, marked for it.
    overview = browser.client.get("/").text
    marked = set(re.findall(r'data-live="([^"]+)"', overview))
    assert marked == set(live["values"])


def _cli_as(monkeypatch: pytest.MonkeyPatch, office: Office, who: str, *args: str) -> int:
    """`tablectl-headoffice ...` as the operator `who` (the login the OS reports)."""
    monkeypatch.setattr(cli, "login_name", lambda: who)
    return cli.main(["--config", str(office.ho_path), *args])


def test_the_confirmation_page_shows_the_award_before_any_decision(
        office: Office, browser: Browser) -> None:
    before = decisions(office.db)
    browser.login("alice")
    page = browser.client.get("/hits/1").text
    # Head office's award as it would be paid: 15.2.9.1, the greater of $50,000.00 and the
    # meter at the hit ($5,007.00).
    assert "<strong>$50,000.00</strong>" in page and "$5,007.00" in page
    assert "Royal Flush: $50,000.00 (15.2.9.1)" in page
    assert re.search(r'<td class="cards">Ah Kh Qh Jh Th</td><td>Royal Flush</td>', page)
    assert "T1, round 28, pool p1" in page
    assert "all pass" in cells_text(page, "checks")
    assert cells_text(page, "verified") == "none"
    assert "two different approvers (dual control)" in cells_text(page, "status")
    assert 'name="reason"' in page and 'action="/hits/1/approve"' in page
    # #3 was held because it does not add up: the page says what the checks found.
    assert "no jackpot wagers ledgered from this table for round 30" in cells_text(
        browser.client.get("/hits/3").text, "checks")
    # A POST without a reason is refused before the ledger is asked; nothing changes.
    for form in ({}, {"reason": ""}, {"reason": "   "}):
        r = browser.client.post("/hits/1/approve", data={"csrf": browser.csrf(), **form})
        assert r.status_code == 400 and "a decision needs a reason" in r.text
    assert decisions(office.db) == before
    assert browser.client.get("/hits/99").status_code == 404


def cells_text(html: str, cell_id: str) -> str:
    m = re.search(rf'<td id="{cell_id}">(.*?)</td>', html, re.S)
    assert m, f"no cell {cell_id}"
    return re.sub(r"<[^>]+>", "", m[1]).strip()


def test_approving_in_the_browser_is_hit_approve(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """The $50,000.00 Royal needs two approvers: alice's approval is recorded and pays
    nothing, alice again is refused, bob's pays. The CLI and the console write the same."""
    by_cli, by_console = make_office(tmp_path / "cli"), make_office(tmp_path / "console")
    assert _cli_as(monkeypatch, by_cli, "alice", "hit", "show", "1") == 0
    shown = capsys.readouterr().out
    assert "award head office pays: $50,000.00" in shown and "Royal Flush" in shown
    with pytest.raises(SystemExit):  # no --reason: argparse refuses
        _cli_as(monkeypatch, by_cli, "alice", "hit", "approve", "1")
    assert "required: --reason" in capsys.readouterr().err
    assert _cli_as(monkeypatch, by_cli, "alice", "hit", "approve", "1", "--reason",
                   "cameras checked") == 0
    out = capsys.readouterr().out
    assert out.startswith(shown.rstrip("\n")) and "FIRST APPROVAL by alice" in out
    assert _cli_as(monkeypatch, by_cli, "alice", "hit", "approve", "1", "--reason", "x") == 1
    assert "second, different approver" in capsys.readouterr().err
    assert _cli_as(monkeypatch, by_cli, "bob", "hit", "show", "1") == 0
    assert "first approval: alice" in capsys.readouterr().out
    assert _cli_as(monkeypatch, by_cli, "bob", "hit", "approve", "1", "--reason",
                   "count agrees") == 0
    assert "APPROVED by alice and bob: $50,000.00 paid" in capsys.readouterr().out
    assert _cli_as(monkeypatch, by_cli, "bob", "decisions") == 0
    (line,) = capsys.readouterr().out.splitlines()
    assert line.startswith("DECISION #1 held hit #1 $50,000.00: APPROVED (2 signatures);"
                           " alice at ")
    assert "cameras checked; bob at " in line and line.endswith(
        "count agrees; paid $50,000.00")
    a, b = Browser(by_console), Browser(by_console)
    try:
        a.login("alice")
        r = a.client.post("/hits/1/approve", data={"csrf": a.csrf(),
                                                   "reason": "cameras checked"})
        assert r.status_code == 303 and r.headers["location"] == "/hits"
        page = a.client.get("/hits").text
        assert "held hit #1: first approval by alice ($50,000.00) recorded" in page
        assert "First approval by alice" in page
        assert decisions(by_console.db)["held"][0]["status"] == "pending"
        r = a.client.post("/hits/1/approve", data={"csrf": a.csrf(), "reason": "again"})
        assert r.status_code == 409 and "second, different approver" in r.text
        b.login("bob")
        page = b.client.get("/hits/1").text  # the second sees what the first decided
        assert "alice" in cells_text(page, "first") and "cameras checked" in page
        r = b.client.post("/hits/1/approve", data={"csrf": b.csrf(), "reason": "count agrees"})
        assert r.status_code == 303
        page = b.client.get("/hits").text
        assert "held hit #1 approved by alice and bob: $50,000.00 paid" in page
        assert cells(page, "decided-1")[5:7] == ["approved", "alice and bob"]
        assert a.console.counters["decisions"] == 1 and b.console.counters["decisions"] == 1
    finally:
        a.close()
        b.close()
    cli_state, console_state = decisions(by_cli.db), decisions(by_console.db)
    assert console_state == cli_state
    approved = console_state["held"][0]
    assert (approved["status"], approved["operator"], approved["note"]) == (
        "approved", "alice and bob", "cameras checked / count agrees")
    (signed,) = console_state["decisions"]
    assert (signed["first_by"], signed["second_by"], signed["amount"]) == ("alice", "bob",
                                                                           5_000_000)
    assert console_state["hits"][-1]["round"] == FLUSH_ROUNDS + 1
    # Paid on the meter at the hit; the Royal resets it to the seed, and the wager of the
    # round after (25 % of $1.00) stays in it.
    assert console_state["pool"]["amount"] == 500_000 + 25


def test_refusing_in_the_browser_is_hit_refuse(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    by_cli, by_console = make_office(tmp_path / "cli"), make_office(tmp_path / "console")
    assert _cli_as(monkeypatch, by_cli, "alice", "hit", "refuse", "3", "--reason",
                   "forged") == 0
    before = decisions(by_console.db)
    b = Browser(by_console)
    try:
        b.login("alice")
        # A refusal needs a reason. Refused, nothing changed.
        r = b.client.post("/hits/3/refuse", data={"csrf": b.csrf(), "reason": "  "})
        assert r.status_code == 400 and "a decision needs a reason" in r.text
        assert decisions(by_console.db) == before
        r = b.client.post("/hits/3/refuse", data={"csrf": b.csrf(), "reason": "forged"})
        assert r.status_code == 303
        # Decided once: a second decision is refused by the ledger.
        r = b.client.post("/hits/3/approve", data={"csrf": b.csrf(), "reason": "x"})
        assert r.status_code == 409 and "was already refused by alice" in r.text
        assert b.console.counters["decisions_refused"] == 1
    finally:
        b.close()
    assert decisions(by_console.db) == decisions(by_cli.db)
    refused = decisions(by_console.db)["held"][2]
    assert (refused["status"], refused["operator"], refused["note"]) == (
        "refused", "alice", "forged")


def _param_log(db: Path) -> list[dict[str, Any]]:
    led = Ledger.open(str(db))
    try:
        return [{k: v for k, v in r.items() if k != "utc"} for r in led.param_log()]
    finally:
        led.close()


def test_a_parameter_change_in_the_browser_is_pool_set(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]
                                                      ) -> None:
    """Typed in dollars and percent, shown before and after, with a reason; T1 is live on p1,
    so a forced change needs a second, different approver. The CLI writes the same."""
    by_cli, by_console = make_office(tmp_path / "cli"), make_office(tmp_path / "console")
    pool_set = ["pool", "set", "p1", "--increment-bp", "3000", "--reason", "new sign"]
    assert _cli_as(monkeypatch, by_cli, "alice", *pool_set) == 1  # live: refused unforced
    capsys.readouterr()
    assert _cli_as(monkeypatch, by_cli, "alice", *pool_set, "--force") == 0
    out = capsys.readouterr().out
    assert re.search(r"increment \(to the pool\)\s+25\.00%\s+30\.00%", out)
    assert "FIRST APPROVAL recorded (decision #1)" in out
    assert _cli_as(monkeypatch, by_cli, "alice", "pool", "approve", "1", "--reason", "x") == 1
    assert "second, different approver" in capsys.readouterr().err
    assert _cli_as(monkeypatch, by_cli, "bob", "pool", "approve", "1", "--reason",
                   "letter checked") == 0
    assert "APPLIED by alice and bob" in capsys.readouterr().out
    a, b = Browser(by_console), Browser(by_console)
    try:
        a.login("alice")
        page = a.client.get("/params").text
        assert 'placeholder="25.00%"' in page and 'placeholder="$5,000.00"' in page
        # The confirmation: only what changes, in percent; nothing changed yet.
        r = a.client.get("/pools/p1/params", params={"increment": "30", "seed": ""})
        assert r.status_code == 200
        assert cells(r.text.replace("<tr><td>increment", '<tr id="row"><td>increment'),
                     "row") == ["increment (to the pool)", "25.00%", "30.00%"]
        assert "seed" not in r.text.split('id="before-after"')[1].split("</table>")[0]
        assert "Tables live on the pool: T1" in r.text and 'name="reason"' in r.text
        for query in ({"seed": "1" * 41}, {"increment": "ten"}, {}):
            assert a.client.get("/pools/p1/params", params=query).status_code == 400
        assert a.client.get("/pools/p9/params", params={"seed": "1"}).status_code == 404
        token = csrf_of(r.text)
        form = {"csrf": token, "increment": "30"}
        r = a.client.post("/pools/p1/params", data={**form, "reason": "new sign"})
        assert r.status_code == 409 and "tables live on pool p1: T1 (force needed)" in r.text
        r = a.client.post("/pools/p1/params", data={**form, "force": "on"})
        assert r.status_code == 400 and "a decision needs a reason" in r.text
        r = a.client.post("/pools/p1/params", data={**form, "force": "on",
                                                     "reason": "new sign"})
        assert r.status_code == 303
        page = a.client.get("/params").text
        assert "first approved by alice (decision #1)" in page
        assert cells(page, "change-1")[:2] == ["1", "p1"]
        led = by_console.ledger()
        try:  # nothing applied yet
            assert (led.pool(P) or pytest.fail("no pool")).params.increment * 100 == 25
        finally:
            led.close()
        r = a.client.post("/decisions/1/approve", data={"csrf": token, "reason": "x"})
        assert r.status_code == 409 and "second, different approver" in r.text
        b.login("bob")
        page = b.client.get("/decisions/1").text
        assert "alice" in page and "new sign" in page and "30.00%" in page
        r = b.client.post("/decisions/1/approve", data={"csrf": csrf_of(page),
                                                        "reason": "letter checked"})
        assert r.status_code == 303
        page = b.client.get("/params").text
        assert "parameter change #1 applied by alice and bob" in page
        assert 'placeholder="30.00%"' in page
        assert "increment (to the pool): 25.00% &rarr; 30.00%" in page  # the log, readable
        assert "{" not in page.split('class="params"')[1]  # no dict of the parameter set
        # Bad figures never reach the ledger.
        sent = [b.client.post("/pools/p1/params", data={"csrf": token, "reason": "r", **f})
                for f in ({"seed": "-5"}, {"seed": "1e9"}, {"increment": "100.01"}, {},
                          {"ceiling": "100", "no_ceiling": "on"}, {"seed": "5.001"})]
        assert [r.status_code for r in sent] == [403] * 6  # bob's session, alice's token
        token = csrf_of(page)
        sent = [b.client.post("/pools/p1/params", data={"csrf": token, "reason": "r", **f})
                for f in ({"seed": "-5"}, {"seed": "1e9"}, {"increment": "100.01"}, {},
                          {"ceiling": "100", "no_ceiling": "on"}, {"seed": "5.001"})]
        assert [r.status_code for r in sent] == [400] * 6
        assert "nothing to change" in sent[3].text
        assert "increment: at most 100 %" in sent[2].text
    finally:
        a.close()
        b.close()
    assert _param_log(by_console.db) == _param_log(by_cli.db)
    viewer = Browser(by_console)
    try:
        viewer.login("victor")
        page = viewer.client.get("/params").text
        assert "params-p1" not in page
        assert viewer.client.get("/pools/p1/params", params={"seed": "1"}).status_code == 403
        r = viewer.client.post("/pools/p1/params", data={"csrf": csrf_of(page), "seed": "1",
                                                          "reason": "r"})
        assert r.status_code == 403
    finally:
        viewer.close()
    assert _param_log(by_console.db) == _param_log(by_cli.db)


def test_a_viewer_sees_but_cannot_decide(office: Office, browser: Browser) -> None:
    before = decisions(office.db)
    browser.login("victor")
    page = browser.client.get("/hits").text
    assert "victor (viewer)" in page and ">Review</a>" in page
    assert "/hits/1/approve" not in page
    review = browser.client.get("/hits/1").text
    assert "Viewer: an approver decides." in review and "/hits/1/approve" not in review
    for verb in ("approve", "refuse"):
        r = browser.client.post(f"/hits/1/{verb}", data={"csrf": browser.csrf(), "reason": "x"})
        assert r.status_code == 403 and "may view, not decide" in r.text
    assert browser.console.counters["forbidden"] == 2
    assert decisions(office.db) == before


def test_a_post_without_the_sessions_csrf_token_is_refused(office: Office,
                                                           browser: Browser) -> None:
    before = decisions(office.db)
    other = Browser(office)
    try:
        other.login("alice")
        someone_elses = other.csrf()
    finally:
        other.close()
    browser.login("alice")
    for form in ({"note": "x"}, {"csrf": "", "note": "x"}, {"csrf": someone_elses, "note": "x"}):
        r = browser.client.post("/hits/1/approve", data=form)
        assert r.status_code == 403 and "CSRF" in r.text
    r = browser.client.post("/logout", data={"csrf": ""})
    assert r.status_code == 403
    assert browser.console.counters["csrf_refused"] == 4
    assert decisions(office.db) == before
    # Still logged in (the forged logout did nothing), and with the token it works.
    assert browser.client.get("/hits").status_code == 200
    assert browser.client.post("/hits/1/approve", data={"csrf": browser.csrf(),
                                                        "reason": "ok"}).status_code == 303


def test_bad_forms_are_refused(office: Office, browser: Browser) -> None:
    before = decisions(office.db)
    browser.login("alice")
    token = browser.csrf()
    sent = [
        browser.client.post("/hits/1/refuse", content=b'{"csrf": "x"}',
                            headers={"content-type": "application/json"}),
        browser.client.post("/hits/1/refuse", data={"csrf": token, "reason": "x" * 9000}),
        browser.client.post("/hits/1/refuse", data={"csrf": token, "reason": "a\nb"}),
        browser.client.post("/hits/1/refuse", data={"csrf": token, "reason": "x" * 501}),
        browser.client.post("/hits/1/pay", data={"csrf": token}),
        browser.client.post(f"/hits/{2**62}/approve", data={"csrf": token}),
    ]
    assert [r.status_code for r in sent] == [415, 413, 400, 400, 404, 404]
    r = browser.client.post("/hits/99/approve", data={"csrf": token, "reason": "x"})
    assert r.status_code == 409 and "no held hit #99" in r.text
    assert browser.console.counters["bad_request"] == 6
    assert decisions(office.db) == before


def test_logging_in_and_out(office: Office, browser: Browser) -> None:
    r = browser.client.get("/")
    assert r.status_code == 303 and r.headers["location"] == "/login"
    assert browser.client.post("/hits/1/approve", data={}).status_code == 401
    assert browser.login("alice", "wrong").status_code == 401
    assert browser.login("nobody", "x").status_code == 401
    assert browser.console.counters["login_refused"] == 2
    # The login form's own token: a login posted without it is refused.
    browser.client.cookies.clear()
    r = browser.client.post("/login", data={"name": "alice", "password": PASSWORDS["alice"]})
    assert r.status_code == 403
    r = browser.login("alice")
    assert r.status_code == 303
    cookie = r.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie
    page = browser.client.get("/")
    assert page.status_code == 200 and "alice (approver)" in page.text
    for name in ("content-security-policy", "x-frame-options", "x-content-type-options"):
        assert name in page.headers
    token = browser.client.cookies.get("tablectl_console")
    assert browser.client.post("/logout", data={"csrf": csrf_of(page.text)}).status_code == 303
    # The session is gone at the console, not only in this browser.
    browser.client.cookies.set("tablectl_console", token)
    assert browser.client.get("/").status_code == 303


def test_another_host_name_is_refused(office: Office, browser: Browser) -> None:
    """A page of another site whose name resolves to this machine (DNS rebinding) gets
    nothing, not even the login form; names the config allows do."""
    for host in ("evil.example", "evil.example:8080", "127.0.0.2", "[::2]:8080", ""):
        r = browser.client.get("/login", headers={"host": host})
        assert r.status_code == 400 and r.text == "unknown host\n", host
        assert "content-security-policy" in r.headers
    assert browser.console.counters["bad_request"] == 5
    for host in ("127.0.0.1:8080", "LOCALHOST", "[::1]:8080"):
        assert browser.client.get("/login", headers={"host": host}).status_code == 200
    proxied = validate_text('[console]\nallowed_hosts = ["jackpot.casino.example"]\n', [])
    assert "jackpot.casino.example" in proxied.allowed_hosts
    with pytest.raises(ConsoleConfigError):
        validate_text('[console]\nallowed_hosts = ["evil.example/x"]\n', [])


def test_a_stopped_pool_is_resumed_as_pool_resume_does(office: Office,
                                                         browser: Browser) -> None:
    led = office.ledger()
    try:  # tampering, as test_headoffice_ledger does: the next message stops the pool
        led.db.execute("UPDATE pools SET amount = amount + 1 WHERE id = ?", (P,))
        led.apply_batch([Incoming("outbox", "T1", body("T1", PARKED_SEQ - 1,
                                                       *inc(FLUSH_ROUNDS + 4)))])
        assert (led.pool(P) or pytest.fail("no pool")).stopped
    finally:
        led.close()
    browser.login("victor")
    page = browser.client.get("/pools").text
    assert "STOPPED: " in page and "/pools/p1/resume" not in page
    assert browser.client.post("/pools/p1/resume",
                               data={"csrf": csrf_of(page)}).status_code == 403
    b = Browser(office)
    try:
        b.login("alice")
        token = csrf_of(b.client.get("/pools").text)
        r = b.client.post("/pools/p1/resume", data={"csrf": token, "reason": "looked"})
        assert r.status_code == 409 and "still unbalanced, not resumed" in r.text
        led = office.ledger()
        try:
            led.db.execute("UPDATE pools SET amount = amount - 1 WHERE id = ?", (P,))
        finally:
            led.close()
        r = b.client.post("/pools/p1/resume", data={"csrf": token})  # no reason: refused
        assert r.status_code == 400 and "needs a reason" in r.text
        assert b.client.post("/pools/p1/resume", data={
            "csrf": token, "reason": "ticket 12: meter put back"}).status_code == 303
        assert "pool p1 resumed by alice" in b.client.get("/pools").text
    finally:
        b.close()
    led = office.ledger()
    try:
        assert (led.pool(P) or pytest.fail("no pool")).stopped is None
        assert [(r["action"], r["operator"], r["outcome"]) for r in led.param_log(P)][-1] == (
            "resume", "alice", "applied: reason: ticket 12: meter put back")
    finally:
        led.close()


def test_sessions_end_when_idle_or_too_old_and_are_bounded(office: Office) -> None:
    from headoffice.console.sessions import MAX_SESSIONS

    now = [1000.0]
    led = office.ledger()
    try:
        console = Console(office.ho, office.console, led, monotonic=lambda: now[0])
        client = TestClient(console.app(), base_url=BASE, follow_redirects=False)

        def login() -> None:
            page = client.get("/login")
            r = client.post("/login", data={"csrf": csrf_of(page.text), "name": "alice",
                                            "password": PASSWORDS["alice"]})
            assert r.status_code == 303

        idle, most = office.console.idle_timeout_s, office.console.session_max_s
        login()
        now[0] += idle - 1
        assert client.get("/").status_code == 200  # used: idle time starts again
        now[0] += idle + 1
        assert client.get("/").status_code == 303  # idle too long: gone
        login()
        start = now[0]
        while now[0] + idle / 2 - start <= most:  # in use all along ...
            now[0] += idle / 2
            assert client.get("/alarms").status_code == 200
        now[0] += idle / 2
        assert client.get("/alarms").status_code == 303  # ... but a shift is over
        login()
        mine = client.cookies.get("tablectl_console")
        for _ in range(MAX_SESSIONS + 100):  # a flood of login forms
            console.sessions.new()
        assert len(console.sessions) <= MAX_SESSIONS
        assert console.sessions.get(mine) is not None  # the anonymous ones went first
        assert client.get("/").status_code == 200
    finally:
        led.close()


def test_repeated_wrong_passwords_lock_the_name(office: Office, browser: Browser) -> None:
    for _ in range(FAILS_ALLOWED):
        assert browser.login("alice", "guess").status_code == 401
    assert browser.login("alice").status_code == 401  # the right one, but locked now
    assert browser.login("victor").status_code == 303  # other names are not


def test_the_console_config_is_checked() -> None:
    good = '[[users]]\nname = "alice"\nrole = "approver"\npassword_hash = "{h}"\n'
    from headoffice.console.accounts import hash_password

    h = hash_password("x")
    cfg = validate_text(good.format(h=h), ["alice"])
    assert cfg.listen == "127.0.0.1:8080"  # loopback unless configured otherwise
    assert cfg.users["alice"].approver
    bad = {
        "an approver the ledger does not authorise": (good.format(h=h), []),
        "a password, not a hash": (good.format(h="hunter2"), ["alice"]),
        "another scheme": (good.format(h="$2b$12$" + "a" * 53), ["alice"]),
        "an unknown role": (good.format(h=h).replace("approver", "admin"), ["alice"]),
        "an unknown key": ("[console]\nport = 80\n", []),
        "a bad listen": ('[console]\nlisten = "everywhere"\n', []),
        "a name twice": (good.format(h=h) * 2, ["alice"]),
    }
    for what, (text, operators) in bad.items():
        with pytest.raises(ConsoleConfigError):
            validate_text(text, operators)
            pytest.fail(what)


def test_nothing_is_money_as_a_float() -> None:
    from headoffice.console.money import percent
    from shared.money import dollars_or_dash as dollars  # the console's `dollars` filter

    assert [dollars(x) for x in (0, 5, 123456789, -1005)] == [
        "$0.00", "$0.05", "$1,234,567.89", "-$10.05"]
    assert [dollars(x) for x in (1.5, None, True, "100")] == ["-"] * 4
    assert [percent(x) for x in ("1/4", "1/3", "0", "1/20000")] == [
        "25.00%", "33.33%", "0.00%", "0.00%"]


def test_the_ledger_is_left_open_for_the_console_only(office: Office) -> None:
    # A decision the ledger refuses for its own reasons (operators) reaches the page as a
    # refusal even when the console's role says approver: the ledger has the last word.
    led = Ledger.open(str(office.db))
    try:
        console = Console(office.ho.__class__(**{**office.ho.__dict__, "operators": ()}),
                          office.console, led)
        client = TestClient(console.app(), base_url=BASE, follow_redirects=False)
        page = client.get("/login")
        client.post("/login", data={"csrf": csrf_of(page.text), "name": "alice",
                                    "password": PASSWORDS["alice"]})
        r = client.post("/hits/1/approve", data={"csrf": csrf_of(client.get("/hits").text),
                                                 "reason": "ok"})
        assert r.status_code == 409 and "not authorised to release a held hit" in r.text
        assert led.held_hits()[0]["status"] == "pending"
    finally:
        led.close()


def test_a_parameter_form_reads_dollars_and_percent_exactly() -> None:
    from fractions import Fraction

    from headoffice.console.money import param_changes, parse_dollars, parse_percent

    assert [parse_dollars(t, "seed") for t in ("5000", "5,000.00", "$5000.5", "0.01")] == [
        500_000, 500_000, 500_050, 1]
    assert [parse_percent(t, "increment") for t in ("25", "2.5", "0.25%", "100")] == [
        Fraction(1, 4), Fraction(1, 40), Fraction(1, 400), Fraction(1)]
    for bad in ("1e9", "-5", "5.001", "1,0000", "", "five"):
        with pytest.raises(ValueError, match="seed"):
            parse_dollars(bad, "seed")
    for bad in ("100.01", "1/4", "-1", "2.555", "nan"):
        with pytest.raises(ValueError, match="increment"):
            parse_percent(bad, "increment")
    old = {"seed": 500_000, "increment": "1/4", "hidden": "1/20", "ceiling": None,
           "paytable": {}}
    new = {**old, "increment": "3/10", "ceiling": 10_000_000}
    assert param_changes(old, new) == [("increment (to the pool)", "25.00%", "30.00%"),
                                       ("ceiling", "none", "$100,000.00")]
