"""`tablectl status` tells the truth (issue 28, the technician's item 2): the shaker unplugged
mid-round leaves the round stuck in shaking; status, selftest and devices list say so with what
to do next, and status exits 4 (in service, needs a person) until the round is voided and the
shaker is back, so `tablectl status && ...` means healthy. And `tablectl logs --round N` /
`--device shaker` find the round's alarm lines (item 3). A real tablectld --simulate=pty, no
simulated players: the test is the dealer."""

from __future__ import annotations

import argparse
import asyncio
import logging
import subprocess
import sys
from pathlib import Path

import pytest

from controller.cli.attention import (
    EXIT_HEALTHY,
    EXIT_NEEDS_ATTENTION,
    EXIT_NOT_RUNNING,
    EXIT_OUT_OF_SERVICE,
    EXIT_STARTING,
)
from controller.cli.main import typed_command
from controller.cli.show import effect_text
from controller.cli.table_cmd import refusal_text, status_exit
from controller.daemon.attention import Alarms, attention, stuck_round
from controller.daemon.effects import Effects
from controller.daemon.stats import Stats
from controller.logs import FIELDS_ATTR
from controller.rounds.base import Effect
from tests.support.daemon import REPO, ask, start_daemon, wait_ready
from tests.support.devices import wait_until

CLI = [sys.executable, "-m", "controller.cli.main"]


def tablectl(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args, "--runtime-dir", str(tmp_path / "run")], cwd=REPO,
                          capture_output=True, text=True, timeout=60)  # fmt: skip


def test_an_alarm_is_active_until_its_round_ends_and_repeats_are_counted() -> None:
    alarms = Alarms()
    alarms.raised({"text": "shaker fault: x", "severity": "warning"}, 3, "t1")
    alarms.raised({"text": "shaker fault: x", "severity": "warning"}, 3, "t2")
    alarms.raised({"text": "deck 2 bad"}, 4, "t3")
    assert [(a["round"], a["times"], a["last_utc"]) for a in alarms.active] == [
        (3, 2, "t2"), (4, 1, "t3")]
    alarms.round_ended(3)
    assert [a["round"] for a in alarms.active] == [4]


def test_an_unplugged_shuffler_warns_once_not_at_every_retry() -> None:
    """The shuffler's every failed retry raises the machine's alarm again (`deck 2
    reshuffled`); the log says it once as a warning, the repeats at info, counted."""
    log = logging.getLogger("tablectl.test_attention")
    log.propagate = False
    seen: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = seen.append  # type: ignore[method-assign]
    log.addHandler(handler)
    log.setLevel(logging.DEBUG)
    effects = Effects({}, log, Stats(), lambda _: None)
    alarm = Effect("alarm", {"severity": "technician", "rule": "12.1",
                             "text": "shuffler: disconnected; deck 2 reshuffled"})
    for at in ("t1", "t2", "t3"):
        asyncio.run(effects.run(alarm, round_no=7, source="shuffler.fault", utc=at))
    assert [(r.levelno, r.getMessage()) for r in seen] == [
        (logging.WARNING, "ALARM shuffler: disconnected; deck 2 reshuffled"),
        (logging.INFO, "alarm repeated (2 times): shuffler: disconnected; deck 2 reshuffled"),
        (logging.INFO, "alarm repeated (3 times): shuffler: disconnected; deck 2 reshuffled"),
    ]
    assert getattr(seen[0], FIELDS_ATTR)["round"] == 7
    assert effects.alarms.active[0]["times"] == 3
    # A refused action's alarm answers whoever acted: logged, not an active alarm.
    refused = Effect("alarm", {"severity": "warning", "refused": True,
                               "text": "dealer.shake refused: not accepted in state betting"})
    asyncio.run(effects.run(refused, round_no=8, source="dealer.shake", utc="t4"))
    assert seen[-1].getMessage() == "ALARM dealer.shake refused: not accepted in state betting"
    assert [a["round"] for a in effects.alarms.active] == [7]


def test_a_refusal_names_the_command_typed_not_the_request() -> None:
    args = argparse.Namespace(typed=typed_command(["meters", "close-shift", "--json"]))
    said = ("permission denied: 'meters_close_shift' needs group tablectl-super; user tech"
            " (uid 1001) is a technician (read-only)")
    assert refusal_text(args, "meters_close_shift", said) == (
        "permission denied: `tablectl meters close-shift` needs group tablectl-super; user tech"
        " (uid 1001) is a technician (read-only)")
    # Any other refusal is the daemon's words as they are.
    assert refusal_text(args, "meters", "out of service") == "out of service"


def test_watch_shows_the_machines_amounts_in_dollars() -> None:
    said = effect_text({"kind": "log", "data": {"text": "wager of p2 on box 2: 12000 c"}})
    assert said == "wager of p2 on box 2: $120.00"
    assert effect_text({"kind": "alarm", "data": {"text": "5 cards, 3 c short"}}) == \
        "ALARM 5 cards, $0.03 short"


def test_a_stuck_round_is_one_that_waits_for_a_device_in_fault() -> None:
    shaking = {"state": "shaking", "round": 3, "fault": None}
    assert stuck_round("paigow", shaking, []) is None
    stuck = stuck_round("paigow", shaking, ["shaker"])
    assert stuck is not None and stuck["round"] == 3
    assert any("tablectl dealer shake" in s for s in stuck["next"])
    assert any("tablectl dealer void" in s for s in stuck["next"])
    # A faulty shaker after the shake is a device fault, not a stuck round.
    assert stuck_round("paigow", {"state": "announced", "round": 3}, ["shaker"]) is None
    assert stuck_round("uth", {"state": "dealing", "round": 9}, ["shuffler"]) is not None
    assert stuck_round("uth", {"state": "betting", "round": 9}, ["shuffler"]) is None
    # While the daemon starts its devices are not up yet: STARTING, not a device fault.
    down = {"shaker": {"ok": False, "state": "offline", "last_error": None}}
    assert attention("paigow", shaking, down, [], None, starting=True)["healthy"]
    assert attention("paigow", shaking, down, [], None)["stuck"] is not None


@pytest.mark.slow
def test_status_shows_a_round_stuck_by_an_unplugged_shaker_and_exits_4(tmp_path: Path) -> None:
    proc = start_daemon(tmp_path, "--simulate=pty", "--game", "paigow", "--no-players",
                        "--quiet")  # fmt: skip
    try:
        wait_ready(tmp_path, proc)
        healthy = tablectl(tmp_path, "status")
        assert healthy.returncode == EXIT_HEALTHY, healthy.stdout + healthy.stderr
        assert "NEEDS ATTENTION" not in healthy.stdout

        ask(tmp_path, "device_fault", {"device": "shaker", "fault": "unplug"})
        wait_until(lambda: not ask(tmp_path, "status")["devices"]["shaker"]["ok"])
        ask(tmp_path, "dealer", {"action": "wager",
                                 "data": {"box": 2, "amount": 1000, "player": "p2",
                                          "card": "SIM-p2"}})
        ask(tmp_path, "dealer", {"action": "no_more_bets"})
        wait_until(lambda: ask(tmp_path, "status")["attention"]["stuck"] is not None)

        for args in (["status"], ["selftest"], ["devices", "list"]):
            res = tablectl(tmp_path, *args)
            assert "round 1 is stuck in shaking" in res.stdout, (args, res.stdout)
            assert "tablectl dealer shake" in res.stdout and "tablectl dealer void" in res.stdout
            assert "alarm 1 (round 1," in res.stdout and "shaker fault" in res.stdout
        res = tablectl(tmp_path, "status")
        assert res.returncode == EXIT_NEEDS_ATTENTION, res.stdout + res.stderr
        assert subprocess.run(["sh", "-c", f"{' '.join(CLI)} status --runtime-dir"
                               f" {tmp_path / 'run'} >/dev/null && echo healthy"],
                              cwd=REPO, capture_output=True, text=True).stdout == ""

        # The dealer voids; the round's alarms are history, but the shaker is still unplugged.
        ask(tmp_path, "dealer", {"action": "void", "data": {"reason": "shaker unplugged"}})
        wait_until(lambda: ask(tmp_path, "status")["attention"]["stuck"] is None)
        att = ask(tmp_path, "status")["attention"]
        assert att["alarms"] == [] and [f["device"] for f in att["device_faults"]] == ["shaker"]
        assert tablectl(tmp_path, "status").returncode == EXIT_NEEDS_ATTENTION

        # The voided round's alarm lines, by round and by device.
        by_round = tablectl(tmp_path, "logs", "--round", "1")
        assert by_round.returncode == 0 and "ALARM shaker fault" in by_round.stdout, by_round
        by_device = tablectl(tmp_path, "logs", "--device", "shaker")
        assert "ALARM shaker fault" in by_device.stdout, by_device.stdout

        ask(tmp_path, "device_fault", {"device": "shaker", "fault": "replug"})
        wait_until(lambda: ask(tmp_path, "status")["attention"]["healthy"], 15)
        assert tablectl(tmp_path, "status").returncode == EXIT_HEALTHY
        # Readable (item 4): status explains the software line; the journal's events and the
        # dealer's answers in words and dollars, not JSON and cents.
        assert "software not_configured: not checked: no manifest configured" in tablectl(
            tmp_path, "status").stdout
        tail = tablectl(tmp_path, "journal", "tail", "-n", "50").stdout
        assert "dealer.wager amount=$10.00 box=2 card=SIM-p2 player=p2" in tail, tail
        assert '{"' not in tail, tail
        wager = tablectl(tmp_path, "dealer", "wager", "box=3", "amount=2500", "player=p3",
                         "card=SIM-p3")  # NSW 9.1, 16.1: the simulated patron service's card
        assert "wager of p3 on box 3: $25.00" in wager.stdout and " c\n" not in wager.stdout
        # The self-test's sensors and a device test as lines, no braces or JSON.
        selftest = tablectl(tmp_path, "selftest").stdout
        assert "{" not in selftest and "\n        chung1: pin 4, active no" in selftest, selftest
        shaken = tablectl(tmp_path, "devices", "test", "shaker")
        assert shaken.stdout.startswith("shaker: test OK")
        assert "{" not in shaken.stdout and '"' not in shaken.stdout, shaken.stdout
    finally:
        proc.terminate()
        proc.communicate(timeout=30)
    assert tablectl(tmp_path, "status").returncode == EXIT_NOT_RUNNING


def test_the_documented_exit_codes_of_status_are_the_clis() -> None:
    """docs/operations.md "Exit codes" is what a script writer reads: its status row must say
    what each code the CLI returns means."""
    text = (REPO / "docs" / "operations.md").read_text(encoding="utf-8")
    table = text.split("### Exit codes", 1)[1].split("\n\n", 2)[1]
    header = [c.strip() for c in table.splitlines()[0].strip("|").split("|")]
    row = next(r for r in table.splitlines() if r.startswith("| `status` |"))
    cells = dict(zip(header, (c.strip() for c in row.strip("|").split("|")), strict=True))
    assert cells[str(EXIT_HEALTHY)].startswith("in service, nothing needs a person")
    assert cells[str(EXIT_OUT_OF_SERVICE)] == "out of service"
    assert cells[str(EXIT_NOT_RUNNING)] == "tablectld not running"
    assert cells[str(EXIT_NEEDS_ATTENTION)].startswith("in service, but an active alarm")
    assert cells[str(EXIT_STARTING)].startswith("tablectld still starting")


def test_an_alarm_clears_when_its_device_is_back_or_when_acknowledged() -> None:
    """Issue 28 (second pass, 1): an alarm raised between rounds must not hold status at 4
    until a round ends. A device's alarm raised while it was out of service clears itself once
    it is back; any other is acknowledged, a surveillance alarm by a supervisor only."""
    alarms = Alarms()
    alarms.raised({"text": "shuffler: disconnected", "severity": "technician"}, None, "t1",
                  "shuffler", device_ok=False)
    alarms.raised({"text": "jam", "severity": "technician"}, None, "t2", "shuffler",
                  device_ok=True)
    alarms.raised({"text": "deck short", "severity": "surveillance"}, None, "t3", "shuffler",
                  device_ok=False)
    ids = [a["id"] for a in alarms.active]
    assert ids == [1, 2, 3]
    assert "clears itself once shuffler is back" in alarms.active[0]["clears"]
    assert "a supervisor" in alarms.active[2]["clears"]
    alarms.clear_recovered({"shuffler": {"ok": False}})
    assert [a["id"] for a in alarms.active] == [1, 2, 3]
    alarms.clear_recovered({"shuffler": {"ok": True}})
    assert [a["id"] for a in alarms.active] == [2, 3]  # the jam was not about being offline
    assert alarms.cleared[-1]["cleared"] == "its device is back in service"
    with pytest.raises(PermissionError):
        alarms.acknowledge([3], "tech (uid 1001)", supervisor=False)
    with pytest.raises(KeyError):
        alarms.acknowledge([1], "tech (uid 1001)", supervisor=False)  # already cleared
    # --all as a technician: the technician's alarms, not the surveillance one.
    done = alarms.acknowledge(None, "tech (uid 1001)", supervisor=False, note="cleared jam")
    assert [a["id"] for a in done] == [2] and [a["id"] for a in alarms.active] == [3]
    assert alarms.cleared[-1]["cleared"] == "acknowledged by tech (uid 1001): cleared jam"
    alarms.acknowledge([3], "sup (uid 1002)", supervisor=True)
    assert alarms.active == []
    healthy = attention("uth", {"state": "closed"}, {}, alarms.active, None)
    assert healthy["healthy"]


@pytest.mark.slow
def test_alarms_clear_themselves_or_are_acknowledged_through_the_cli(tmp_path: Path) -> None:
    proc = start_daemon(tmp_path, "--simulate=pty", "--game", "paigow", "--no-players",
                        "--quiet")  # fmt: skip
    try:
        wait_ready(tmp_path, proc)
        ask(tmp_path, "device_fault", {"device": "shaker", "fault": "unplug"})
        wait_until(lambda: not ask(tmp_path, "status")["devices"]["shaker"]["ok"])
        ask(tmp_path, "dealer", {"action": "wager",
                                 "data": {"box": 2, "amount": 1000, "player": "p2",
                                          "card": "SIM-p2"}})
        ask(tmp_path, "dealer", {"action": "no_more_bets"})
        wait_until(lambda: ask(tmp_path, "status")["attention"]["alarms"] != [])
        status = tablectl(tmp_path, "status").stdout
        assert "to clear: clears itself once shaker is back in service; or tablectl alarms" \
            " ack 1" in status, status
        listed = tablectl(tmp_path, "alarms")
        assert listed.returncode == 0 and "alarm 1 (round 1," in listed.stdout, listed

        # The shaker is back: its alarm clears itself; the round still waits for a shake.
        ask(tmp_path, "device_fault", {"device": "shaker", "fault": "replug"})
        wait_until(lambda: ask(tmp_path, "status")["attention"]["alarms"] == [], 15)
        listed = tablectl(tmp_path, "alarms").stdout
        assert "no active alarms" in listed and "cleared: its device is back in service" \
            in listed, listed

        # Unplugged again and shaken: a new alarm, acknowledged by hand, logged with who.
        ask(tmp_path, "device_fault", {"device": "shaker", "fault": "unplug"})
        wait_until(lambda: not ask(tmp_path, "status")["devices"]["shaker"]["ok"])
        ask(tmp_path, "dealer", {"action": "shake"})
        wait_until(lambda: ask(tmp_path, "status")["attention"]["alarms"] != [])
        number = ask(tmp_path, "status")["attention"]["alarms"][0]["id"]
        assert tablectl(tmp_path, "alarms", "ack").returncode == 2  # neither N nor --all
        missing = tablectl(tmp_path, "alarms", "ack", "99")
        assert missing.returncode == 2 and "no active alarm 99" in missing.stderr, missing
        acked = tablectl(tmp_path, "alarms", "ack", str(number), "--note", "cable reseated")
        assert acked.returncode == 0 and f"acknowledged alarm {number}" in acked.stdout, acked
        assert ask(tmp_path, "status")["attention"]["alarms"] == []
        logged = tablectl(tmp_path, "logs", "--round", "1", "--level", "info").stdout
        assert f"alarm {number} acknowledged by root (uid 0) (cable reseated)" in logged, logged
    finally:
        proc.terminate()
        proc.communicate(timeout=30)


def test_a_daemon_still_starting_is_not_healthy(tmp_path: Path) -> None:
    """Issue 28 (second pass, 2): before its devices and journal are up the daemon answers
    status with `ready: false`; status says `starting` and exits 5, never 0 (healthy)."""
    import random

    from controller.config.machine import build_machine
    from controller.daemon.build import build_devices, simulation_config
    from controller.daemon.commands import TableCommands
    from controller.daemon.service import TableService

    state = tmp_path / "state"
    cfg = simulation_config("paigow", "nsw", state, state / "run")
    log = logging.getLogger("tablectl.test_starting")
    service = TableService(cfg, build_machine(cfg), build_devices(cfg, random.Random(3)), log)
    st = asyncio.run(TableCommands(service).status({}))
    assert st["ready"] is False and st["state"] == "starting"
    assert status_exit(st) == EXIT_STARTING
    assert status_exit({**st, "ready": True, "attention": {"healthy": True}}) == EXIT_HEALTHY
    # The table plays on with a journal archive missing or altered, but a person must see to
    # it (E106, docs/operations.md "An archive missing or altered"): not healthy.
    assert status_exit({**st, "ready": True, "attention": {"healthy": True},
                        "archive_faults": ["segment 1: archive missing"]}) == EXIT_NEEDS_ATTENTION
    # Out of service while starting (a journal that cannot open) is out of service.
    assert status_exit({**st, "out_of_service": "journal"}) == EXIT_OUT_OF_SERVICE
