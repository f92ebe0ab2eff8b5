"""The console in a real headless browser (Debian's chromium, driven by Selenium through
Debian's chromedriver): `tablectl-headoffice console` serving a ledger with a linked pool, paid
and held hits, an alarm and two closed shifts; an operator logs in by typing, reads every page,
sees a figure change in place (the live update, no reload), refuses one held hit on its page,
and gives the first approval of a $50,000.00 Royal after reading its award, hand and cards; a
second approver, logged in by typing too, sees the first approval and pays it.

A screenshot of each page is taken; with TABLECTL_CONSOLE_SCREENSHOTS=DIR they are kept there
(docs/images/console-*.png were made so, docs/headoffice-console.md says how)."""

from __future__ import annotations

import csv
import io
import os
import shutil
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from headoffice.ledger import Incoming
from tests import mqtt_broker
from tests.test_headoffice_console_live import REPO, _wait_port
from tests.test_headoffice_console_support import (
    FLUSH_ROUNDS,
    PARKED_SEQ,
    PASSWORDS,
    Office,
    body,
    decisions,
    inc,
    make_office,
)
from tests.test_headoffice_meters_console import ledger_shift_closes

CHROMIUM = shutil.which("chromium")
DRIVER = shutil.which("chromedriver")
pytestmark = pytest.mark.skipif(CHROMIUM is None or DRIVER is None,
                                reason="Debian's chromium and chromium-driver are not installed")
ZONE = "Australia/Sydney"
PAGES = ("overview", "pools", "tables", "hits", "alarms", "params", "meters", "audit")


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Office, str]]:
    port = mqtt_broker.free_port()
    office = make_office(tmp_path / "office", port=port)
    # Times in the casino's zone (stored in UTC): the trail below is read in it.
    office.ho_path.write_text(office.ho_path.read_text().replace(
        "[service]\n", f'[service]\ntime_zone = "{ZONE}"\n'))
    proc = subprocess.Popen(
        [sys.executable, "-m", "headoffice.cli", "console", "--config", str(office.ho_path),
         "--console-config", str(office.console_path)],
        cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        _wait_port(port, proc)
        yield office, f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.communicate(timeout=30)


@pytest.fixture
def chrome(tmp_path: Path) -> Iterator[Any]:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1280,900", f"--user-data-dir={tmp_path / 'chrome'}"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(str(DRIVER)), options=options)
    driver.implicitly_wait(0)
    try:
        yield driver
    finally:
        driver.quit()


def test_an_operator_works_the_console_in_a_browser(served: tuple[Office, str], chrome: Any,
                                                     tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    office, base = served
    d = chrome
    wait = WebDriverWait(d, 30)
    shots = Path(os.environ.get("TABLECTL_CONSOLE_SCREENSHOTS") or tmp_path / "shots")
    shots.mkdir(parents=True, exist_ok=True)

    def shot(name: str) -> None:
        path = shots / f"console-{name}.png"
        assert d.save_screenshot(str(path)) and path.stat().st_size > 10_000

    d.get(f"{base}/")
    wait.until(ec.title_contains("Log in"))
    shot("login")
    d.find_element(By.NAME, "name").send_keys("alice")
    d.find_element(By.NAME, "password").send_keys(PASSWORDS["alice"])
    d.find_element(By.CSS_SELECTOR, "form.login button").click()
    wait.until(ec.title_contains("Overview"))
    current = '#pool-p1 [data-live="pool:p1:current"]'
    assert d.find_element(By.CSS_SELECTOR, current).text == "$5,007.25"
    assert d.find_element(By.ID, "pending-count").text == "3"

    # A table's jackpot wager reaches the ledger: the page shows the new meter within the
    # live update's period, without a reload.
    led = office.ledger()
    try:
        led.apply_batch([Incoming("outbox", "T1", body("T1", PARKED_SEQ - 1,
                                                       *inc(FLUSH_ROUNDS + 4)))])
        ledger_shift_closes(led)  # two shifts closed at T2, for the meters page
    finally:
        led.close()
    wait.until(ec.text_to_be_present_in_element((By.CSS_SELECTOR, current), "$5,007.50"))
    for page in PAGES:
        d.get(f"{base}/{'' if page == 'overview' else page}")
        wait.until(ec.presence_of_element_located((By.ID, "operator")))
        shot(page)

    def decide(hold_no: int, verb: str, reason: str, flash: str) -> None:
        d.get(f"{base}/hits/{hold_no}")
        form = f'form[action="/hits/{hold_no}/{verb}"]'
        d.find_element(By.CSS_SELECTOR, f'{form} input[name="reason"]').send_keys(reason)
        d.find_element(By.CSS_SELECTOR, f"{form} button").click()
        wait.until(ec.text_to_be_present_in_element((By.CLASS_NAME, "flash"), flash))

    def log_in(name: str) -> None:
        d.get(f"{base}/login")
        wait.until(ec.title_contains("Log in"))
        d.find_element(By.NAME, "name").send_keys(name)
        d.find_element(By.NAME, "password").send_keys(PASSWORDS[name])
        d.find_element(By.CSS_SELECTOR, "form.login button").click()
        wait.until(ec.title_contains("Overview"))

    before_params = decisions(office.db)["pool"]["params"]
    # The alarms: each held hit raised one, counted in the menu bar. The Royal's (#1) is
    # acknowledged first: someone is on it (it stays active until the hit is decided).
    assert d.find_element(By.ID, "alarm-count").text == "3"
    d.get(f"{base}/alarms")
    assert "Royal Flush award on box 1 waits" in d.find_element(By.ID, "alarm-1").text
    d.find_element(By.CSS_SELECTOR, '#alarm-1 input[name="note"]').send_keys(
        "supervisor on the way to T1")
    d.find_element(By.CSS_SELECTOR, "#alarm-1 form.ack button").click()
    wait.until(ec.text_to_be_present_in_element((By.CLASS_NAME, "flash"),
                                                "alarm #1 acknowledged by alice"))
    assert "supervisor on the way to T1" in d.find_element(By.ID, "alarm-1").text
    shot("alarms-acked")
    # Refuse #3 (the hit on a round without a wager) on its page: what the checks found shows.
    d.get(f"{base}/hits/3")
    assert "no jackpot wagers ledgered" in d.find_element(By.ID, "checks").text
    decide(3, "refuse", "no wager on the round", "held hit #3 refused by alice")
    # #1, a Royal Flush: its page shows the award in dollars, the hand in words and the cards
    # before anything is decided; $50,000.00 needs two approvers.
    d.get(f"{base}/hits/1")
    assert d.find_element(By.ID, "amount").text.startswith("$50,000.00")
    assert "Royal Flush" in d.find_element(By.ID, "hands").text
    assert "Ah Kh Qh Jh Th" in d.find_element(By.ID, "hands").text
    assert "two different approvers" in d.find_element(By.ID, "status").text
    shot("hit-confirm")
    decide(1, "approve", "camera 4", "held hit #1: first approval by alice ($50,000.00)")
    assert decisions(office.db)["held"][0]["status"] == "pending"
    d.find_element(By.CSS_SELECTOR, "form.who button").click()
    log_in("bob")
    d.get(f"{base}/hits/1")
    assert "alice" in d.find_element(By.ID, "first").text
    decide(1, "approve", "count agrees",
           "held hit #1 approved by alice and bob: $50,000.00 paid")
    shot("hits-decided")
    held = {h["hold_no"]: h for h in decisions(office.db)["held"]}
    assert (held[1]["status"], held[1]["operator"], held[1]["note"]) == (
        "approved", "alice and bob", "camera 4 / count agrees")
    assert (held[3]["status"], held[3]["operator"], held[3]["note"]) == (
        "refused", "alice", "no wager on the round")
    assert held[2]["status"] == "pending"
    # The Royal's and the refused hit's alarms ended with their decisions: #2 still waits.
    d.get(f"{base}/alarms")
    assert d.find_element(By.ID, "alarm-count").text == "1"
    # The audit trail: every step, with who, in the casino's time zone.
    d.get(f"{base}/audit")
    entries = [[c.text for c in r.find_elements(By.TAG_NAME, "td")]
               for r in d.find_elements(By.CSS_SELECTOR, "table.audit tbody tr")]
    steps = [(e[1], e[2]) for e in entries]
    for step in (("login", "alice"), ("alarm_ack", "alice"), ("hit_refused", "alice"),
                 ("hit_first_approval", "alice"), ("login", "bob"),
                 ("hit_second_approval", "bob"), ("hit_approved", "alice and bob")):
        assert step in steps, step
    assert steps.index(("hit_first_approval", "alice")) > steps.index(
        ("hit_second_approval", "bob"))  # newest first
    assert all(e[0].endswith(("AEDT", "AEST")) for e in entries), entries[:3]
    shot("audit")  # the trail after the decisions and the acknowledgement
    # Its CSV export (the browser's session) holds the same rows.
    cookies = "; ".join(f"{c['name']}={c['value']}" for c in d.get_cookies())
    request = urllib.request.Request(f"{base}/export/audit.csv", headers={"Cookie": cookies})
    with urllib.request.urlopen(request, timeout=30) as answer:
        exported = list(csv.reader(io.StringIO(answer.read().decode())))
    assert [r[1:] for r in exported[1:]] == entries

    # A parameter change typed in percent is shown before and after; nothing changes yet.
    d.get(f"{base}/params")
    d.find_element(By.CSS_SELECTOR, '#params-p1 input[name="increment"]').send_keys("30")
    d.find_element(By.CSS_SELECTOR, "#params-p1 button").click()
    wait.until(ec.title_contains("Change pool p1"))
    table = d.find_element(By.ID, "before-after").text
    assert "increment (to the pool) 25.00% 30.00%" in table and "seed" not in table
    assert "Tables live on the pool: T1" in d.find_element(By.ID, "live").text
    shot("params-confirm")
    assert decisions(office.db)["pool"]["params"] == before_params
