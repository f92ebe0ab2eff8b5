"""Who may do what on the control socket, with a real tablectld and real unprivileged peers.

The daemon runs as root (these tests run as root); each client is a forked child that drops to
uid 65534 (nobody) with a chosen gid before it connects, so the kernel's SO_PEERCRED names it.
The technician group is `users` and the supervisor group `staff` (groups every Debian has), the
socket's group `users`: everyone here may connect; the daemon decides what each may do.
"""

from __future__ import annotations

import grp
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from controller.control import SOCKET_NAME, NotRunning, request
from controller.daemon.main import parse_args
from controller.extensions.service_menu import FREE_PHASES
from tests.support.daemon import REPO

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="dropping to another uid needs root")

NOBODY = 65534
TECH, SUPER, NEITHER = "users", "staff", "nogroup"


def _gid(name: str) -> int:
    return grp.getgrnam(name).gr_gid


def config_text(state: Path, run: Path, extra: str = "") -> str:
    """A Pai Gow table with simulated devices in development mode (no manifest needed, no
    simulated players: only the test acts) and no table maximum (NSW 10.2)."""
    return (
        'table_id = "ACL-1"\ngame = "paigow"\n'
        f'[service]\nstate_dir = "{state}"\nruntime_dir = "{run}"\n'
        f'socket_group = "{TECH}"\ntech_group = "{TECH}"\nsuper_group = "{SUPER}"\n'
        f"watchdog = false\ndevelopment = true\n{extra}"
        '[paigow]\nrules = "nsw"\n[paigow.limits]\nminimum = 1000\n'
        "[devices]\nsimulate = true\n"
    )


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[tuple[Path, subprocess.Popen[str]]]:
    yield from _daemon(tmp_path)


@pytest.fixture
def pty_daemon(tmp_path: Path) -> Iterator[tuple[Path, subprocess.Popen[str]]]:
    """The same table on the wire-level simulators, GPIO on mock pins: the service tests'
    hardware is there (the in-process simulation has no GPIO sensors). Nobody plays
    (--no-players): with the simulated dealer a round could start before a service test, which
    is then refused, on a loaded machine."""
    yield from _daemon(tmp_path, "--simulate=pty", "--no-players", "--quiet")


def _daemon(tmp_path: Path, *extra: str) -> Iterator[tuple[Path, subprocess.Popen[str]]]:
    # pytest's tmp_path is root-only (0700): the runtime directory must be reachable by nobody.
    run = Path(tempfile.mkdtemp(prefix="tablectl-acl-"))
    run.chmod(0o755)
    toml = tmp_path / "table.toml"
    toml.write_text(config_text(tmp_path / "state", run))
    env = {**os.environ, "TABLECTL_VERIFICATION": str(tmp_path / "none.toml")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "controller.daemon", "--config", str(toml), *extra],
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=(tmp_path / "daemon.err").open("w"),
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                request(run / SOCKET_NAME, "status", timeout=2)
                break
            except (NotRunning, OSError):
                assert proc.poll() is None, (tmp_path / "daemon.err").read_text()
                assert time.monotonic() < deadline, "daemon did not answer"
                time.sleep(0.05)
        yield run / SOCKET_NAME, proc
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
        shutil.rmtree(run)


def as_user(path: Path, gid: int, cmd: str, args: dict[str, Any] | None = None) -> dict[str, Any]:
    """`request(cmd, args)` from a child running as uid nobody with primary group `gid` (and
    the socket's group as a supplementary one, so it may connect). Returns {"ok", "result" |
    "error"} as the child saw it."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: drop privileges for good, ask, report, leave without cleanup
        try:
            os.close(r)
            os.setgroups([_gid(TECH)])
            os.setgid(gid)
            os.setuid(NOBODY)
            try:
                out = {"ok": True, "result": request(path, cmd, args, timeout=10)}
            except RuntimeError as exc:
                out = {"ok": False, "error": str(exc)}
            except Exception as exc:  # e.g. a timeout: said, not an empty pipe
                out = {"ok": False, "error": f"client: {exc!r}"}
            os.write(w, json.dumps(out).encode())
        finally:
            os._exit(0)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        data = f.read()
    os.waitpid(pid, 0)
    return json.loads(data)


def test_a_technician_reads_but_may_not_act(daemon: tuple[Path, Any]) -> None:
    path, _ = daemon
    status = as_user(path, _gid(TECH), "status")
    assert status["ok"] and status["result"]["table_id"] == "ACL-1"
    assert as_user(path, _gid(TECH), "journal_tail", {"n": 5})["ok"]
    void = as_user(path, _gid(TECH), "dealer", {"action": "void", "data": {"reason": "x"}})
    assert not void["ok"]
    assert "permission denied" in void["error"] and SUPER in void["error"]
    wager = {"action": "wager", "data": {"box": 1, "player": "p1", "amount": 2000}}
    assert not as_user(path, _gid(TECH), "dealer", wager)["ok"]
    # Nothing reached the journal: the refusals are counted (and logged) instead.
    st = request(path, "status")
    assert st["events"] == 0
    assert st["control"]["refused_by_reason"]["permission"] == 2


def test_a_technician_runs_the_service_tests_but_nothing_that_acts(
    pty_daemon: tuple[Path, Any],
) -> None:
    # docs/operations.md "Who may do what": the hardware tests (TECHNICIAN) move no money and
    # change no configuration, so a technician alone can test a lamp or a button at 3 a.m.
    path, _ = pty_daemon
    tech = _gid(TECH)
    deadline = time.monotonic() + 30
    while "still starting" in (prompts := as_user(path, tech, "device_buttons")).get("error", ""):
        assert time.monotonic() < deadline, "the extensions did not start"
        time.sleep(0.1)
    assert prompts["ok"], prompts
    assert "press the chung button on box 1" in [p["prompt"] for p in
                                                 prompts["result"]["inputs"]]
    # Tests that reach the hardware: answered by the test itself, never by the permission
    # check (a Pai Gow table wires no lamps; the loopback reports the port that is not there).
    # Between rounds (nobody plays), so the walk is not refused for a round: FREE_PHASES.
    assert request(path, "status")["state"] in FREE_PHASES
    walk = as_user(path, tech, "device_lamp_walk", {"step_ms": 100})
    assert not walk["ok"] and walk["error"].startswith("lamp walk: sensors: no lamps wired")
    loop = as_user(path, tech, "device_loopback", {"port": "/dev/tablectl-none", "timeout_ms": 200})
    assert loop["ok"] and loop["result"]["port"] == "/dev/tablectl-none", loop
    assert not loop["result"]["ok"]
    # What acts on the table or its money stays the supervisor's.
    acting = [("device_test", {"device": "shaker"}),
              ("device_input", {"input": "chung1", "active": True}),
              ("device_fault", {"device": "shaker", "fault": "no_answer", "value": "on"}),
              ("verify_run", {}), ("meters_close_shift", {}),
              ("dealer", {"action": "void", "data": {"reason": "x"}})]
    for cmd, args in acting:
        got = as_user(path, tech, cmd, args)
        assert not got["ok"] and "permission denied" in got["error"], (cmd, got)
    counted = request(path, "status")["control"]["refused_by_reason"]["permission"]
    assert counted == len(acting)


def test_a_peer_in_neither_group_may_not_even_read(daemon: tuple[Path, Any]) -> None:
    path, _ = daemon
    got = as_user(path, _gid(NEITHER), "status")
    assert not got["ok"] and "permission denied" in got["error"]
    assert "in neither group" in got["error"]


def test_a_supervisor_acts_and_the_journal_names_who(
    daemon: tuple[Path, Any], tmp_path: Path
) -> None:
    path, _ = daemon
    wager = {"action": "wager", "data": {"box": 2, "player": "p7", "amount": 3000}}
    done = as_user(path, _gid(SUPER), "dealer", wager)
    assert done["ok"], done
    seq = done["result"]["seq"]
    # The same from root: root is always allowed, and named too.
    root_seq = request(path, "dealer", {"action": "no_more_bets"})["seq"]
    rows = {r["seq"]: r for r in request(path, "journal_tail", {"n": 10})}
    assert rows[seq]["kind"] == "dealer.wager"
    assert rows[seq]["data"]["operator"] == {"uid": NOBODY, "user": "nobody"}
    assert (
        rows[seq]["data"]["amount"] == 3000
    )  # the machine took the wager with `operator` beside it
    assert rows[root_seq]["data"]["operator"] == {"uid": 0, "user": "root"}
    # Every acting command is logged with its peer as well.
    log = (tmp_path / "daemon.err").read_text()
    assert "control command dealer " in log and "by user nobody (uid 65534, pid " in log
    # A client may not claim to be someone else.
    forged = {"action": "wager", "data": {"box": 3, "player": "p", "amount": 2000, "operator": {}}}
    with pytest.raises(RuntimeError, match="may not hold 'operator'"):
        request(path, "dealer", forged)


def test_a_wager_of_10_23_cents_is_refused_before_the_machine(daemon: tuple[Path, Any]) -> None:
    """This table has no maximum (a player bank, NSW 10.2): only the socket's bound stops it."""
    path, _ = daemon
    huge = {"action": "wager", "data": {"box": 1, "player": "p1", "amount": 10**23}}
    with pytest.raises(RuntimeError, match=r"integer outside \+-10000000000"):
        request(path, "dealer", huge)
    assert request(path, "status")["events"] == 0  # never journaled


def _raw(path: Path, payload: bytes) -> dict[str, Any] | None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(10)
        s.connect(str(path))
        s.sendall(payload)
        s.shutdown(socket.SHUT_WR)
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    return json.loads(data) if data else None


BAD_REQUESTS = [
    (b"not json\n", "not JSON"),
    (b'{"cmd": "status", "args": {"x": NaN}}\n', "finite"),
    (b'{"cmd": "status", "args": {"x": Infinity}}\n', "finite"),
    (b'{"cmd": "dealer", "args": {"action": "wager", "data": {"amount": 1e400}}}\n', "outside"),
    (b'{"cmd": "status", "args": {"a": ' + b"[" * 50 + b"]" * 50 + b"}}\n", "nested deeper"),
    (b'{"cmd": "status", "args": {}, "extra": 1}\n', "unknown request member"),
    (b'{"cmd": "void_everything"}\n', "unknown command"),
    (b'{"cmd": "status", "args": {"verbose": true}}\n', "unknown argument"),
    (b'{"cmd": "round_show", "args": {"number": "7"}}\n', "must be an integer"),
    (b'{"cmd": "round_show", "args": {"number": true}}\n', "got a boolean"),
    (b'{"cmd": "round_show", "args": {}}\n', "is required"),
    (b'{"cmd": "journal_tail", "args": {"n": 100000000}}\n', "1..1000"),
    (b'{"cmd": "dealer", "args": {"action": "' + b"a" * 2000 + b'"}}\n', "longer than 1024"),
    (b'{"cmd": "status", "args": {"x": "' + b"a" * 70000 + b'"}}\n', "longer than 65536"),
]


def test_every_malformed_request_is_refused_counted_and_survived(
    daemon: tuple[Path, subprocess.Popen[str]], tmp_path: Path
) -> None:
    path, proc = daemon
    for payload, expected in BAD_REQUESTS:
        reply = _raw(path, payload)
        assert reply is not None and reply["ok"] is False, payload[:60]
        assert expected in reply["error"], (payload[:60], reply)
    assert proc.poll() is None
    st = request(path, "status")
    assert st["events"] == 0
    refused = st["control"]["refused_by_reason"]
    assert refused["malformed"] + refused["too_large"] >= len(BAD_REQUESTS) - 1
    log = (tmp_path / "daemon.err").read_text()
    assert log.count("control request refused") >= len(BAD_REQUESTS) - 1


@pytest.mark.parametrize("game", ["paigow", "uth"])
def test_operator_beside_the_dealer_data_changes_nothing_and_replays_the_same(
    tmp_path: Path, game: str
) -> None:
    """Simulated play journals its dealer events; stepping them again with `operator` added to each
    gives the same states and effects (the machines ignore it), twice over (deterministic)."""
    import asyncio
    import random

    from controller.config.machine import build_machine
    from controller.daemon.build import build_devices, build_policy, simulation_config
    from controller.daemon.service import TableService
    from controller.journal import Journal
    from controller.logs import setup as log_setup
    from controller.rounds.base import Event

    state_dir = tmp_path / "state"
    cfg = simulation_config(game, "nsw", state_dir, state_dir / "run")
    rng = random.Random(11)
    service = TableService(
        cfg,
        build_machine(cfg),
        build_devices(cfg, rng),
        log_setup(journald=False),
        policy=build_policy(cfg, rng),
        autoplay=6,
        mode="simulation",
    )
    assert asyncio.run(service.run()) == 0
    journal = Journal.open(state_dir, table_id=cfg.table_id, game=cfg.game)
    stored = list(journal.iter_events())
    journal.close()
    dealer = [s for s in stored if s.event.kind.startswith("dealer.")]
    assert dealer, "simulated play made no dealer events"
    by = {"uid": 1001, "user": "alice"}

    def run(with_by: bool) -> tuple[Any, list[Any]]:
        machine = build_machine(cfg)
        state, said = machine.initial(), []
        for s in stored:
            data = dict(s.event.data)
            if with_by and s.event.kind.startswith("dealer."):
                data["operator"] = by
            state, effects = machine.step(state, Event(s.event.kind, data), s.now)
            said.append([e.as_json() for e in effects])
        return machine.to_json(state), said

    plain = run(False)
    assert run(True) == plain
    assert run(True) == run(True)


def test_only_a_supervisor_opens_and_closes_the_table_named_in_the_journal(
    daemon: tuple[Path, Any],
) -> None:
    """Issue 13: a table without a `table_closed` key switch (this one has none) is opened and
    closed by a supervisor over the socket; a technician may not."""
    path, _ = daemon
    refused = as_user(path, _gid(TECH), "table", {"action": "open"})
    assert not refused["ok"] and "permission denied" in refused["error"]
    assert request(path, "status")["state"] == "closed"
    opened = as_user(path, _gid(SUPER), "table", {"action": "open"})
    assert opened["ok"] and opened["result"]["refused"] is None, opened
    assert request(path, "status")["state"] == "betting"
    closed = as_user(path, _gid(SUPER), "table", {"action": "close"})
    assert closed["ok"] and closed["result"]["refused"] is None, closed
    rows = {r["seq"]: r for r in request(path, "journal_tail", {"n": 10})}
    for done, kind in ((opened, "table.open"), (closed, "table.close")):
        row = rows[done["result"]["seq"]]
        assert row["kind"] == kind and row["data"]["operator"] == {"uid": NOBODY, "user": "nobody"}


@pytest.mark.parametrize("argv", [["--no-players"],
                                  ["--simulate=pty", "--game", "paigow", "--no-players",
                                   "--autoplay", "3"]])
def test_no_players_is_refused_where_it_means_nothing(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    # Without --simulate nobody plays anyway; with --autoplay N the daemon would wait forever
    # for N rounds nobody plays.
    with pytest.raises(SystemExit) as exited:
        parse_args(argv)
    assert exited.value.code == 2
    assert "--no-players needs --simulate" in capsys.readouterr().err
    assert parse_args(["--simulate=pty", "--game", "paigow", "--no-players"]).no_players
