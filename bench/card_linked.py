"""bench_card.py --linked: what a UTH table linked to head office writes with retention on.

    sudo .venv/bin/python bench/bench_card.py --linked [--segment-rounds 2000]
        [--keep-rounds 2000] [--rounds N] [--no-card]
    sudo .venv/bin/python bench/bench_card.py --linked --idle 60 [--no-card]

A table without head office (every bench_card case, bench_year's long run) archives its closed
segments but never hears them acknowledged, so it never prunes, and the link's own writes
(outbox acks, pool values) never happen. --linked runs the real thing: a Mosquitto with TLS
(tests/mqtt_broker.py), a `headoffice.cli run` worker process with a SQLite ledger (both off
the card, as at head office) enrolling the table, and the daemon as a process from a linked UTH
config file (tests/support/link.py) with `[journal] segment_rounds` and `keep_rounds`, at full
speed, its upkeep every second (TABLECTL_JOURNAL_UPKEEP_S): each segment closed is archived,
sent, acknowledged, and the oldest pruned once keep_rounds follow it. It warms up until a
segment was pruned, plays half a segment more (the window then starts between two prunes),
then measures --rounds rounds (default: one segment's worth, so one close, archive, ack and
prune of each kind fall in it in the steady state) and prints the segments closed, archived,
acknowledged and pruned inside the window beside the bytes per round. The baseline, first, in
the same run: the same config with `[link] enabled = false` (archives, never prunes), the same
warm-up length in rounds and window. --no-card: no loop device (no root needed), the state
directory in /var/tmp, the process counter only (what the test runs).

--idle S: no players instead: what a linked table writes a minute while nobody plays, head
office republishing its pool every second (the link journals the same value every 60 s,
controller/link/pool_values.py; before 2026-11-27 every ~2 s, fsync'd), over S seconds
after IDLE_SETTLE_S.

--segments-every S (default 1): the link sends the oldest archived segment not acknowledged on
connecting, then every 60 s (LinkOptions.segments_every_s, which neither the config nor the
environment sets). On a table at 30 s a round that is within 2 rounds of the archive; at full
speed (~50 rounds/s here) it is ~3,000 rounds, more than a segment: acks came in bursts a minute
apart, a window of one segment could hold no prune, and the first prune took a minute. So the
bench starts the daemon through LAUNCH, which sets it to S seconds (0: the link's own 60 s).
What an ack and a prune write is the same either way; only when they come moves.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from bench.bench_card import (
    DATA_MOUNT_OPTS,
    ROOT,
    SECTOR,
    Case,
    card,
    sectors_written,
    stop,
    syncfs,
    wait_round,
    wait_started,
    write_bytes,
)

LINKED_TABLE = "T1"  # enrolled in the head office started here


@dataclass(frozen=True)
class Segments:
    """The journal's segment rows by how far each went (each count includes the later stages)."""

    closed: int = 0
    archived: int = 0
    acknowledged: int = 0
    pruned: int = 0

    def __sub__(self, other: Segments) -> Segments:
        return Segments(self.closed - other.closed, self.archived - other.archived,
                        self.acknowledged - other.acknowledged, self.pruned - other.pruned)

    def text(self) -> str:
        return (f"closed {self.closed} archived {self.archived} "
                f"acknowledged {self.acknowledged} pruned {self.pruned}")


def segment_counts(state: Path) -> Segments:
    """Read-only, beside the daemon (WAL: it never waits on us); no key, so no MACs checked:
    only which rows got how far."""
    import sqlite3

    from controller.journal.schema import JOURNAL_FILE

    path = state / JOURNAL_FILE
    if not path.exists():
        return Segments()
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10)
    try:
        if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'segments'").fetchone() is None:
            return Segments()
        row = conn.execute("SELECT count(*), count(archive), count(ack_utc), count(pruned_utc)"
                           " FROM segments").fetchone()
    finally:
        conn.close()
    return Segments(*row)


@dataclass
class LinkedResult:
    name: str
    warm: int  # rounds played before the window
    rounds: int
    seconds: float
    dev: int | None  # None: --no-card
    dev_sync: int | None
    proc: int
    window: Segments  # segment rows that went a stage further inside the window
    total: Segments  # at the window's end


@contextlib.contextmanager
def head_office(work: Path) -> Iterator[Path]:
    """A Mosquitto with TLS and the ACL, and a head-office worker process with a SQLite ledger
    enrolling LINKED_TABLE; yields the table's config file (linked, as tests/support/link.py
    writes it). Both stopped in `finally`, whatever happened."""
    from tests import mqtt_broker
    from tests.support.link import POOL, headoffice_file, table_toml

    broker = mqtt_broker.Broker(work / "broker", mqtt_broker.Pki(work / "pki"))
    ho: subprocess.Popen[bytes] | None = None
    try:
        broker.start()
        conf = headoffice_file(broker, work / "headoffice.toml", str(work / "ledger.db"),
                               {LINKED_TABLE: POOL})
        with open(work / "headoffice.err", "wb") as err:
            ho = subprocess.Popen([sys.executable, "-m", "headoffice.cli", "--config", str(conf),
                                   "run"], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=err)
        table = work / "table.toml"
        table.write_text(table_toml(LINKED_TABLE, work / "table", broker))
        yield table
    finally:
        stop(ho, 20)
        broker.stop()


# `python -m controller.daemon` with the link's LinkOptions.segments_every_s (an archived,
# unacknowledged segment sent again; hourly-upkeep tables need no other knob, so the product reads
# it from nowhere) set from argv[1]; the same process, so /proc/PID/io is the daemon's.
LAUNCH = """
import functools, runpy, sys
from controller.link import extension as link
link.LinkOptions = functools.partial(link.LinkOptions, segments_every_s=float(sys.argv.pop(1)))
runpy.run_module("controller.daemon", run_name="__main__", alter_sys=True)
"""


def linked_daemon(conf: Path, state: Path, runtime: Path, log: Path,
                  segments_every: float, players: bool = True) -> subprocess.Popen[bytes]:
    """The daemon from `conf`, simulated devices and players, full speed (`players=False`: no
    players, no rounds: an idle table). Upkeep every second (hourly on a table, ~120 rounds; at
    full speed a second is a few dozen) and the first whole-chain verify at once (upkeep starts
    after it). `segments_every` > 0: the link sends an archived segment not acknowledged yet
    every that many seconds instead of 60 (see --segments-every)."""
    env = {**os.environ, "TABLECTL_JOURNAL_UPKEEP_S": "1", "TABLECTL_JOURNAL_VERIFY_DELAY_S": "0"}
    start = (["-c", LAUNCH, str(segments_every)] if segments_every > 0 else
             ["-m", "controller.daemon"])
    play = ["--autoplay", "0"] if players else ["--no-players"]
    with open(log, "ab") as err:
        return subprocess.Popen(
            [sys.executable, *start, "--config", str(conf), "--simulate", *play, "--quiet",
             "--state-dir", str(state), "--runtime-dir", str(runtime)],
            stdout=subprocess.DEVNULL, stderr=err, cwd=ROOT, env=env)


@dataclass
class Disk:
    """Where the table's state lives: a fresh card (loop device, its sectors counted) or, with
    no card, a directory (nothing counted)."""

    loop: str
    mnt: Path

    def sectors(self) -> int:
        """Sectors written to the card so far, after a syncfs (what was still dirty)."""
        if not self.loop:
            return 0
        syncfs(self.mnt)
        return sectors_written(self.loop)

    def sectors_now(self) -> int:
        """Sectors written so far, without a sync (what the kernel wrote by itself)."""
        return sectors_written(self.loop) if self.loop else 0


def disk(stack: contextlib.ExitStack, work: Path, name: str, use_card: bool, size_mb: int
         ) -> Disk:
    if use_card:
        return Disk(*stack.enter_context(card(work, Case(name), size_mb)))
    (work / "disk").mkdir()
    return Disk("", work / "disk")


IDLE_SETTLE_S = 10.0  # after READY: the link up, the first pool value journaled


def idle_linked(conf: Path, work: Path, seconds: float, use_card: bool, size_mb: int
                ) -> tuple[float | None, float]:
    """An idle linked table (head office republishing its pool every second): what it writes
    a minute, (at the device or None with no card, the daemon's counter)."""
    with contextlib.ExitStack() as stack:
        d = disk(stack, work, "idle", use_card, size_mb)
        runtime = work / "run"
        proc = linked_daemon(conf, d.mnt / "state", runtime, work / "idle.err", 0, players=False)
        try:
            wait_started(proc, runtime, "idle")
            time.sleep(IDLE_SETTLE_S)
            dev0, proc0 = d.sectors(), write_bytes(proc.pid)
            time.sleep(seconds)
            dev1, proc1 = d.sectors(), write_bytes(proc.pid)
        finally:
            stop(proc)
    per_min = 60 / seconds / 1024
    return ((dev1 - dev0) * SECTOR * per_min if use_card else None), (proc1 - proc0) * per_min


def with_journal(text: str, segment_rounds: int, keep_rounds: int, linked: bool) -> str:
    if not linked:
        assert "[link]\nenabled = true\n" in text
        text = text.replace("[link]\nenabled = true\n", "[link]\nenabled = false\n")
    return text + f"[journal]\nsegment_rounds = {segment_rounds}\nkeep_rounds = {keep_rounds}\n"


def play_linked(name: str, conf_text: str, work: Path, rounds: int, segment_rounds: int,
                warm: int | None, use_card: bool, size_mb: int, segments_every: float
                ) -> LinkedResult:
    """Warm up (`warm` rounds; None: until a segment was pruned, then half a segment more),
    then measure `rounds` rounds."""
    with contextlib.ExitStack() as stack:
        d = disk(stack, work, name, use_card, size_mb)
        state, runtime = d.mnt / "state", work / "run"
        conf = work / f"{name}.toml"
        conf.write_text(conf_text)
        log = work / f"{name}.err"
        proc = linked_daemon(conf, state, runtime, log, segments_every)
        try:
            try:
                first = wait_started(proc, runtime, name)
                if warm is None:
                    start = wait_pruned(proc, runtime, state, name) + segment_rounds // 2
                else:
                    start = first + warm
                wait_round(runtime, start)
            except BaseException:
                print(f"{name}: {log.read_text(errors='replace')[-2000:]}", file=sys.stderr)
                raise
            seg0 = segment_counts(state)
            dev0 = d.sectors()
            proc0, t0 = write_bytes(proc.pid), time.monotonic()
            wait_round(runtime, start + rounds)
            dev1 = d.sectors_now()
            proc1, t1 = write_bytes(proc.pid), time.monotonic()
            seg1 = segment_counts(state)
            dev2 = d.sectors()
        finally:
            stop(proc)
    return LinkedResult(name, start - first, rounds, t1 - t0,
                        (dev1 - dev0) * SECTOR if use_card else None,
                        (dev2 - dev0) * SECTOR if use_card else None,
                        proc1 - proc0, seg1 - seg0, seg1)


def wait_pruned(proc: subprocess.Popen[bytes], runtime: Path, state: Path, name: str,
                timeout: float = 3600) -> int:
    """The round at which a segment was first seen pruned."""
    from controller.control import request

    deadline = time.monotonic() + timeout
    while segment_counts(state).pruned == 0:
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"{name}: no segment pruned (segments {segment_counts(state)})")
        time.sleep(0.5)
    return int(request(runtime / "control.sock", "status")["round"])


def linked_main(args: argparse.Namespace) -> None:
    if not args.no_card and os.geteuid() != 0:
        raise SystemExit("bench_card.py --linked needs root (mkfs, losetup, mount); "
                         "--no-card: the process counter only")
    # SIGTERM as Ctrl-C: the `finally`s stop the daemon, head office and the broker, and
    # unmount and detach the card (children get Ctrl-C's SIGINT too; they are stopped anyway).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    rounds = args.rounds or args.segment_rounds
    every = (f"{args.segments_every:g} s" if args.segments_every > 0 else "60 s (the link's own)")
    if args.idle:
        print("# --linked --idle: a linked UTH table, no players, head office republishing its"
              " pool every second; " + ("no card (process counter only)" if args.no_card else
                                       f"card: ext4 on a loop device, mount {DATA_MOUNT_OPTS}"),
              flush=True)
    else:
        print(f"# --linked: UTH at full speed, [journal] segment_rounds {args.segment_rounds} "
              f"keep_rounds {args.keep_rounds}, upkeep every 1 s, segments sent every {every}; "
              f"{rounds} rounds measured; "
              + ("no card (process counter only)" if args.no_card else
                 f"card: ext4 on a loop device, mount {DATA_MOUNT_OPTS}"), flush=True)
    with tempfile.TemporaryDirectory(dir="/var/tmp", prefix="bench_card.linked.") as tmp:
        work = Path(tmp)
        with head_office(work / "ho") as conf:
            if args.idle:
                for r in range(args.runs):
                    dev, proc = idle_linked(conf, _fresh(work / f"idle{r + 1}"), args.idle,
                                            not args.no_card, args.size_mb)
                    shown = "" if dev is None else f"dev+sync {dev:.1f} KB  "
                    print(f"run {r + 1} idle, {args.idle:g} s: {shown}proc {proc:.1f} KB a "
                          "minute", flush=True)
                return
            text = conf.read_text()
            for r in range(args.runs):
                runs = work / f"run{r + 1}"

                def play(name: str, warm: int | None, runs: Path = runs) -> LinkedResult:
                    return play_linked(
                        name, with_journal(text, args.segment_rounds, args.keep_rounds,
                                           name == "linked"),
                        _fresh(runs / name), rounds, args.segment_rounds, warm,
                        not args.no_card, args.size_mb, args.segments_every)

                # Linked first: its warm-up (to a prune and half a segment on) is the
                # baseline's, so both windows start at the same round.
                linked = play("linked", args.warm)
                base = linked if args.no_baseline else play("unlinked", linked.warm)
                for res in (base, linked)[1 if args.no_baseline else 0:]:
                    print(f"run {r + 1} {linked_line(res, base)}", flush=True)


def _fresh(path: Path) -> Path:
    path.mkdir(parents=True)
    return path


def linked_line(res: LinkedResult, base: LinkedResult) -> str:
    per = 1024 * res.rounds

    def fig(label: str, value: int | None, ref: int | None) -> str:
        if value is None:
            return ""
        ratio = f" (x{value / ref:.2f} unlinked)" if res is not base and ref else ""
        return f"{label} {value / per:6.1f} KB{ratio}  "

    return (f"{res.name:<9} {fig('dev', res.dev, base.dev)}"
            f"{fig('dev+sync', res.dev_sync, base.dev_sync)}"
            f"{fig('proc', res.proc, base.proc)}per round  ({res.rounds} rounds after "
            f"{res.warm} warm-up, {res.seconds / res.rounds * 1000:.0f} ms each; segments in "
            f"the window: {res.window.text()}; in all: {res.total.text()})")


