"""The console as it runs: `tablectl-headoffice console` serving on a real socket (login,
approve over HTTP, the ledger changed), `console-password`, and the tables page following a
linked table's real link through a real Mosquitto and head-office worker (online while it
plays, offline when its network is cut and the broker publishes its will)."""

from __future__ import annotations

import asyncio
import http.cookiejar
import json
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
from argon2 import PasswordHasher
from starlette.testclient import TestClient

from headoffice.console.accounts import validate_text
from headoffice.console.app import Console
from headoffice.ledger import Ledger
from tests import mqtt_broker
from tests.support.link import (
    POOL,
    drain,
    head_office,
    ho_config,
    make_table,
    play_until,
    run,
    wait_for,
)
from tests.support.link import start as start_table
from tests.test_headoffice_console import cells, csrf_of
from tests.test_headoffice_console_support import (
    PASSWORDS,
    console_toml,
    decisions,
    make_office,
)

REPO = Path(__file__).resolve().parent.parent


def _wait_port(port: int, proc: subprocess.Popen[bytes], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"console exited {proc.returncode}: "
                                 f"{proc.stderr.read().decode() if proc.stderr else ''}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise AssertionError("the console did not open its port")


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        return None


def test_the_console_command_serves_and_decides_over_http(tmp_path: Path) -> None:
    port = mqtt_broker.free_port()
    office = make_office(tmp_path / "office", port=port)
    before = decisions(office.db)
    proc = subprocess.Popen(
        [sys.executable, "-m", "headoffice.cli", "console", "--config", str(office.ho_path),
         "--console-config", str(office.console_path)],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        _wait_port(port, proc)
        jar = http.cookiejar.CookieJar()
        opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar),
                                             NoRedirect())
        base = f"http://127.0.0.1:{port}"

        def post(path: str, form: dict[str, str]) -> int:
            data = urllib.parse.urlencode(form).encode()
            try:
                return opener.open(f"{base}{path}", data, timeout=30).status
            except urllib.error.HTTPError as exc:
                return exc.code

        login = opener.open(f"{base}/login", timeout=30).read().decode()
        assert post("/login", {"csrf": csrf_of(login), "name": "victor",
                               "password": "wrong"}) == 401
        login = opener.open(f"{base}/login", timeout=30).read().decode()
        assert post("/login", {"csrf": csrf_of(login), "name": "alice",
                               "password": PASSWORDS["alice"]}) == 303
        page = opener.open(f"{base}/hits", timeout=30).read().decode()
        assert post("/hits/2/approve", {"reason": "no token"}) == 403
        assert post("/hits/2/approve", {"csrf": csrf_of(page)}) == 400  # no reason
        assert decisions(office.db) == before
        assert post("/hits/2/approve", {"csrf": csrf_of(page), "reason": "seen on camera"}) == 303
        live = json.loads(opener.open(f"{base}/live.json", timeout=30).read())
        # The $50,000.00 Royal needs a second approver: alice's approval is recorded.
        assert live["pending"] == 3
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=30)
    state = decisions(office.db)
    assert state["held"][1]["status"] == "pending"
    (signed,) = state["decisions"]
    assert (signed["status"], signed["first_by"], signed["first_reason"]) == (
        "pending", "alice", "seen on camera")
    log = err.decode()
    # Who did what, in the console's log: the refusals and the decision.
    assert "login refused for 'victor'" in log
    assert "missing or wrong CSRF token" in log
    assert "held hit #2: first approval by alice ($50,000.00) recorded" in log


def test_console_password_makes_an_argon2id_hash(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, "-m", "headoffice.cli", "console-password"],
                         input=b"s3cret phrase\n", cwd=REPO, capture_output=True, check=True)
    hashed = out.stdout.decode().strip()
    assert hashed.startswith("$argon2id$")
    assert PasswordHasher().verify(hashed, "s3cret phrase")
    empty = subprocess.run([sys.executable, "-m", "headoffice.cli", "console-password"],
                           input=b"\n", cwd=REPO, capture_output=True)
    assert empty.returncode == 2 and b"a password is 1-1024 characters" in empty.stderr


def test_bad_console_config_exits_2(tmp_path: Path) -> None:
    office = make_office(tmp_path / "office")
    office.console_path.write_text('[console]\nlisten = "0.0.0.0"\n')
    out = subprocess.run(
        [sys.executable, "-m", "headoffice.cli", "console", "--config", str(office.ho_path),
         "--console-config", str(office.console_path)], cwd=REPO, capture_output=True)
    assert out.returncode == 2 and b"listen: HOST:PORT" in out.stderr


@pytest.mark.skipif(not mqtt_broker.available(), reason="mosquitto not installed")
def test_tables_page_follows_a_real_link(broker, tmp_path: Path) -> None:
    db = tmp_path / "ledger.db"
    ho = ho_config(db, None, operators=("alice", "bob"))  # console_toml's approvers
    accounts = validate_text(console_toml(), ho.operators)

    async def main() -> None:
        proxy = await mqtt_broker.TcpProxy(broker.port).start()
        async with head_office(db, broker) as (worker,):
            led = Ledger.open(str(db))
            client = TestClient(Console(ho, accounts, led).app(), base_url="http://127.0.0.1",
                                follow_redirects=False)
            try:
                page = await asyncio.to_thread(client.get, "/login")
                await asyncio.to_thread(client.post, "/login", data={
                    "csrf": csrf_of(page.text), "name": "victor",
                    "password": PASSWORDS["victor"]})
                table = await start_table(make_table("T1", tmp_path / "T1", broker,
                                                     port=proxy.port))
                await wait_for(play_until([table], 5), 60, "5 rounds")
                await drain([table])
                pool = worker.ledger.pool(POOL)
                assert pool is not None
                overview = (await asyncio.to_thread(client.get, "/")).text
                row = cells(overview, f"pool-{POOL}")
                assert row[2] == f"${pool.amount // 100:,}.{pool.amount % 100:02d}"
                t1 = cells(overview, "table-T1")
                last_seq = worker.ledger.table_totals("T1")["last_seq"]
                assert t1[2] == "online" and t1[5] == str(last_seq) and last_seq > 0
                assert t1[7] == "0"  # drained: nothing on its way
                proxy.cut()  # the broker sees the table's link die and publishes its will

                async def offline() -> bool:
                    page = await asyncio.to_thread(client.get, "/tables")
                    return cells(page.text, "table-T1")[2] == "offline"

                await wait_for(offline, 60, "T1 shown offline", every=0.1)
                await table.stop()
            finally:
                client.close()
                led.close()
        await proxy.close()

    run(main())


def test_a_burst_of_wrong_passwords_sent_at_once_locks_the_name(tmp_path: Path) -> None:
    """30 wrong passwords for one name sent together (queued behind the hashing slots), then
    the right one 1.1 s later: refused, as after 5 sent one by one (FAILS_ALLOWED). Before the
    attempts in flight were counted, the right one logged in."""
    from concurrent.futures import ThreadPoolExecutor

    port = mqtt_broker.free_port()
    office = make_office(tmp_path / "office", port=port)
    proc = subprocess.Popen(
        [sys.executable, "-m", "headoffice.cli", "console", "--config", str(office.ho_path),
         "--console-config", str(office.console_path)],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    base = f"http://127.0.0.1:{port}"

    def login_client() -> tuple[urllib.request.OpenerDirector, str]:
        jar = http.cookiejar.CookieJar()
        opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar),
                                             NoRedirect())
        return opener, csrf_of(opener.open(f"{base}/login", timeout=30).read().decode())

    def attempt(client: tuple[urllib.request.OpenerDirector, str], password: str) -> int:
        opener, csrf = client
        data = urllib.parse.urlencode({"csrf": csrf, "name": "alice",
                                       "password": password}).encode()
        try:
            return opener.open(f"{base}/login", data, timeout=120).status
        except urllib.error.HTTPError as exc:
            return exc.code

    try:
        _wait_port(port, proc)
        clients = [login_client() for _ in range(31)]
        with ThreadPoolExecutor(max_workers=31) as pool:
            wrong = [pool.submit(attempt, c, f"guess-{i}") for i, c in enumerate(clients[:30])]
            time.sleep(1.1)
            right = pool.submit(attempt, clients[30], PASSWORDS["alice"])
            answers = [f.result() for f in wrong]
            assert right.result() == 401  # locked: the guesses in flight counted
        assert answers == [401] * 30
        assert attempt(login_client(), PASSWORDS["alice"]) == 401  # and still locked after
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=30)
    assert "login refused for 'alice' from" in err.decode()
    assert "(locked after repeated failures)" in err.decode()
