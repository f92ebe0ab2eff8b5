"""The journal looked after while the table plays (docs/journal.md, "Checkpoints and fast
start", "Segments, archive, retention"). Start-up verifies only what follows the latest
checkpoint, so every record, snapshot, checkpoint, ack and MAC is walked again here, a while
after READY, in a child process at the lowest CPU and I/O priority. The walk is a read
transaction beside the writer (WAL): it never takes the journal's lock and never delays a
commit, and in its own process it never holds the daemon's interpreter either. A failure takes
the table out of service, as at start; an archive of a closed segment missing or altered (and
not deleted by retention) raises an alarm instead (E106: the error history, `tablectl status`),
and play goes on: see `verify_in_background`. Then, hourly and within seconds of a segment's
close or head office's acknowledgement of one, closed segments are archived, those head office
holds moved out of the file, and retention prunes what head office acknowledged.

    python -m controller.journal.background STATE_DIR [ARCHIVE_DIR]   (what the daemon runs; JSON)
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import sqlite3
import sys
import time
from collections.abc import Callable
from pathlib import Path

from controller.journal.config import JournalConfig
from controller.journal.errors import JournalError
from controller.journal.store import Journal
from controller.journal.verify import verify_dir
from controller.logs import event as log_event

DELAY_ENV = "TABLECTL_JOURNAL_VERIFY_DELAY_S"  # seconds after READY; tests set it low
DEFAULT_DELAY_S = 60.0
MAX_DELAY_S = 86_400.0
UPKEEP_EVERY_S = 3600.0
UPKEEP_ENV = "TABLECTL_JOURNAL_UPKEEP_S"  # seconds between upkeeps; the linked bench sets it low
DUE_POLL_S = 5.0  # how soon an upkeep follows a segment's close or head office's acknowledgement
MAX_OUTPUT_BYTES = 1 << 20
# ioprio_set(2)/ioprio_get(2): IOPRIO_WHO_PROCESS (1), the class in the top bits (<< 13), IDLE
# is 3; syscall numbers by machine (glibc has no wrapper).
_IOPRIO_SET = {"x86_64": 251, "aarch64": 30, "armv7l": 314, "armv6l": 314}
_IOPRIO_GET = {"x86_64": 252, "aarch64": 31, "armv7l": 315, "armv6l": 315}
_IOPRIO_WHO_PROCESS = 1
_IOPRIO_CLASS_SHIFT = 13
_IOPRIO_IDLE = 3 << _IOPRIO_CLASS_SHIFT
_IO_CLASSES = {0: "none", 1: "realtime", 2: "best-effort", 3: "idle"}
LOWEST_NICE = 19


def _env_number(name: str, default: float | None, top: float, log: logging.Logger,
                least: float = 0.0) -> float | None:
    """The environment's `name` if it is a number within least..top; else `default` (logged)."""
    text = os.environ.get(name)
    if text is None:
        return default
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not least <= value <= top:
        log_event(log, logging.WARNING, f"{name}={text[:40]!r} is not {least:.0f}..{top:.0f};"
                  f" using {default}")
        return default
    return value


def delay_s(log: logging.Logger) -> float:
    """The delay after READY, seconds: DELAY_ENV's, or DEFAULT_DELAY_S."""
    return _env_number(DELAY_ENV, DEFAULT_DELAY_S, MAX_DELAY_S, log) or 0.0


def upkeep_every_s(log: logging.Logger) -> float:
    """Seconds between upkeeps: UPKEEP_ENV's (1 s .. a day), or UPKEEP_EVERY_S."""
    return _env_number(UPKEEP_ENV, UPKEEP_EVERY_S, MAX_DELAY_S, log, least=1.0) or UPKEEP_EVERY_S


def upkeep(journal: Journal, cfg: JournalConfig
           ) -> tuple[list[int], list[int], list[int], list[int]]:
    """One round of care: archive the closed segments, move those head office holds out of
    the journal file (their archives keep them on the table), prune what `[journal]` retention
    allows (only what head office acknowledged), delete the archives past keep_archives_days
    (only pruned, acknowledged ones). The segments archived, moved, pruned, and whose archive
    was deleted."""
    archived = [n for n, _name, _digest in journal.archive()]
    moved = journal.move()
    pruned: list[int] = []
    expired: list[int] = []
    if cfg.prunes:
        pruned = [p.number for p in journal.prune(cfg.keep_rounds, keep_days=cfg.keep_days)
                  if p.prune]
        if cfg.keep_archives_days is not None:
            expired = journal.expire_archives(cfg.keep_archives_days)
    return archived, moved, pruned, expired


async def look_after_journal(journal: Journal | None, on_failure: Callable[[str], None],
                             log: logging.Logger, cfg: JournalConfig | None = None) -> None:
    """The daemon's background care of its journal: the whole chain verified once, a while
    after READY (`verify_in_background`); then, every `upkeep_every_s` and within DUE_POLL_S
    of a segment's close or head office's acknowledgement of one, `upkeep` with the
    `[journal]` configuration `cfg`. Each in a worker thread; the journal's lock is held only
    for the few rows each changes."""
    if journal is None:
        return
    cfg = cfg or JournalConfig()
    every = upkeep_every_s(log)
    if not await verify_in_background(journal, on_failure, log):
        return
    while True:
        journal.retention.due.clear()  # a close or an ack from now on brings the next one
        try:
            archived, moved, pruned, expired = await asyncio.to_thread(upkeep, journal, cfg)
        except (JournalError, OSError) as exc:
            log_event(log, logging.ERROR, f"journal upkeep failed: {exc}")
        else:
            if archived or moved or pruned or expired:
                log_event(log, logging.INFO, "journal segments archived, moved and pruned",
                          archived=archived, moved=moved, pruned=pruned,
                          archives_deleted=expired)
        await _look_for_missing_archives(journal, log)
        await _until_due(journal, every)


async def _look_for_missing_archives(journal: Journal, log: logging.Logger) -> None:
    """Between the background passes (one a start), an archive that has gone missing since is
    an alarm within the upkeep's interval: a stat a segment, in a worker thread. (Whether one
    that is there checks out is the pass's to say: reading every archive hourly would read the
    whole record off the card every hour.)"""
    try:
        missing = await asyncio.to_thread(journal.retention.missing_archives,
                                          journal.archive_dir)
    except (JournalError, OSError, sqlite3.Error) as exc:
        log_event(log, logging.ERROR, f"journal archives could not be looked at: {exc}")
        return
    known = journal.retention.archive_faults
    new = [text for text in missing if text not in known]
    if new:
        journal.retention.archive_faults = [*known, *new]
        log_event(log, logging.ERROR, f"ALARM journal archives missing or altered ({len(new)}"
                  f" more): {'; '.join(new[:3])}", archives=len(new), code="E106")


async def _until_due(journal: Journal, every: float) -> None:
    """Sleep `every` seconds, or less: until a segment closes or head office holds one."""
    deadline = time.monotonic() + every
    while not journal.retention.due.is_set():
        left = deadline - time.monotonic()
        if left <= 0:
            return
        await asyncio.sleep(min(left, DUE_POLL_S))


async def verify_in_background(journal: Journal | None, on_failure: Callable[[str], None],
                               log: logging.Logger, delay: float | None = None) -> bool:
    """After `delay` (default: delay_s), walk the whole journal in a child process; log the
    outcome, and call `on_failure` with the reason if it does not verify. Cancelled (the
    daemon stopping), the child is killed. True if it verified."""
    if journal is None:
        return False
    await asyncio.sleep(delay_s(log) if delay is None else delay)
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "controller.journal.background", str(journal.path.parent),
        str(journal.archive_dir),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    try:
        out, err = await proc.communicate()
    except asyncio.CancelledError:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        await proc.wait()
        raise
    try:
        report = json.loads(out[:MAX_OUTPUT_BYTES])
        ok, errors = report["ok"] is True, [str(e) for e in report["errors"]]
        faults = [str(e) for e in report.get("archive_faults", [])]
        others = int(report.get("journal_errors", len(errors)))
    except (ValueError, KeyError, TypeError):
        ok, errors, report = False, [f"the verifier exited {proc.returncode}: "
                                     f"{err[-400:].decode(errors='replace').strip()}"], {}
        faults, others = [], 1
    priority = report.get("priority")
    if isinstance(priority, dict) and priority.get("lowest") is False:
        # Not a failure of the journal: the pass still ran, but beside the table's own work.
        log_event(log, logging.WARNING, "journal background verification could not lower its "
                  f"priority (nice {str(priority.get('nice'))[:8]}, I/O class "
                  f"{str(priority.get('io_class'))[:16]}): it competes with the table's rounds")
    journal.retention.archive_faults = faults
    if not ok and others == 0 and faults:
        # The journal itself verified; only archives of closed segments are missing or
        # altered. They record past rounds: out of the file only once head office acknowledged
        # them (their digests and every outbox message of those rounds), else still in it. No
        # round from now on reads them: play stays safe, so the technician is alarmed and the
        # table plays on; retention prunes nothing past such a segment (docs/journal.md,
        # "Archives are checked"; docs/operations.md, "An archive missing or altered").
        log_event(log, logging.ERROR, f"ALARM journal archives missing or altered "
                  f"({len(faults)}): {'; '.join(faults[:3])}", archives=len(faults),
                  code="E106")
        ok = True
    if ok:
        log_event(log, logging.INFO, "journal verified in the background (the whole chain)",
                  records=report.get("records"), seconds=report.get("seconds"),
                  nice=priority.get("nice") if isinstance(priority, dict) else None,
                  io_class=priority.get("io_class") if isinstance(priority, dict) else None)
        return True
    reason = f"journal background verification failed: {'; '.join(errors[:3])}"
    log_event(log, logging.CRITICAL, reason, errors=len(errors))
    on_failure(reason)
    return False


def io_class() -> str:
    """This process's I/O scheduling class (ioprio_get), or "unknown" where it cannot be read."""
    number = _IOPRIO_GET.get(os.uname().machine)
    if number is None:
        return "unknown"
    import ctypes  # here: only the background child needs it, not the daemon (issue 31)

    try:
        value = ctypes.CDLL(None, use_errno=True).syscall(number, _IOPRIO_WHO_PROCESS, 0)
    except (OSError, AttributeError):
        return "unknown"
    return "unknown" if value < 0 else _IO_CLASSES.get(value >> _IOPRIO_CLASS_SHIFT, "unknown")


def lowest_priority() -> dict[str, object]:
    """nice 19 and the idle I/O class, so that the table's own work always comes first; what
    the process then has, read back (a sandbox's syscall filter can refuse either change
    quietly: the unit allows setpriority and ioprio_set for this, systemd/tablectld.service)."""
    with contextlib.suppress(OSError):
        os.nice(LOWEST_NICE)
    number = _IOPRIO_SET.get(os.uname().machine)
    if number is not None:
        import ctypes

        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).syscall(number, _IOPRIO_WHO_PROCESS, 0,
                                                      _IOPRIO_IDLE)
    nice = os.getpriority(os.PRIO_PROCESS, 0)
    cls = io_class()
    return {"nice": nice, "io_class": cls,
            "lowest": nice == LOWEST_NICE and cls in {"idle", "unknown"}}


def main(argv: list[str]) -> int:
    if len(argv) not in (1, 2):
        print("usage: python -m controller.journal.background STATE_DIR [ARCHIVE_DIR]",
              file=sys.stderr)
        return 2
    priority = lowest_priority()
    start = time.monotonic()
    rep = verify_dir(Path(argv[0]), archive_dir=Path(argv[1]) if len(argv) == 2 else None)
    print(json.dumps({**rep.as_json(), "macs": rep.macs, "mark": rep.mark,
                      "archives": rep.archives, "archive_faults": rep.archive_faults,
                      "journal_errors": rep.error_count - len(rep.archive_faults),
                      "seconds": round(time.monotonic() - start, 3), "priority": priority}))
    return 0 if rep.ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
