"""The head-office console (headoffice/console/): the real application on a real ledger filled
by the ledger's own code path (tests/test_headoffice_console_support.py says what is in it).

Pages show the ledger's figures in dollars and cents; approving or refusing a held hit in the
browser changes the ledger exactly as `tablectl-headoffice hit approve|refuse` does; a viewer,
a POST without the session's CSRF token, a wrong password and a request without a session are
refused, counted, and change nothing."""

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
    # fixed awards of $100.00 by the house (rule 15), the meter untouched.
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
    assert "box 1 flush $100.00" in section
    tables = browser.client.get("/tables").text
    t1 = cells(tables, "table-T1")
    assert t1[:3] == ["T1", "p1", "online"]
    assert t1[5] == str(LEDGERED)
    assert t1[6].startswith(f"#{LEDGERED} jackpot_hit (held)")
    # T1 said at its last connect that its outbox ran to LEDGERED + 1, and LEDGERED + 2
    # arrived early (parked): two messages head office knows of and has not ledgered.
    assert t1[7] == "2"
    assert f"round {FLUSH_ROUNDS + 3} HELD for approval: no jackpot wagers" in t1[8]
    assert cells(tables, "table-T2")[:3] == ["T2", "-", "unknown"]
    hits = browser.client.get("/hits").text
    assert [int(n) for n in re.findall(r'id="held-(\d+)"', hits)] == [1, 2, 3]
    assert "Why held: royal_flush award on box 1 waits for verification" in hits
    assert "box 1: Ah Kh Qh Jh Th (claimed royal_flush)" in hits
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


def _cli_as_alice(monkeypatch: pytest.MonkeyPatch, office: Office, *args: str) -> int:
    """`tablectl-headoffice hit ...` as the operator alice (the login the OS reports)."""
    monkeypatch.setattr(cli, "login_name", lambda: "alice")
    return cli.main(["--config", str(office.ho_path), "hit", *args])


def test_approving_in_the_browser_is_hit_approve(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    by_cli, by_console = make_office(tmp_path / "cli"), make_office(tmp_path / "console")
    assert _cli_as_alice(monkeypatch, by_cli, "approve", "1", "--note", "cameras checked") == 0
    b = Browser(by_console)
    try:
        b.login("alice")
        r = b.client.post("/hits/1/approve", data={"csrf": b.csrf(),
                                                   "note": "cameras checked"})
        assert r.status_code == 303 and r.headers["location"] == "/hits"
        page = b.client.get("/hits").text
        assert re.search(r"held hit #1 approved by alice: \$[\d,]+\.\d\d paid", page)
        assert cells(page, "decided-1")[5:7] == ["approved", "alice"]
        assert b.console.counters["decisions"] == 1
    finally:
        b.close()
    cli_state, console_state = decisions(by_cli.db), decisions(by_console.db)
    assert console_state == cli_state
    approved = console_state["held"][0]
    assert (approved["status"], approved["operator"], approved["note"]) == (
        "approved", "alice", "cameras checked")
    assert console_state["hits"][-1]["round"] == FLUSH_ROUNDS + 1
    # Paid on the meter at the hit; the Royal resets it to the seed, and the wager of the
    # round after (25 % of $1.00) stays in it.
    assert console_state["pool"]["amount"] == 500_000 + 25


def test_refusing_in_the_browser_is_hit_refuse(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    by_cli, by_console = make_office(tmp_path / "cli"), make_office(tmp_path / "console")
    assert _cli_as_alice(monkeypatch, by_cli, "refuse", "3", "--reason", "forged") == 0
    before = decisions(by_console.db)
    b = Browser(by_console)
    try:
        b.login("alice")
        # The ledger's own rule: a refusal needs a reason. Refused there, nothing changed.
        r = b.client.post("/hits/3/refuse", data={"csrf": b.csrf(), "reason": "  "})
        assert r.status_code == 409 and "refused: a refusal needs a reason" in r.text
        assert decisions(by_console.db) == before
        r = b.client.post("/hits/3/refuse", data={"csrf": b.csrf(), "reason": "forged"})
        assert r.status_code == 303
        # Decided once: a second decision is refused by the ledger.
        r = b.client.post("/hits/3/approve", data={"csrf": b.csrf(), "note": ""})
        assert r.status_code == 409 and "was already refused by alice" in r.text
        assert b.console.counters["decisions_refused"] == 2
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
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    by_cli, by_console = make_office(tmp_path / "cli"), make_office(tmp_path / "console")
    monkeypatch.setattr(cli, "login_name", lambda: "alice")
    pool_set = ["--config", str(by_cli.ho_path), "pool", "set", "p1", "--increment-bp", "3000"]
    assert cli.main(pool_set) == 1  # T1 is live on p1: refused without --force
    assert cli.main([*pool_set, "--force"]) == 0
    b = Browser(by_console)
    try:
        b.login("alice")
        token = csrf_of(b.client.get("/params").text)
        r = b.client.post("/pools/p1/params", data={"csrf": token, "increment_bp": "3000"})
        assert r.status_code == 409 and "tables live on pool p1: T1 (force needed)" in r.text
        r = b.client.post("/pools/p1/params", data={"csrf": token, "increment_bp": "3000",
                                                     "force": "on"})
        assert r.status_code == 303
        page = b.client.get("/params").text
        assert "pool p1 parameters changed by alice (forced)" in page
        assert 'placeholder="3000"' in page  # the form shows the new rate, in basis points
        # Bad figures never reach the ledger; the CLI's own checks (cli._changes) apply.
        sent = [b.client.post("/pools/p1/params", data={"csrf": token, **form}) for form in (
            {"seed": "-5"}, {"seed": "1e9"}, {"increment_bp": "10001"}, {},
            {"ceiling": "100", "no_ceiling": "on"})]
        assert [r.status_code for r in sent] == [400, 400, 400, 400, 400]
        assert "nothing to change" in sent[3].text
        assert "--increment-bp must be 0..10000" in sent[2].text
    finally:
        b.close()
    assert _param_log(by_console.db) == _param_log(by_cli.db)
    viewer = Browser(by_console)
    try:
        viewer.login("victor")
        token = csrf_of(viewer.client.get("/params").text)
        assert "params-p1" not in viewer.client.get("/params").text
        r = viewer.client.post("/pools/p1/params", data={"csrf": token, "seed": "1"})
        assert r.status_code == 403
    finally:
        viewer.close()
    assert _param_log(by_console.db) == _param_log(by_cli.db)


def test_a_viewer_sees_but_cannot_decide(office: Office, browser: Browser) -> None:
    before = decisions(office.db)
    browser.login("victor")
    page = browser.client.get("/hits").text
    assert "victor (viewer)" in page and "Viewer: an approver decides." in page
    assert "/hits/1/approve" not in page
    for verb, field in (("approve", "note"), ("refuse", "reason")):
        r = browser.client.post(f"/hits/1/{verb}", data={"csrf": browser.csrf(), field: "x"})
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
    assert browser.client.post("/hits/1/approve",
                               data={"csrf": browser.csrf()}).status_code == 303


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
    r = browser.client.post("/hits/99/approve", data={"csrf": token})
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
        r = b.client.post("/pools/p1/resume", data={"csrf": token})
        assert r.status_code == 409 and "still unbalanced, not resumed" in r.text
        led = office.ledger()
        try:
            led.db.execute("UPDATE pools SET amount = amount - 1 WHERE id = ?", (P,))
        finally:
            led.close()
        assert b.client.post("/pools/p1/resume", data={"csrf": token}).status_code == 303
        assert "pool p1 resumed by alice" in b.client.get("/pools").text
    finally:
        b.close()
    led = office.ledger()
    try:
        assert (led.pool(P) or pytest.fail("no pool")).stopped is None
        assert [(r["action"], r["operator"]) for r in led.param_log(P)][-1] == ("resume",
                                                                                 "alice")
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
    from headoffice.console.money import dollars, percent

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
        r = client.post("/hits/1/approve", data={"csrf": csrf_of(client.get("/hits").text)})
        assert r.status_code == 409 and "not authorised to decide a held hit" in r.text
        assert led.held_hits()[0]["status"] == "pending"
    finally:
        led.close()
