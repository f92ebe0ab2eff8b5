"""A power cut at every flush point (issue 27, the CrashMonkey / xfstests approach), the host's
half: the data partition's writes recorded in the guest by `dm-log-writes` (logwrites.py) are
replayed onto a copy of the partition as it was when recording began, up to each FLUSH/FUA
entry; each such image is what a power cut right then leaves on the card. For each one:

- `e2fsck -p` (what the boot's fsck does: replays the ext4 journal), then the table's state
  directory, its outside mark and its key are read out with `debugfs rdump` (no mount);
- the start's decision, as the daemon takes it (controller/daemon/opening.py: `open_journal`
  with the table's own config, then `replay` into its round machine): it **continues**, or it
  **refuses** (out of service) with its reason and error code;
- `verify_dir` (what `tablectl journal verify` runs);
- what the journal holds durably (its records' chain hashes, its outbox messages) against the
  point before it that continued and against head office's ledger.

Outcomes: `continues`, `starts its first journal` (no journal file and nothing that says one
was there: a table's first start; a journal gone after an earlier point held one is a
rollback), `continues, archive alarm` (verify finds only an archive missing or
altered, which the daemon alarms on and plays through: docs/journal.md, "Archives are
checked"), `refuses: CODE ...`; and the failures: a silent rollback (a point continues without
something an earlier point held durably), a journal that disagrees with head office (a message
both hold, different), a start that continues on a journal verify rejects, a refusal without
a reason, an error, a file system the boot's fsck cannot repair.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import shutil
import sqlite3
import subprocess
import time
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from image.vm.logwrites import Entry, Log, Replayer, read_log, spread
from shared.errors import TablectlError

OutboxKey = tuple[int, str, str, str]  # journal seq, type, payload (canonical JSON), utc

CONTINUES = "continues"
ARCHIVE_ALARM = "continues, archive alarm"
NEW_JOURNAL = "starts its first journal (none there, nothing says there was one)"
FAIL_ROLLBACK = "FAIL silent rollback"
FAIL_HEADOFFICE = "FAIL disagrees with head office"
FAIL_VERIFY = "FAIL continues on a journal verify rejects"
FAIL_UNCLEAR = "FAIL refusal without a reason"
FAIL_ERROR = "FAIL error"
FAIL_FS = "FAIL file system not repaired by fsck"


class ExtractError(TablectlError):
    """A replayed image's files could not be read out (debugfs): the point's failure."""


@dataclass
class Durable:
    """What one point's journal holds, read after its start: records from `read_from` on."""

    last_seq: int
    pruned_through: int
    hashes: dict[int, str] = field(default_factory=dict)  # seq -> chain hash
    outbox: dict[int, OutboxKey] = field(default_factory=dict)  # message id -> what it says


@dataclass
class Point:
    """One replayed flush point and what became of it."""

    entry: int  # the FLUSH/FUA entry's index in the log
    fsck: int = 0  # e2fsck -p's exit status
    started: bool = False  # the start continued
    reason: str = ""  # its refusal (or the error)
    code: str = ""  # the refusal's error code (E101, ...)
    error: bool = False  # an exception that is not the daemon's refusal
    had_journal: bool = True  # the journal file was there (else the start makes the first)
    verify_ok: bool | None = None
    verify_errors: list[str] = field(default_factory=list)
    archive_only: bool = False  # verify's errors are all archive faults
    durable: Durable | None = None
    outcome: str = ""
    why: str = ""  # what a failure found


def canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def ledger_messages(ledger: Path, table_id: str) -> dict[int, tuple[OutboxKey, str | None]]:
    """Head office's ledger: each message it holds from the table, as the table sent it (the
    body is stored as received), and the chain hash of the journal record that wrote it."""
    with contextlib.closing(sqlite3.connect(f"file:{ledger}?mode=ro", uri=True)) as db:
        rows = db.execute("SELECT seq, body FROM messages WHERE table_id = ?", (table_id,))
        out: dict[int, tuple[OutboxKey, str | None]] = {}
        for seq, body in rows:
            b = json.loads(body)
            out[int(seq)] = (
                (
                    int(b.get("journal_seq", 0)),
                    str(b.get("type")),
                    canonical(b.get("payload")),
                    str(b.get("utc")),
                ),
                b.get("journal_hash"),
            )
    return out


def classify(
    points: list[Point], ledger: Mapping[int, tuple[OutboxKey, str | None]]
) -> Counter[str]:
    """Each point's outcome (set in place); the count of each. A continuing point is compared
    with the last continuing point before it (it must hold everything that one held durably,
    the same) and with head office (every message both hold, the same)."""
    prev: Point | None = None
    for p in points:
        p.outcome, p.why = _outcome(p, prev, ledger)
        if p.started and p.durable is not None and not p.outcome.startswith("FAIL"):
            prev = p
    return Counter(p.outcome for p in points)


def _outcome(
    p: Point, prev: Point | None, ledger: Mapping[int, tuple[OutboxKey, str | None]]
) -> tuple[str, str]:
    if p.fsck >= 4:
        return FAIL_FS, f"e2fsck -p exited {p.fsck}"
    if p.error:
        return FAIL_ERROR, p.reason
    if not p.started:
        if not p.reason.strip() or not p.code:
            return FAIL_UNCLEAR, repr(p.reason)
        return f"refuses: {p.code} {_shape(p.reason)}", p.reason
    d = p.durable
    if d is None:
        return FAIL_ERROR, "continued, but its journal could not be read"
    if p.verify_ok is False and not p.archive_only and p.had_journal:
        return FAIL_VERIFY, "; ".join(p.verify_errors[:3])
    if prev is not None and prev.durable is not None:
        lost = rolled_back(prev.durable, d)
        if lost:
            return FAIL_ROLLBACK, f"after entry {prev.entry}: {lost}"
    differs = disagrees(d, ledger)
    if differs:
        return FAIL_HEADOFFICE, differs
    if not p.had_journal:  # a table's first start (a journal gone is the rollback above)
        return NEW_JOURNAL, ""
    return (ARCHIVE_ALARM if p.verify_ok is False else CONTINUES), ""


def rolled_back(before: Durable, now: Durable) -> str:
    """What `now` lacks or holds differently of what `before` held (empty: nothing). Records
    retention moved or pruned out of the file since (at or before `now.pruned_through`) are
    not looked for."""
    if now.last_seq < before.last_seq:
        return f"the journal ends at seq {now.last_seq}, it ended at {before.last_seq}"
    for seq, h in before.hashes.items():
        got = now.hashes.get(seq)
        if got is None and seq > now.pruned_through:
            return f"record {seq} is gone"
        if got is not None and got != h:
            return f"record {seq} changed (chain hash {got[:12]}, was {h[:12]})"
    for mid, key in before.outbox.items():
        got_msg = now.outbox.get(mid)
        if got_msg is None and key[0] > now.pruned_through:
            return f"outbox message {mid} is gone"
        if got_msg is not None and got_msg != key:
            return f"outbox message {mid} changed"
    return ""


def disagrees(d: Durable, ledger: Mapping[int, tuple[OutboxKey, str | None]]) -> str:
    """The first message the journal and head office both hold that differs (empty: none)."""
    for mid in sorted(d.outbox.keys() & ledger.keys()):
        (key, journal_hash), mine = ledger[mid], d.outbox[mid]
        if key != mine:
            return f"message {mid}: head office holds {key[:2]}, the journal {mine[:2]}"
        mine_hash = d.hashes.get(mine[0])
        if journal_hash is not None and mine_hash is not None and journal_hash != mine_hash:
            return (
                f"message {mid}: written by record {mine[0]} of chain hash "
                f"{mine_hash[:12]}, head office holds {journal_hash[:12]}"
            )
    return ""


def _shape(reason: str) -> str:
    """A refusal's reason without its numbers and paths, to count alike ones together."""
    text = re.sub(r"/\S+", "PATH", reason)
    text = re.sub(r"\d+", "N", text)
    return text[:140]


# -- the host's side of one point -----------------------------------------------------------


@dataclass(frozen=True)
class Source:
    """Where the table's files are on the data partition, and the config it runs with."""

    table_id: str = "VM-UTH-01"
    config: str = "/etc/tablectl/uth.toml"  # on the partition (/persistent/etc/...)
    state: str = "/tablectl"  # the unit's /var/lib/tablectl
    mark_dir: str = "/tablectl-mark"
    key: str = "/etc/tablectl/journal-key"


def extract(image: Path, undo: Path, dest: Path, src: Source) -> int:
    """The boot's fsck on `image` (`e2fsck -p` replays the ext4 journal), then the state
    directory, the outside mark and the table's config and key read out into `dest`; then the
    image put back as it was (`e2fsck -z` keeps the blocks it overwrites in `undo`, `e2undo`
    writes them back: no copy of the whole partition a point). e2fsck's exit status (4 and
    above: the boot would stop)."""
    undo.unlink(missing_ok=True)
    fsck = subprocess.run(
        ["e2fsck", "-p", "-z", str(undo), str(image)], capture_output=True, text=True
    )
    try:
        if fsck.returncode < 4:
            _rdump(image, dest, src)
    finally:
        if undo.exists():
            subprocess.run(["e2undo", str(undo), str(image)], check=True, capture_output=True)
            undo.unlink()
    return fsck.returncode


def _rdump(image: Path, dest: Path, src: Source) -> None:
    # rdump names what it writes by the source's last part: /etc/tablectl goes to dest/etc.
    for path, into in (
        (src.state, dest),
        (src.mark_dir, dest),
        (str(Path(src.config).parent), dest / "etc"),
    ):
        into.mkdir(parents=True, exist_ok=True)
        r = subprocess.run(
            ["debugfs", "-R", f"rdump {path} {into}", str(image)], capture_output=True, text=True
        )
        if r.returncode != 0 or "rdump:" in r.stderr:
            raise ExtractError(f"debugfs rdump {path}: {r.stderr[-500:]}")


def host_config(text: str, root: Path) -> str:
    """The table's config as it starts on the host from the files read out into `root`: its
    state directory and outside mark there, no link (head office is compared afterwards)."""
    text = re.sub(r"(?m)^state_dir\s*=.*$", f'state_dir = "{root / "tablectl"}"', text)
    text = re.sub(r"(?m)^runtime_dir\s*=.*$", f'runtime_dir = "{root / "run"}"', text)
    text = re.sub(
        r'(?m)^outside_mark\s*=\s*"[^"]*/([^/"]+)"',
        lambda m: f'outside_mark = "{root / "tablectl-mark" / m.group(1)}"',
        text,
    )
    text = re.sub(r"(?m)^socket_group\s*=.*$", 'socket_group = "root"', text)
    return re.sub(r"(?ms)^\[link\]\s*\n(enabled\s*=\s*true)", "[link]\nenabled = false", text)


@contextlib.contextmanager
def _credentials(directory: Path) -> Iterator[None]:
    """The key where the daemon finds it under systemd ($CREDENTIALS_DIRECTORY/journal-key)."""
    old = os.environ.get("CREDENTIALS_DIRECTORY")
    os.environ["CREDENTIALS_DIRECTORY"] = str(directory)
    try:
        yield
    finally:
        if old is None:
            del os.environ["CREDENTIALS_DIRECTORY"]
        else:
            os.environ["CREDENTIALS_DIRECTORY"] = old


def check_point(root: Path, src: Source, point: Point, read_from: int | None) -> None:
    """The start's decision on the files in `root`, then verify, then what it holds (its
    records from `read_from` on; None: its last one only)."""
    from controller.config import validate_text
    from controller.config.machine import build_machine
    from controller.daemon.opening import Unusable, open_journal, replay
    from controller.journal.verify import verify_dir

    cfg_file = root / src.config.lstrip("/")
    cfg = validate_text(host_config(cfg_file.read_text(), root), str(cfg_file))
    keys = root / "credentials"
    keys.mkdir()
    shutil.copy(root / src.key.lstrip("/"), keys / "journal-key")
    state = root / "tablectl"
    with _credentials(keys):
        rep = verify_dir(state, key_file=keys / "journal-key")
        point.verify_ok = rep.ok
        point.verify_errors = list(rep.errors)
        point.archive_only = bool(rep.errors) and set(rep.errors) <= set(rep.archive_faults)
        point.had_journal = (state / "journal.sqlite3").exists()
        log = logging.getLogger("flushpoints")
        try:
            journal = open_journal(cfg, log, bootloader=root / "no-bootloader")
        except Unusable as exc:
            point.reason, point.code = exc.reason, exc.code
            return
        except Exception as exc:
            point.error, point.reason = True, f"{type(exc).__name__}: {exc}"
            return
        try:
            replay(journal, build_machine(cfg))
            point.started = True
            point.durable = durable(journal, read_from)
        except Unusable as exc:
            point.reason, point.code = exc.reason, exc.code
        except Exception as exc:
            point.error, point.reason = True, f"{type(exc).__name__}: {exc}"
        finally:
            journal.close()


def durable(journal: Any, read_from: int | None) -> Durable:
    pruned = int(journal.reader.pruned[0])
    d = Durable(last_seq=int(journal.last_seq), pruned_through=pruned)
    if read_from is None:
        read_from = d.last_seq
    for e in journal.iter_events(max(read_from, pruned + 1)):
        d.hashes[e.seq] = e.hash
        for m in e.outbox:
            d.outbox[m.id] = (m.seq, m.type, canonical(m.payload), m.utc)
    return d


@dataclass
class Replay:
    points: list[Point]
    counts: Counter[str]
    flush_points: int
    entries: int
    log_mb: float
    seconds: float
    marks: list[str]

    @property
    def replayed(self) -> int:
        """Flush points replayed (the partition as recording began, entry -1, not counted)."""
        return sum(p.entry >= 0 for p in self.points)

    @property
    def failures(self) -> list[Point]:
        return [p for p in self.points if p.outcome.startswith("FAIL")]

    def summary(self) -> dict[str, Any]:
        return {
            "points_replayed": self.replayed,
            "flush_points": self.flush_points,
            "log_entries": self.entries,
            "log_mb": self.log_mb,
            "host_seconds": round(self.seconds, 1),
            "outcomes": dict(self.counts),
            "marks": self.marks,
            "failures": [
                {"entry": p.entry, "outcome": p.outcome, "why": p.why[:300]} for p in self.failures
            ][:20],
        }

    def lines(self) -> list[str]:
        out = [
            f"flush-point replay: {self.replayed} points replayed of {self.flush_points} "
            f"FLUSH/FUA entries ({self.entries} log entries, {self.log_mb} MB), and the "
            f"partition as recording began (entry -1), in {self.seconds:.1f} s on the host"
        ]
        out += [f"  {n:4d}  {outcome}" for outcome, n in sorted(self.counts.items())]
        for p in self.points:
            out.append(f"  entry {p.entry}: {p.outcome}" + (f" ({p.why[:200]})" if p.why else ""))
        return out


def replay_log(
    log_path: Path,
    base: Path,
    ledger: Path,
    work: Path,
    *,
    at_most: int = 120,
    src: Source | None = None,
) -> Replay:
    """Every flush point of the log (or `at_most` spread over it), each checked; classified."""
    started = time.monotonic()
    src = src or Source()
    log: Log = read_log(log_path)
    flush = log.flush_points()
    picked: list[Entry] = spread(flush, at_most)
    work.mkdir(parents=True, exist_ok=True)
    image, undo = work / "replayed.img", work / "fsck.undo"
    subprocess.run(["cp", "--sparse=always", str(base), str(image)], check=True)
    # Where the recording began (entry -1): every point must hold its last record; the records
    # before it are not read again at each point.
    base_point = Point(entry=-1)
    base_point.fsck = extract(image, undo, work / "base", src)
    if base_point.fsck < 4:
        check_point(work / "base", src, base_point, None)
    read_from = base_point.durable.last_seq if base_point.durable else 0
    points: list[Point] = [base_point]
    with Replayer(log, image) as rep:
        for e in picked:
            rep.upto(e.index)
            p = Point(entry=e.index)
            root = work / f"p{e.index}"
            try:
                p.fsck = extract(image, undo, root, src)
                if p.fsck < 4:
                    check_point(root, src, p, read_from)
            except Exception as exc:
                p.error, p.reason = True, f"{type(exc).__name__}: {exc}"
            points.append(p)
            shutil.rmtree(root, ignore_errors=True)
    counts = classify(points, ledger_messages(ledger, src.table_id))
    return Replay(
        points,
        counts,
        len(flush),
        len(log.entries),
        round(log_path.stat().st_blocks * 512 / 2**20, 1),
        time.monotonic() - started,
        [e.mark for e in log.entries if e.mark],
    )
