"""A year unattended (issue 16): generate a UTH table's journal of a day, a month and a year of
rounds, time READY of the real daemon at each age, the whole-chain verify, and the disk used with
retention on.

    .venv/bin/python bench/bench_year.py [--rounds-per-day 550] [--days 1,30,365]
                                         [--keep-days 30] [--dir DIR] [--ready-runs 3]

The generator replays the rounds of a seeded simulation (`TableService`, UTH) as the daemon
committed them (the same events, effects and commit boundaries), renumbered and re-timed, through
`Journal.append_batch` with synchronous=OFF (fsync is what makes a real table slow, not what is
measured here); a snapshot (the machine's state for the next round) and its checkpoint every 32
rounds, and the meters' checkpoint (`meters.json`) with each (the daemon: every second one)
(without it the daemon replays the meters of every record at start: READY at a month was ~100 s).
Segments close every SEGMENT_ROUNDS rounds; each closed one is archived, acknowledged as head
office would (`Journal.ack_segment`) and pruned once more than --keep-days of rounds follow it.
READY: `python -m controller.daemon --simulate --game uth` with NOTIFY_SOCKET, from spawn to
READY=1, the median of --ready-runs, each run beside one on an empty state directory in the same
minute (the baseline: start-up without a journal to speak of; the machine's load moves both).
Then --long-rounds rounds played by the daemon on the year's journal:
bytes written per round (/proc/PID/io write_bytes), plus the archive's bytes per round.

    .venv/bin/python bench/bench_year.py --compare-with /tmp/base --days 45 --keep-days 15 \
        --long-rounds 500 --runs 2

compares bytes written per round with another tree's daemon (`git archive BASE | tar -x -C
/tmp/base`) on copies of one aged, pruned journal, alternately, in the same run.

    .venv/bin/python bench/bench_year.py --generate-only /var/tmp/aged --days 45 --keep-days 15

only generates that aged, pruned journal (STATE/state), e.g. for `bench/wal_pages.py --from`.

    .venv/bin/python bench/bench_year.py --dir /var/tmp/y --keep-states /var/tmp/y/kept
    .venv/bin/python bench/bench_year.py --ready-only /var/tmp/y/kept/day30 /var/tmp/y/kept/day365
    .venv/bin/python bench/bench_year.py --long-only /var/tmp/y/kept/day365 --long-rounds 500
    .venv/bin/python bench/bench_year.py --verify-archives /var/tmp/y/kept/day365

keep each age's state directory, then re-time READY on copies of them beside an empty state
directory in turn (e.g. in a quiet window), bytes per round on a copy, and the auditor's check
of every archive (docs/journal.md, "A year unattended: the figures").
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from controller import logs
from controller.config.machine import build_machine
from controller.daemon.accounting import rounds_of_effects, save_checkpoint
from controller.daemon.build import build_devices, build_policy, simulation_config
from controller.daemon.service import SNAPSHOT_EVERY_ROUNDS, TableService
from controller.journal import Entry, Journal, segments, verify_dir
from controller.meters import Meters
from controller.rounds.base import Effect, Event, Now

T0 = datetime(2026, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class Record:
    kind: str
    data: dict[str, Any]
    ms: int  # since the round's first record
    outbox: tuple[tuple[str, Any], ...]
    closes: tuple[str, Any] | None  # (status, summary) when it records the round


def template(rounds: int, tmp: Path) -> list[list[list[Record]]]:
    """The rounds of a seeded simulation: each a list of commits, each a list of records."""
    cfg = simulation_config("uth", "nsw", tmp / "state", tmp / "run")
    rng = random.Random(16)
    ticks = iter(range(10**9))

    def clock() -> Now:
        t = next(ticks) * 350
        return Now(T0.isoformat(), t)

    svc = TableService(cfg, build_machine(cfg), build_devices(cfg, rng),
                       logs.setup(journald=False), clock=clock, policy=build_policy(cfg, rng),
                       autoplay=rounds)
    svc.log.setLevel("ERROR")
    asyncio.run(svc.run())
    out: dict[int, list[list[Record]]] = {}
    with Journal.open(cfg.service.state_dir, table_id=cfg.table_id, game=cfg.game) as j:
        keys = [k for (k,) in j._conn.execute("SELECT seq FROM commits ORDER BY seq")]
        first_ms: dict[int, int] = {}
        for key in keys:
            evs = j.reader.commit_events(key)
            rnd = evs[-1].round
            first_ms.setdefault(rnd, evs[0].mono_ms)
            out.setdefault(rnd, []).append([
                Record(e.kind, e.data, e.mono_ms - first_ms[rnd],
                       tuple((m.type, m.payload) for m in e.outbox),
                       (e.rounds[0].status, e.rounds[0].summary) if e.rounds else None)
                for e in evs])
    # Whole rounds only: each ends with the commit that records it.
    return [c for r, c in sorted(out.items())
            if r >= 2 and c[-1][-1].closes is not None and len(c) > 1][:-1]


def utc(t: datetime) -> str:
    return t.isoformat(timespec="milliseconds").replace("+00:00", "Z")


class Generator:
    def __init__(self, state: Path, tmpl: list[list[list[Record]]], per_day: int,
                 keep_rounds: int) -> None:
        self.cfg = simulation_config("uth", "nsw", state, state / "run")
        self.machine = build_machine(self.cfg)
        self.meters = Meters()  # as the daemon's: advanced with each round, saved with snapshots
        self.open()
        self.tmpl, self.keep = tmpl, keep_rounds
        self.seconds_per_round = 86_400 / per_day
        self.done = 0
        self.pruned_segments = 0

    def rounds(self, n: int) -> None:
        j = self.j
        for _ in range(n):
            number = self.done + 1
            start = T0 + timedelta(seconds=self.done * self.seconds_per_round)
            base_ms = int(self.done * self.seconds_per_round * 1000)
            commits = self.tmpl[self.done % len(self.tmpl)]
            snap = number % SNAPSHOT_EVERY_ROUNDS == 0
            for ci, commit in enumerate(commits):
                entries = []
                for ri, rec in enumerate(commit):
                    effects = [Effect("outbox", {"type": t, "payload": p}) for t, p in rec.outbox]
                    if rec.closes is not None:
                        effects.append(Effect("round", {"number": number, "status": rec.closes[0],
                                                        "summary": rec.closes[1]}))
                    last = snap and ci == len(commits) - 1 and ri == len(commit) - 1
                    state = None
                    if last:
                        state = self.machine.to_json(self.machine.initial())
                        state["round"] = number + 1
                    now = Now(utc(start + timedelta(milliseconds=rec.ms)), base_ms + rec.ms)
                    entries.append(Entry(Event(rec.kind, rec.data), now, number,
                                         tuple(effects), state))
                    if rec.closes is not None:
                        self.meters.record(now.utc, rec.kind, rounds_of_effects(effects))
                j.append_batch(entries)
            self.done += 1
            if snap:
                save_checkpoint(j, self.meters, self.cfg.service.state_dir)
                self.retention()

    def retention(self) -> None:
        j = self.j
        if not j.retention.states() or all(s.ack_ok for s in j.retention.states()):
            return
        j.archive()
        for st in j.retention.states():
            if st.digest is not None and not st.ack_ok:  # head office acknowledges it
                j.ack_segment(st.segment.number, st.segment.head, st.digest)
        if self.keep:
            j.prune(self.keep)

    def open(self) -> None:
        self.j = Journal.open(self.cfg.service.state_dir, table_id=self.cfg.table_id,
                              game=self.cfg.game, fast=True)
        self.j._conn.execute("PRAGMA synchronous=OFF")  # see the module docstring

    def close(self) -> None:
        self.j.close()


def advance(gen: Generator, target: int, state: Path) -> None:
    """Generate up to `target` rounds in steps, printing the disk used as the year goes (the
    level-off) and the load."""
    t = time.perf_counter()
    while gen.done < target:
        gen.rounds(min(8000, target - gen.done))
        j_bytes, a_bytes = disk(state)
        print(f"  {gen.done} rounds, {time.perf_counter() - t:.0f} s, journal "
              f"{j_bytes / 2**20:.1f} MB, archive {a_bytes / 2**20:.1f} MB, load "
              f"{os.getloadavg()[0]:.2f}", flush=True)


def copy_state(state: Path, to: Path) -> None:
    """A copy of a state directory to start a daemon on (it writes to its journal); the
    archives, written once and never changed, hard-linked."""
    shutil.copytree(state, to, ignore=shutil.ignore_patterns(segments.ARCHIVE_DIR))
    if (state / segments.ARCHIVE_DIR).is_dir():
        shutil.copytree(state / segments.ARCHIVE_DIR, to / segments.ARCHIVE_DIR,
                        copy_function=os.link)


def verify_archives(state: Path) -> None:
    """What an auditor does with sqlite3, zlib and sha256 alone (docs/journal.md, "Checking an
    archived segment"), for every archive of `state`: its sha256 is the digest the journal's
    segment row holds, its records hash to its head, and each segment goes on from the one
    before. Prints the records walked and the time."""
    import hashlib
    import json
    import sqlite3
    import zlib

    t = time.perf_counter()
    rows = sqlite3.connect(f"file:{state / 'journal.sqlite3'}?mode=ro", uri=True).execute(
        "SELECT number, archive, digest FROM segments WHERE archive IS NOT NULL ORDER BY number"
    ).fetchall()
    walked, head, size = 0, None, 0
    with tempfile.TemporaryDirectory() as tmp:
        for number, name, digest in rows:
            data = (state / segments.ARCHIVE_DIR / name).read_bytes()
            size += len(data)
            assert hashlib.sha256(data).hexdigest() == digest, f"segment {number}: digest"
            db = Path(tmp) / "segment.sqlite3"
            db.write_bytes(zlib.decompress(data))
            c = sqlite3.connect(db)
            meta = dict(c.execute("SELECT key, value FROM meta"))
            seg = json.loads(meta["segment"])
            assert head is None or seg["prev"] == head, f"segment {number}: not chained"
            h, seq = seg["prev"], seg["first"] - 1
            zdict = meta["deflate_dict"].encode()
            for key, body, stored in c.execute("SELECT seq, body, hash FROM commits ORDER BY seq"):
                d = zlib.decompressobj(-15, zdict=zdict)
                for record in json.loads(d.decompress(body) + d.flush()):
                    seq += 1
                    h = hashlib.sha256((h + json.dumps(
                        [seq, *record], sort_keys=True, separators=(",", ":"),
                        ensure_ascii=False)).encode()).hexdigest()
                # (schema 4 stores no chain hash: b"")
                assert seq == key and stored in (b"", bytes.fromhex(h)), \
                    f"segment {number}: seq {key}"
            assert (seq, h) == (seg["last"], seg["head"]), f"segment {number}: head"
            walked += seq - seg["first"] + 1
            head = seg["head"]
            c.close()
            db.unlink()
    print(f"{len(rows)} archives ({size / 2**20:.1f} MB) verified: {walked} records walked in "
          f"{time.perf_counter() - t:.1f} s; load {os.getloadavg()[0]:.2f}")


def ready_once(state: Path) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        addr = str(Path(tmp) / "notify.sock")
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        sock.bind(addr)
        sock.settimeout(120)
        start = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, "-m", "controller.daemon", "--simulate", "--game", "uth",
             "--quiet", "--state-dir", str(state), "--runtime-dir", str(Path(tmp) / "run")],
            env={**os.environ, "NOTIFY_SOCKET": addr}, stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE, text=True, cwd=Path(__file__).resolve().parent.parent)
        try:
            while "READY=1" not in sock.recv(4096).decode():
                pass
            ready = time.perf_counter() - start
        finally:
            proc.terminate()
            _out, err = proc.communicate(timeout=60)
            sock.close()
        if "OUT OF SERVICE" in err:
            raise SystemExit(f"the daemon went out of service: {err[-2000:]}")
        return ready


def ready_s(state: Path, runs: int) -> tuple[float, float]:
    """READY of the daemon on `state` and on an empty state directory, alternately: medians."""
    aged, fresh = [], []
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as empty:
            fresh.append(ready_once(Path(empty)))
        aged.append(ready_once(state))
    return statistics.median(aged), statistics.median(fresh)


def ready_rounds(states: list[Path], runs: int) -> None:
    """READY on an empty state directory and on a copy of each of `states`, in turn, `runs`
    times (each round within a few seconds: the load moves them together); medians and the
    ratios of each to the empty one and to the first state."""
    got: dict[str, list[float]] = {"empty": [], **{s.name: [] for s in states}}
    for i in range(runs):
        line = []
        with tempfile.TemporaryDirectory(dir=states[0].parent) as tmp:
            got["empty"].append(ready_once(Path(tmp) / "empty"))
            line.append(f"empty {got['empty'][-1]:.2f}")
            for state in states:
                copy = Path(tmp) / state.name
                copy_state(state, copy)
                got[state.name].append(ready_once(copy))
                line.append(f"{state.name} {got[state.name][-1]:.2f}")
        print(f"round {i + 1}: READY s: {', '.join(line)}; load {os.getloadavg()[0]:.2f}",
              flush=True)
    med = {k: statistics.median(v) for k, v in got.items()}
    first = states[0].name
    print("medians: " + ", ".join(f"{k} {v:.2f} s (x{v / med['empty']:.2f} empty, "
                                  f"x{v / med[first]:.2f} {first})" for k, v in med.items()))


def long_run(state: Path, rounds: int) -> float:
    """Bytes the daemon writes per round playing `rounds` rounds on `state`."""
    with tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp) / "run"
        proc = subprocess.Popen(
            [sys.executable, "-m", "controller.daemon", "--simulate", "--game", "uth",
             "--quiet", "--autoplay", "0", "--state-dir", str(state), "--runtime-dir",
             str(run)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            cwd=Path(__file__).resolve().parent.parent)
        from controller.control import NotRunning, request

        path = run / "control.sock"
        deadline = time.monotonic() + 120
        while True:
            try:
                first = request(path, "status")["round"]
                break
            except (NotRunning, OSError):
                assert time.monotonic() < deadline, "the daemon did not start"
                time.sleep(0.1)
        written0 = _write_bytes(proc.pid)
        while request(path, "status")["round"] < first + rounds:
            time.sleep(0.2)
        written = _write_bytes(proc.pid) - written0
        proc.terminate()
        proc.wait(timeout=60)
        return written / rounds


def _write_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/io").read_text().splitlines():
        if line.startswith("write_bytes:"):
            return int(line.split()[1])
    return 0


def bare_start_s() -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import asyncio"], check=True)
    return time.perf_counter() - start


def disk(state: Path) -> tuple[int, int]:
    journal = sum(p.stat().st_size for p in state.glob("journal.sqlite3*"))
    archive = sum(p.stat().st_size for p in (state / segments.ARCHIVE_DIR).glob("*.z"))
    return journal, archive


def compare(base: Path, days: int, keep_days: int, per_day: int, rounds: int, runs: int,
            where: Path | None) -> None:
    """Bytes written per round by the daemon of another tree (`base`, e.g. `git archive` of the
    commit before a change) and of this one, alternately, each on a fresh copy of one generated
    journal of `days` days with `keep_days` kept (pruning: freed pages being reused)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("base_bench_year", base / "bench/bench_year.py")
    assert spec is not None and spec.loader is not None
    other = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = other  # (its dataclasses look their module up)
    spec.loader.exec_module(other)
    with tempfile.TemporaryDirectory(dir=where) as tmp:
        gen = Generator(Path(tmp) / "state", template(60, Path(tmp) / "template"), per_day,
                        keep_days * per_day)
        gen.rounds(days * per_day // SNAPSHOT_EVERY_ROUNDS * SNAPSHOT_EVERY_ROUNDS)
        pruned = sum(s.pruned_utc is not None for s in gen.j.retention.states())
        gen.close()
        print(f"{gen.done} rounds generated, {keep_days} days kept, {pruned} segments pruned")
        got: dict[str, list[float]] = {"base": [], "this": []}
        for i in range(runs):
            for name, run in (("base", other.long_run), ("this", long_run)):
                copy = Path(tmp) / f"{name}{i}"
                shutil.copytree(Path(tmp) / "state", copy)
                got[name].append(round(run(copy, rounds) / 1024, 2))
                shutil.rmtree(copy)
                print(f"{name}: {got[name][-1]:.2f} KB written per round", flush=True)
        print(got)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds-per-day", type=int, default=550, help="a busy UTH table: ~200k "
                    "rounds a year")
    ap.add_argument("--days", default="1,30,365")
    ap.add_argument("--keep-days", type=int, default=30, help="retention on the table")
    ap.add_argument("--dir", type=Path, default=None)
    ap.add_argument("--ready-runs", type=int, default=3)
    ap.add_argument("--template-rounds", type=int, default=60)
    ap.add_argument("--long-rounds", type=int, default=600)
    ap.add_argument("--compare-with", type=Path, default=None, metavar="TREE",
                    help="only bytes per round: TREE's daemon and this one's, alternately, on "
                    "copies of one journal of --days (one figure) with --keep-days kept")
    ap.add_argument("--runs", type=int, default=2, help="with --compare-with")
    ap.add_argument("--generate-only", type=Path, default=None, metavar="DIR",
                    help="only generate a journal of --days (one figure) with --keep-days kept "
                    "in DIR/state (DIR must not exist)")
    ap.add_argument("--keep-states", type=Path, default=None, metavar="DIR",
                    help="also copy the state directory of each age to DIR/dayN (DIR must not "
                    "exist), to re-time READY on it later (`--ready-only DIR/dayN`)")
    ap.add_argument("--ready-only", type=Path, nargs="+", default=None, metavar="STATE",
                    help="only time READY on each STATE (e.g. the --keep-states copies) and on "
                    "an empty state directory, in turn, --ready-runs rounds; each on a fresh copy "
                    "of STATE (archives hard-linked): a start writes to its journal")
    ap.add_argument("--long-only", type=Path, default=None, metavar="STATE",
                    help="only bytes written per round: --long-rounds rounds played by the "
                    "daemon on a fresh copy of STATE")
    ap.add_argument("--verify-archives", type=Path, default=None, metavar="STATE",
                    help="only check every archive of STATE as an auditor would (sqlite3, zlib, "
                    "sha256), timed")
    args = ap.parse_args()
    if args.verify_archives is not None:
        verify_archives(args.verify_archives)
        return
    if args.long_only is not None:
        with tempfile.TemporaryDirectory(dir=args.long_only.parent) as tmp:
            copy_state(args.long_only, Path(tmp) / "state")
            per_round = long_run(Path(tmp) / "state", args.long_rounds)
        print(f"long run: {args.long_rounds} rounds on a copy of {args.long_only}: "
              f"{per_round / 1024:.1f} KB written per round by the daemon; load "
              f"{os.getloadavg()[0]:.2f}")
        return
    if args.ready_only is not None:
        ready_rounds(args.ready_only, args.ready_runs)
        return
    if args.keep_states is not None:
        if args.keep_states.exists():
            ap.error(f"{args.keep_states} exists")
        args.keep_states.mkdir(parents=True)
    if args.generate_only is not None:
        if args.generate_only.exists():
            ap.error(f"{args.generate_only} exists")
        args.generate_only.mkdir(parents=True)
        gen = Generator(args.generate_only / "state",
                        template(args.template_rounds, args.generate_only / "template"),
                        args.rounds_per_day, args.keep_days * args.rounds_per_day)
        advance(gen, int(args.days) * args.rounds_per_day // SNAPSHOT_EVERY_ROUNDS
                * SNAPSHOT_EVERY_ROUNDS, args.generate_only / "state")
        pruned = sum(s.pruned_utc is not None for s in gen.j.retention.states())
        gen.close()
        print(f"{gen.done} rounds generated in {args.generate_only / 'state'}, "
              f"{args.keep_days} days kept, {pruned} segments pruned")
        return
    if args.compare_with is not None:
        compare(args.compare_with, int(args.days), args.keep_days, args.rounds_per_day,
                args.long_rounds, args.runs, args.dir)
        return
    days = [int(d) for d in args.days.split(",")]
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        tmpl = template(args.template_rounds, Path(tmp) / "template")
        commits = sum(len(c) for c in tmpl) / len(tmpl)
        records = sum(len(x) for c in tmpl for x in c) / len(tmpl)
        print(f"template: {len(tmpl)} simulated UTH rounds, {commits:.2f} commits and "
              f"{records:.1f} records a round; segments every {segments.SEGMENT_ROUNDS} rounds; "
              f"keep {args.keep_days} days ({args.keep_days * args.rounds_per_day} rounds)")
        state = Path(tmp) / "state"
        gen = Generator(state, tmpl, args.rounds_per_day, args.keep_days * args.rounds_per_day)
        bare = bare_start_s()
        print(f"bare interpreter start: {bare:.2f} s")
        for d in days:
            t = time.perf_counter()
            # Up to a snapshot: the daemon replays nothing after it (the generated rounds are
            # not the machine's own; the state is the next round's, as after a real one).
            target = d * args.rounds_per_day // SNAPSHOT_EVERY_ROUNDS * SNAPSHOT_EVERY_ROUNDS
            advance(gen, target, state)
            made = time.perf_counter() - t
            records = gen.j.last_seq
            gen.close()
            if args.keep_states is not None:
                shutil.copytree(state, args.keep_states / f"day{d}")
            j_bytes, a_bytes = disk(state)
            t = time.perf_counter()
            rep = verify_dir(state)
            verify = time.perf_counter() - t
            assert rep.ok, rep.errors[:3]
            ready, fresh = ready_s(state, args.ready_runs)
            print(f"day {d:>3}: {gen.done:>7} rounds, {records:>8} records (generated in "
                  f"{made:6.1f} s); READY {ready:.2f} s (empty state dir {fresh:.2f} s, "
                  f"x{ready / fresh:.2f}); verify {verify:6.2f} s "
                  f"({rep.records} records walked, pruned through seq {rep.pruned_through}); "
                  f"journal {j_bytes / 2**20:7.1f} MB, archive {a_bytes / 2**20:7.1f} MB; "
                  f"load {os.getloadavg()[0]:.2f}", flush=True)
            gen.open()
        archive_per_round = disk(state)[1] / gen.done
        gen.close()
        if args.long_rounds:
            per_round = long_run(state, args.long_rounds)
            print(f"long run: {args.long_rounds} rounds on the year's journal: "
                  f"{per_round / 1024:.1f} KB written per round by the daemon, + "
                  f"{archive_per_round / 1024:.1f} KB of archive per round")

if __name__ == "__main__":
    main()
