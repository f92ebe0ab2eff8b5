"""Where the daemon's bytes go: WAL frames per commit, by table, and the 4 KiB pages they dirty.

    .venv/bin/python bench/wal_pages.py [--game uth] [--rounds 200] [--from STATE]  (needs strace)

Runs `tablectld --simulate` under strace (pwrite64/fdatasync of the journal files only) and
models what /proc/PID/io write_bytes counts: a 4 KiB page-cache page is counted when a write
makes it dirty; an fsync writes it back, so the next write to it counts again. Prints per round:
commits (fsyncs of the WAL), WAL frames (one per 512-byte page a commit changed) by the table or
index that owns the page (sqlite's dbstat, read from the final file), the 4 KiB pages dirtied in the
WAL and in the main file (the checkpoints, including the one at close). The sum is what
bench_daemon.py measures (it excludes start-up and the final checkpoint).
"""

from __future__ import annotations

import argparse
import collections
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
LINE = re.compile(r"^\d+\s+(\w+)\((\d+)<([^>]*)>(.*)\)\s+=\s+(-?\d+)")
HEX = re.compile(r"\\x([0-9a-f]{2})")


def unhex(s: str) -> bytes:
    return bytes(int(h, 16) for h in HEX.findall(s))


def freelist_trunks(db: Path) -> set[int]:
    """The freelist's trunk pages (file format: header offsets 16 and 32, each trunk's first
    4 bytes the next one)."""
    trunks: set[int] = set()
    with db.open("rb") as f:
        header = f.read(100)
        size = int.from_bytes(header[16:18], "big") or 65536
        page = int.from_bytes(header[32:36], "big")
        while page and page not in trunks:
            trunks.add(page)
            f.seek((page - 1) * size)
            page = int.from_bytes(f.read(4), "big")
    return trunks


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--game", default="uth")
    ap.add_argument("--rules", default="nsw")
    ap.add_argument("--rounds", type=int, default=200)
    ap.add_argument("--from", dest="source", type=Path, default=None, metavar="STATE",
                    help="play on a copy of this state dir (default: a new journal)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(dir="/var/tmp") as tmp:
        state, trace = Path(tmp) / "state", Path(tmp) / "trace"
        trunks: set[int] = set()
        if args.source is not None:  # --autoplay counts this run's rounds
            shutil.copytree(args.source, state, ignore=shutil.ignore_patterns("run"))
            conn = sqlite3.connect(state / "journal.sqlite3")
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # the header read below is current
            conn.close()
            trunks = freelist_trunks(state / "journal.sqlite3")
        subprocess.run(
            ["strace", "-f", "-y", "-xx", "-s", "8", "-e", "trace=pwrite64,fdatasync,fsync",
             "-o", str(trace), sys.executable, "-m", "controller.daemon", "--simulate",
             "--game", args.game, "--rules", args.rules, "--autoplay", str(args.rounds),
             "--quiet", "--seed", "1", "--state-dir", str(state)],
            cwd=REPO, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        conn = sqlite3.connect(state / "journal.sqlite3")
        owner = {p: f"{n} {t}" for p, n, t in conn.execute(
            "SELECT pageno, name, pagetype FROM dbstat")}
        owner[1] = "page 1 (header)"  # rewritten whenever the file grows
        owner.update((p, "freelist trunk") for p in trunks)
        conn.close()
        dirty: dict[str, set[int]] = collections.defaultdict(set)
        counted: collections.Counter[str] = collections.Counter()
        frames: collections.Counter[str] = collections.Counter()
        commits = 0
        in_commit = False
        for line in trace.read_text().splitlines():
            m = LINE.match(line)
            if not m:
                continue
            call, _fd, path_hex, rest, _ret = m.groups()
            path = unhex(path_hex).decode()
            if ".new" in path or not Path(path).name.startswith("journal.sqlite3"):
                continue  # the new journal being built, before it is linked into place
            name = "wal" if path.endswith("-wal") else "db" if path.endswith("3") else "other"
            if call == "pwrite64":
                size, offset = (int(x) for x in rest.rsplit(",", 2)[1:])
                for page in range(offset // 4096, (offset + size - 1) // 4096 + 1):
                    if page not in dirty[name]:
                        dirty[name].add(page)
                        counted[name] += 4096
                if name == "wal" and size == 24:  # a frame header: the page number first
                    frames[owner.get(int.from_bytes(unhex(rest)[:4], "big"), "freelist")] += 1
                    in_commit = True
            else:
                if name == "wal" and in_commit:
                    commits += 1
                    in_commit = False
                dirty[name].clear()
    n = args.rounds
    total = sum(frames.values())
    print(f"{args.game}, {n} rounds: {commits / n:.2f} commits a round, "
          f"{total / n:.1f} WAL frames a round ({total / max(commits, 1):.2f} a commit)")
    for table, k in frames.most_common():
        print(f"  {table:<20} {k / n:6.2f} frames a round  {k * 536 / n / 1024:5.2f} KB of WAL")
    print(f"4 KiB pages dirtied a round: WAL {counted['wal'] / n / 1024:.1f} KB "
          f"(of which {commits * 4096 / n / 1024:.1f} KB is one page per fsync), "
          f"main file (checkpoints) {counted['db'] / n / 1024:.1f} KB, "
          f"other {counted['other'] / n / 1024:.1f} KB")


if __name__ == "__main__":
    main()
