"""The money-safety soak (issue 12): linked tables as real `tablectld` processes, a real
Mosquitto (tests/mqtt_broker.py: TLS, the shipped ACL) and a real `tablectl-headoffice run`,
with the daemons SIGKILLed at random moments and the broker and head office killed and
restarted in between. tests/test_soak.py runs a short form in CI, bench/soak.py the long one.

The end state is checked, not the path: every journal verifies, round numbers are contiguous
and each round is reported once (tests/support/journal_check.check_journal), every table played on
after its last kill, and head office's ledger equals the journals to the cent, per table and
per pool (tests/support/link.assert_ledger_matches).
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from controller.config import TableConfig, validate_text
from controller.journal import Journal, verify_dir
from headoffice.ledger import Ledger
from tests.mqtt_broker import Broker, Pki
from tests.support.daemon import REPO, ask
from tests.support.journal_check import check_journal, status_from_journal
from tests.support.link import (
    POOL,
    assert_ledger_matches,
    headoffice_file,
    journal_totals,
    table_toml,
)

ENV = {**os.environ, "PYTHONPATH": str(REPO)}
# (table id, game): three UTH tables on one linked pool (UTH 11.x) and a Pai Gow table whose
# link carries round results only.
TABLES = (("U1", "uth"), ("U2", "uth"), ("U3", "uth"), ("PG1", "paigow"))


@dataclass
class SoakPlan:
    kills: int  # SIGKILLs per game, shared among its tables (UTH: 3 tables, Pai Gow: 1)
    outages: int  # broker and head-office kill/restart pairs, interleaved with the kills
    seed: int = 1
    # A daemon plays this long after it first answers, then SIGKILL; a game's n tables are
    # each killed kills/n times and play up to n times longer, so every game's kills take
    # about as long and a UTH table (its simulated shuffler shuffles at every start) deals.
    alive_s: tuple[float, float] = (0.0, 2.5)
    startup_kills: float = 0.2  # this share of the kills land during start-up instead
    down_s: tuple[float, float] = (0.5, 3.0)  # how long the broker or head office stays dead
    pace_s: float = 0.01  # seconds between simulated players' actions
    resume_rounds: int = 3  # rounds each table must play after its last kill


@dataclass
class Process:
    """A child process we may kill at any moment; its stderr goes to a log file."""

    name: str
    argv: list[str]
    log: Path
    proc: subprocess.Popen[bytes] | None = None
    kills: int = 0
    _err: TextIO | None = None

    def spawn(self) -> None:
        assert not self.alive(), f"{self.name} already running"
        self._err = self.log.open("a")
        self.proc = subprocess.Popen(self.argv, cwd=REPO, env=ENV, stdout=subprocess.DEVNULL,
                                     stderr=self._err)

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def check_alive(self) -> None:
        """A process that left before we killed it crashed on its own: that fails the soak."""
        if self.proc is not None and self.proc.poll() is not None:
            raise AssertionError(f"{self.name} exited by itself with {self.proc.returncode}:"
                                 f" {self.log.read_text(errors='replace')[-3000:]}")

    def kill(self) -> None:
        self.check_alive()
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)
        self.kills += 1
        self._close_log()

    def terminate(self, timeout: float = 20) -> bool:
        """SIGTERM, as systemd stops a unit: True if it exited 0 in time. If it hangs, SIGKILL
        (systemd's TimeoutStopSec does the same) and False; any other exit fails the soak."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)
            return False
        finally:
            self._close_log()
        assert code == 0, f"{self.name} exited {code}: {self.log.read_text(errors='replace')}"
        return True

    def abandon(self) -> None:
        """Gone, whatever it was doing (clean-up after a failure: not counted as a kill)."""
        if self.alive():
            assert self.proc is not None
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)
        self._close_log()

    def _close_log(self) -> None:
        if self._err is not None:
            self._err.close()
            self._err = None


@dataclass
class Table:
    """One table daemon: `id` and `cfg` are what tests/support/link.py reads its journal by."""

    id: str
    game: str
    root: Path
    cfg: TableConfig
    toml: Path
    pace_s: float
    process: Process = field(init=False)
    startup_kills: int = 0

    def __post_init__(self) -> None:
        self.process = Process(self.id, [], self.root / "daemon.err")

    def spawn(self, *, play: bool) -> None:
        """With players (--simulate: simulated devices, players and dealer) or without
        (--config alone: the config's simulated devices, nobody at the table)."""
        argv = [sys.executable, "-X", "faulthandler", "-m", "controller.daemon",
                "--config", str(self.toml), "--quiet"]
        if play:
            argv += ["--simulate", "--autoplay", "0", "--pace", str(self.pace_s)]
        self.process.argv = argv
        self.process.spawn()

    def status(self) -> dict[str, Any] | None:
        try:
            return ask(self.root, "status")  # type: ignore[no-any-return]
        except Exception:  # not up yet, or just killed: the caller polls again
            return None

    def journal_round(self) -> int:
        with Journal.open(self.cfg.service.state_dir, table_id=self.id, game=self.game) as j:
            return j.last_round_number


@dataclass
class Figures:
    kills: dict[str, int] = field(default_factory=dict)  # per game
    startup_kills: int = 0  # of which before the daemon answered (all games)
    broker_kills: int = 0
    headoffice_kills: int = 0
    rounds: dict[str, tuple[int, int]] = field(default_factory=dict)  # completed, voided
    messages: int = 0
    wagered: int = 0  # cents into the pool, increments less cancellations
    paid: int = 0  # cents of jackpot awards
    hits: int = 0
    wall_s: float = 0.0
    # Stops that needed SIGKILL after SIGTERM hung (docs/security.md: the link's tasks can
    # swallow a cancellation on Python 3.11); the journal is crash-safe either way.
    sigterm_hangs: int = 0
    refused: dict[str, int] = field(default_factory=dict)  # messages head office refused

    def lines(self) -> list[str]:
        kills = ", ".join(f"{g} {n}" for g, n in sorted(self.kills.items()))
        rounds = ", ".join(f"{t} {c}+{v}" for t, (c, v) in sorted(self.rounds.items()))
        return [
            f"SIGKILLs: {kills} ({self.startup_kills} in start-up); broker killed"
            f" {self.broker_kills}x, head office killed {self.headoffice_kills}x",
            f"rounds (completed+voided): {rounds}",
            f"ledger = journals: {self.messages} messages, {self.wagered} cents wagered into"
            f" pool {POOL}, {self.hits} hits paid {self.paid} cents",
            f"refused by head office (recorded in sequence, not applied): {self.refused or 0}",
            f"SIGTERM stops that hung (then SIGKILL): {self.sigterm_hangs}",
            f"wall time {self.wall_s:.0f} s",
        ]


class Soak:
    def __init__(self, root: Path, plan: SoakPlan) -> None:
        self.root = root
        self.plan = plan
        self.rng = random.Random(plan.seed)
        self.broker = Broker(root / "broker", Pki(root / "pki"))
        self.db = root / "ledger.db"
        ho_toml = headoffice_file(self.broker, root / "headoffice.toml", str(self.db), {
            t: POOL if game == "uth" else None for t, game in TABLES})
        self.headoffice = Process("head office", [
            sys.executable, "-m", "headoffice.cli", "--config", str(ho_toml), "run",
        ], root / "headoffice.err")
        self.tables: list[Table] = []
        for table_id, game in TABLES:
            # Started without --simulate for the drain, an unverified program must be allowed
            # to run by its config (development = true), else it stays out of service.
            text = table_toml(table_id, root / table_id, self.broker, game=game).replace(
                "[service]\n", "[service]\ndevelopment = true\n", 1)
            toml = root / f"{table_id}.toml"
            (root / table_id).mkdir(exist_ok=True)
            toml.write_text(text)
            self.tables.append(Table(table_id, game, root / table_id,
                                     validate_text(text, str(toml)), toml, plan.pace_s))
        self.figures = Figures()
        self._errors: list[BaseException] = []

    def run(self) -> Figures:
        start = time.monotonic()
        self.broker.start()
        self.headoffice.spawn()
        try:
            self._chaos()
            self._resume()
            self._drain()
        finally:
            for p in (self.headoffice, *(t.process for t in self.tables)):
                p.abandon()  # only after a failure is anything still running
            self.broker.stop()
        self._check()
        self.figures.wall_s = time.monotonic() - start
        return self.figures

    # -- phase 1: kills ---------------------------------------------------------------------
    def _chaos(self) -> None:
        """Every table killed `kills` times at random moments, each in its own thread, while
        this thread kills and restarts the broker and head office `outages` times each."""
        threads = [threading.Thread(target=self._guard, args=(self._kill_loop, t,
                                                              random.Random(self.rng.random())))
                   for t in self.tables]
        for th in threads:
            th.start()
        # Spread the outages over the time the kills take (alive_s on average a kill).
        span = max(self._kills_of(t) * sum(self._alive_of(t)) / 2 for t in self.tables)
        gap = span / (2 * self.plan.outages + 1)
        for i in range(2 * self.plan.outages):
            time.sleep(self.rng.uniform(0.5, 1.5) * gap)
            if self._errors:
                break
            if i % 2 == 0:
                self.broker.kill()
                self.figures.broker_kills += 1
                time.sleep(self.rng.uniform(*self.plan.down_s))
                self.broker.start()
            else:
                self.headoffice.kill()
                self.figures.headoffice_kills += 1
                time.sleep(self.rng.uniform(*self.plan.down_s))
                self.headoffice.spawn()
        for th in threads:
            th.join()
        if self._errors:
            raise self._errors[0]
        for t in self.tables:
            self.figures.kills[t.game] = self.figures.kills.get(t.game, 0) + t.process.kills
            self.figures.startup_kills += t.startup_kills

    def _guard(self, fn: Any, *args: Any) -> None:
        try:
            fn(*args)
        except BaseException as exc:  # handed to the main thread, which raises it
            self._errors.append(exc)

    def _kills_of(self, table: Table) -> int:
        same_game = sum(t.game == table.game for t in self.tables)
        return -(-self.plan.kills // same_game)  # rounded up: at least `kills` per game

    def _alive_of(self, table: Table) -> tuple[float, float]:
        lo, hi = self.plan.alive_s
        return lo, hi * sum(t.game == table.game for t in self.tables)

    def _kill_loop(self, table: Table, rng: random.Random) -> None:
        """Each life: killed during start-up (a fifth of them, 0-1.5 s after exec), else at a
        random moment of play after the daemon first answers on its control socket (a loaded
        machine takes seconds to start a Python process: a timer from exec alone would land
        nearly every kill in start-up)."""
        for _ in range(self._kills_of(table)):
            if self._errors:
                return
            table.spawn(play=True)
            if rng.random() < self.plan.startup_kills:
                time.sleep(rng.uniform(0, 1.5))
                table.startup_kills += 1
            else:
                deadline = time.monotonic() + 60
                while table.status() is None and time.monotonic() < deadline:
                    table.process.check_alive()
                    time.sleep(0.05)
                time.sleep(rng.uniform(*self._alive_of(table)))
            table.process.kill()

    # -- phase 2: every table plays on --------------------------------------------------------
    def _resume(self) -> None:
        """Each table, restarted after its last kill with everything up, plays on."""
        before = {t.id: t.journal_round() for t in self.tables}
        for t in self.tables:
            t.spawn(play=True)
        self._wait(lambda: all((t.status() or {}).get("round", 0) >= before[t.id]
                               + self.plan.resume_rounds for t in self.tables), 120,
                   "every table to play on", self.tables)
        self._stop(self.tables)

    # -- phase 3: nobody plays; the outboxes drain ------------------------------------------------
    def _drain(self) -> None:
        """Each table without players until head office has acknowledged its whole outbox and
        answered every hit; a message journaled after the last look (a pool timer) is sent on
        the next start, so this repeats until a stopped table's journal has nothing pending."""
        for _ in range(5):
            waiting = [t for t in self.tables if journal_totals(t)["pending"]
                       or self._pending_hits(t)]
            if not waiting:
                return
            for t in waiting:
                t.spawn(play=False)
            self._wait(lambda w=waiting: all(self._drained(t) for t in w), 120,
                       "outboxes drained", waiting)
            self._stop(waiting)
        raise AssertionError("outboxes still not drained after 5 starts")

    def _stop(self, tables: list[Table]) -> None:
        for t in tables:
            if not t.process.terminate():
                self.figures.sigterm_hangs += 1

    def _drained(self, t: Table) -> bool:
        t.process.check_alive()
        s = t.status()
        if s is None or not s["link"]["connected"]:
            return False
        return s["link"]["outbox_pending"] == 0 and not (s.get("pool") or {}).get("pending")

    def _pending_hits(self, t: Table) -> bool:
        return bool(t.game == "uth" and (status_from_journal(t.cfg).get("pool") or {}).get(
            "pending"))

    def _wait(self, cond: Any, timeout: float, what: str, tables: list[Table]) -> None:
        """Poll `cond`; head office and `tables` (the ones started for it) must stay up."""
        deadline = time.monotonic() + timeout
        while not cond():
            for p in (self.headoffice, *(t.process for t in tables)):
                p.check_alive()
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}")
            time.sleep(0.2)

    # -- the end state ----------------------------------------------------------------------
    def _check(self) -> None:
        for t in self.tables:
            check_journal(t.cfg.service.state_dir, t.id, t.game)  # verifies, rounds once each
            report = verify_dir(t.cfg.service.state_dir)
            self.figures.rounds[t.id] = (report.rounds_completed, report.rounds_voided)
        ledger = Ledger.open(str(self.db))
        try:
            totals = assert_ledger_matches(ledger, self.tables)
            self.figures.wagered, self.figures.paid = totals["in"], totals["paid"]
            self.figures.hits = totals["pool"].hits
            self.figures.messages = sum(journal_totals(t)["messages"] for t in self.tables)
            for row in ledger.db.execute("SELECT table_id, count(*) AS n FROM messages"
                                         " WHERE status <> 'applied' GROUP BY table_id"):
                self.figures.refused[row["table_id"]] = row["n"]
        finally:
            ledger.close()


def run_soak(root: Path, plan: SoakPlan) -> Figures:
    with contextlib.suppress(FileExistsError):
        root.mkdir(parents=True)
    return Soak(root, plan).run()
