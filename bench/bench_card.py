"""What a simulated table writes to its SD card per round, at the block device (issue 16).

    .venv/bin/python bench/bench_card.py --pace 6 --rounds 8 \
        --case base --case lazy,opts=lazytime --case slow,expire=30000,writeback=6000

`bench_daemon.py` counts the daemon's `/proc/PID/io` write_bytes: the pages the process dirties,
charged when dirtied. What wears the card is what the file system sends to the device: the data
pages when the kernel writes them back (a page dirtied again after its writeback counts again,
one dirtied twice before it counts once), plus ext4's own journal (jbd2: descriptor, the
metadata blocks, commit block) and metadata, which write_bytes never sees. So each case here
makes an ext4 file system on a loop device (`truncate`, `mkfs.ext4`, `losetup`), mounts it with
the data partition's options (image/vm/layer.sh's fstab for /persistent: rw,noatime,nodev,
nosuid, plus the case's), runs `python -m controller.daemon --simulate --game uth --pace S`
with its state directory on it and its runtime directory off it (as /run/tablectl on the
image), and reports per round, between the end of the first round and the end of round
first + N:

- `dev`: sectors written by the loop device (/sys/block/loopN/stat, field 7, x 512): every
  write the file system issued; `dev+sync`: the same after a `syncfs` at the end (what was still
  dirty then, written now: an upper bound; `dev` is a lower one; they meet as rounds grow);
- `proc`: the daemon's write_bytes over the same rounds.

The sector count is of requests submitted to the loop device, i.e. the file system's writes,
whatever the loop then does with its backing file (buffered or, with `dio=1`, `losetup
--direct-io=on`): run a case both ways to check.

A case is `NAME[,opts=MOUNT_OPTS][,expire=CS][,writeback=CS][,dio=1][,warm=N][,pace=S]
[,rounds=N]` (MOUNT_OPTS separated by `+`, e.g. `opts=lazytime+commit=60`; expire/writeback:
vm.dirty_expire_centisecs and vm.dirty_writeback_centisecs, default this machine's; warm=N: N
rounds at full speed first, then SIGKILL, so the measured daemon finds the WAL file at its full
size (below); pace/rounds: this case's, instead of --pace/--rounds).

--linked measures what a table linked to head office writes with retention on
(bench/card_linked.py).

Why warm: SQLite deletes the WAL when the last connection closes cleanly, and a new WAL grows
until the first checkpoint (4 000 frames, ~320 UTH rounds); every fsync that grows the file
also commits ext4's journal (the new size and blocks), several blocks per fsync. A daemon that
has run a day writes into a WAL of full size instead. Run a case without warm= for the first
~320 rounds after each start. Cases with the same sysctls run at the
same time (each its own loop device, so its own writeback); groups of different sysctls one
after another, --runs times, alternately. The sysctls are set only while their group runs and
restored in `finally`. Needs root. Everything (daemon, mount, loop device, image file) is
removed in `finally`.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # --linked: tests/ (the broker, head office's and the table's config)
# image/vm/layer.sh's fstab for /persistent, without the VM's systemd-only option.
DATA_MOUNT_OPTS = "rw,noatime,nodev,nosuid"
SYSCTL = Path("/proc/sys/vm")
SECTOR = 512
# The WAL at its autocheckpoint size: header + 4 000 frames of (24 + 512) bytes, and some slack.
WAL_BYTES = 32 + 4200 * (24 + 512)


@dataclass(frozen=True)
class Case:
    name: str
    opts: str = ""  # extra mount options, comma-separated
    expire: int | None = None  # vm.dirty_expire_centisecs; None: leave as is
    writeback: int | None = None  # vm.dirty_writeback_centisecs
    dio: bool = False
    warm: int = 0  # rounds played at full speed first, then SIGKILL (the WAL left wrapped)
    pace: float | None = None  # this case's --pace and --rounds, instead of the run's
    rounds: int | None = None
    term: bool = False  # end the warm-up with SIGTERM (a clean stop: SQLite deletes the WAL)
    prefill: bool = False  # then a zero-filled WAL of full size put in its place

    @classmethod
    def parse(cls, text: str) -> Case:
        name, *fields = text.split(",")
        kw: dict[str, str] = {}
        for field in fields:
            key, sep, value = field.partition("=")
            if not sep or key not in ("opts", "expire", "writeback", "dio", "warm",
                                               "pace", "rounds", "term", "prefill"):
                raise SystemExit(f"--case {text!r}: {field!r} is not "
                                 "opts=|expire=|writeback=|dio=|warm=|pace=|rounds=|"
                                 "term=|prefill=")
            kw[key] = value
        return cls(name, kw.get("opts", "").replace("+", ","),
                   int(kw["expire"]) if "expire" in kw else None,
                   int(kw["writeback"]) if "writeback" in kw else None,
                   kw.get("dio", "0") == "1", int(kw.get("warm", "0")),
                   float(kw["pace"]) if "pace" in kw else None,
                   int(kw["rounds"]) if "rounds" in kw else None,
                   kw.get("term", "0") == "1", kw.get("prefill", "0") == "1")

    @property
    def sysctls(self) -> tuple[int | None, int | None]:
        return self.expire, self.writeback


@dataclass
class Result:
    rounds: int
    seconds: float
    dev: int  # bytes the device was asked to write, first round end .. last round end
    dev_sync: int  # the same, after a syncfs at the end
    proc: int  # the daemon's write_bytes over the same window


def run(cmd: list[str]) -> str:
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.strip()


def sectors_written(loop: str) -> int:
    fields = Path(f"/sys/block/{Path(loop).name}/stat").read_text().split()
    return int(fields[6])


def write_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/io").read_text().splitlines():
        if line.startswith("write_bytes:"):
            return int(line.split()[1])
    return 0


def syncfs(path: Path) -> None:
    """syncfs(2) of the file system holding `path` (Python has no os.syncfs)."""
    run(["sync", "--file-system", str(path)])


@contextlib.contextmanager
def sysctls(expire: int | None, writeback: int | None) -> Iterator[None]:
    """Set the writeback sysctls for the block; the old values back in any case."""
    names = {"dirty_expire_centisecs": expire, "dirty_writeback_centisecs": writeback}
    old: dict[str, str] = {}
    try:
        for name, value in names.items():
            if value is not None:
                old[name] = (SYSCTL / name).read_text().strip()
                (SYSCTL / name).write_text(str(value))
        yield
    finally:
        for name, value in old.items():  # only what was set: leave the rest as others put it
            (SYSCTL / name).write_text(value)


@contextlib.contextmanager
def card(work: Path, case: Case, size_mb: int) -> Iterator[tuple[str, Path]]:
    """A fresh ext4 on a loop device, mounted; (loop device, mount point)."""
    image, mnt = work / "card.img", work / "mnt"
    mnt.mkdir()
    loop = ""
    mounted = False
    try:
        with open(image, "wb") as f:
            f.truncate(size_mb << 20)
        run(["mkfs.ext4", "-q", "-F", "-L", "persistent", str(image)])
        loop = run(["losetup", "--find", "--show",
                    *(["--direct-io=on"] if case.dio else []), str(image)])
        opts = DATA_MOUNT_OPTS + ("," + case.opts if case.opts else "")
        run(["mount", "-t", "ext4", "-o", opts, loop, str(mnt)])
        mounted = True
        yield loop, mnt
    finally:
        if mounted:
            subprocess.run(["umount", str(mnt)], check=False)
        if loop:
            subprocess.run(["losetup", "-d", loop], check=False)
        image.unlink(missing_ok=True)


def stop(proc: subprocess.Popen[bytes] | None, timeout: float = 60) -> None:
    """SIGTERM (the daemon's clean close), SIGKILL if it does not go in `timeout`."""
    if proc is None or proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def play(case: Case, rounds: int, pace: float | None, size_mb: int, source: Path | None,
         out: dict[str, Result], errors: dict[str, BaseException]) -> None:
    try:
        out[case.name] = _play(case, rounds, pace, size_mb, source)
    except BaseException as exc:  # reported by the caller; the other cases go on
        errors[case.name] = exc


def daemon(state: Path, runtime: Path, pace: float | None) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "controller.daemon", "--simulate", "--game", "uth",
         "--rules", "nsw", "--autoplay", "0", "--quiet", "--state-dir", str(state),
         "--runtime-dir", str(runtime), *([] if pace is None else ["--pace", str(pace)])],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT)


def wait_started(proc: subprocess.Popen[bytes], runtime: Path, name: str) -> int:
    """The round the daemon is at once its control socket answers."""
    from controller.control import NotRunning, request

    deadline = time.monotonic() + 300
    while True:
        try:
            return int(request(runtime / "control.sock", "status")["round"])
        except (NotRunning, OSError):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{name}: the daemon did not start") from None
            time.sleep(0.2)


def wait_round(runtime: Path, n: int) -> None:
    from controller.control import request

    while int(request(runtime / "control.sock", "status")["round"]) < n:
        time.sleep(0.2)


def _play(case: Case, rounds: int, pace: float | None, size_mb: int, source: Path | None
          ) -> Result:
    with tempfile.TemporaryDirectory(dir="/var/tmp", prefix="bench_card.") as tmp, \
            card(Path(tmp), case, size_mb) as (loop, mnt):
        state, runtime = mnt / "state", Path(tmp) / "run"
        if source is not None:
            shutil.copytree(source, state)
            syncfs(mnt)
        if case.warm:
            # Full speed until the WAL has wrapped (a checkpoint every ~320 rounds), then
            # SIGKILL: the WAL file stays at its full size, as in a daemon that has run a day.
            warm = daemon(state, runtime, None)
            try:
                first = wait_started(warm, runtime, case.name)
                wait_round(runtime, first + case.warm)
            finally:
                if case.term:
                    warm.terminate()
                else:
                    warm.kill()
                warm.wait()
            if case.prefill:
                wal = state / "journal.sqlite3-wal"
                assert not wal.exists(), "a clean stop leaves no WAL"
                # A WAL whose header is not valid is an empty one to SQLite; the first commit
                # writes a new header at offset 0 and the file need not grow until it wraps.
                with open(wal, "wb") as f:
                    f.write(bytes(WAL_BYTES))
                    os.fsync(f.fileno())
            syncfs(mnt)
        proc = daemon(state, runtime, pace)
        try:
            first = wait_started(proc, runtime, case.name)
            # Start at a round boundary, the creation and start-up written out.
            wait_round(runtime, first + 1)
            syncfs(mnt)
            dev0, proc0, t0 = sectors_written(loop), write_bytes(proc.pid), time.monotonic()
            wait_round(runtime, first + 1 + rounds)
            dev1, proc1, t1 = sectors_written(loop), write_bytes(proc.pid), time.monotonic()
            syncfs(mnt)
            dev2 = sectors_written(loop)
        finally:
            stop(proc)
    return Result(rounds, t1 - t0, (dev1 - dev0) * SECTOR, (dev2 - dev0) * SECTOR,
                  proc1 - proc0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--case", action="append", type=Case.parse, dest="cases",
                    help="NAME[,opts=A+B][,expire=CS][,writeback=CS][,dio=1]; repeatable")
    ap.add_argument("--rounds", type=int, default=None, help="default 8")
    ap.add_argument("--pace", type=float, default=6.0,
                    help="seconds between simulated actions: 6 ~ a UTH round every 30 s; "
                    "0: the simulation's own (full speed)")
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--size-mb", type=int, default=512)
    ap.add_argument("--from", dest="source", type=Path, default=None,
                    help="a state directory copied onto each card first (an aged journal)")
    ap.add_argument("--linked", action="store_true",
                    help="a table linked to head office with retention on, beside the same "
                    "table unlinked (the baseline); --rounds default: --segment-rounds")
    ap.add_argument("--segment-rounds", type=int, default=2000, help="--linked: [journal]")
    ap.add_argument("--keep-rounds", type=int, default=2000, help="--linked: [journal]")
    ap.add_argument("--warm", type=int, default=None, metavar="ROUNDS",
                    help="--linked: measure after this many rounds instead of after the first "
                    "prune and half a segment (with a --keep-rounds nothing reaches: the cost "
                    "of the link and of segments without the prune's)")
    ap.add_argument("--no-card", action="store_true",
                    help="--linked: no loop device (no root needed): the process counter only")
    ap.add_argument("--no-baseline", action="store_true",
                    help="--linked: the linked table only")
    ap.add_argument("--idle", type=float, default=None, metavar="S",
                    help="--linked: no players; what the idle table writes a minute, over S s")
    ap.add_argument("--segments-every", type=float, default=1.0,
                    help="--linked: seconds between sends of an archived segment not "
                    "acknowledged yet (default 1; 0: the link's own 60)")
    args = ap.parse_args()
    if args.linked:
        if args.cases or args.source:
            raise SystemExit("--linked takes no --case nor --from")
        from bench.card_linked import linked_main

        linked_main(args)
        return
    args.rounds = args.rounds or 8
    if os.geteuid() != 0:
        raise SystemExit("bench_card.py needs root (mkfs, losetup, mount, sysctls)")
    cases: list[Case] = args.cases or [Case("base")]
    if len({c.name for c in cases}) != len(cases):
        raise SystemExit("case names must differ")
    groups: dict[tuple[int | None, int | None], list[Case]] = {}
    for c in cases:
        groups.setdefault(c.sysctls, []).append(c)
    print(f"# {args.rounds} UTH rounds per case at --pace {args.pace}; mount {DATA_MOUNT_OPTS}"
          f"; sysctls now expire {(SYSCTL / 'dirty_expire_centisecs').read_text().strip()}"
          f" writeback {(SYSCTL / 'dirty_writeback_centisecs').read_text().strip()}",
          flush=True)
    for r in range(args.runs):
        for (expire, writeback), group in groups.items():
            out: dict[str, Result] = {}
            errors: dict[str, BaseException] = {}
            load0 = os.getloadavg()[0]
            with sysctls(expire, writeback):
                threads = [threading.Thread(target=play, args=(c, c.rounds or args.rounds,
                                                                (args.pace if c.pace is None
                                                                 else c.pace) or None,
                                                                args.size_mb, args.source,
                                                                out, errors))
                           for c in group]
                for t in threads:
                    t.start()
                for t in threads:
                    t.join()
            load1 = os.getloadavg()[0]
            for c in group:
                if c.name in errors:
                    print(f"run {r + 1} {c.name}: FAILED {errors[c.name]!r}", flush=True)
                    continue
                res = out[c.name]
                per = 1024 * res.rounds
                print(f"run {r + 1} {c.name:<12} dev {res.dev / per:6.1f} KB  dev+sync "
                      f"{res.dev_sync / per:6.1f} KB  proc {res.proc / per:6.1f} KB per round"
                      f"  ({res.rounds} rounds, {res.seconds / res.rounds:.1f} s each; "
                      f"opts '{c.opts}', expire {expire}, writeback {writeback}, "
                      f"dio {int(c.dio)}, warm {c.warm}{' term' if c.term else ''}"
                      f"{' prefill' if c.prefill else ''}; load {load0:.1f}-{load1:.1f})",
                      flush=True)


if __name__ == "__main__":
    main()
