"""After a loss: `accept_loss`, the documented way back into service (docs/journal.md,
"Recovering"), recorded as the journal's next record."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import Any

from controller.journal.errors import JournalError
from controller.journal.mark import MARK_FILE, MarkError, create_mark, read_mark
from controller.journal.records import LOSS_KIND
from controller.journal.schema import JOURNAL_FILE, read_meta, utc_now
from controller.journal.store import Journal
from controller.rounds.base import Event, Now

MAX_REASON_CHARS = 500


def accept_loss(state_dir: Path | str, *, reason: str, user: str,
                key_file: Path | None = None, outbox_after: int | None = None
                ) -> dict[str, Any]:
    """Record, as the journal's next record, that records (or its high-water mark) were lost,
    then reset the mark to the journal as it stands: the documented way back into service
    after a loss (`tablectl journal accept-loss`; docs/journal.md, "Recovering").

    New outbox messages continue after the last id the table is known to have used: the mark's,
    or `outbox_after` (head office's acknowledged id, from the out-of-service message), so that
    head office never takes a new message for one it already applied. The chain and MACs must
    verify: only the mark (or head office) may disagree. JournalError if they do not, or if
    there is nothing to accept. Returns the record's data with its seq."""
    reason = reason.strip()
    if outbox_after is not None and (type(outbox_after) is not int or outbox_after < 0):
        raise ValueError(f"outbox_after must be an id >= 0, got {outbox_after!r}")
    if not reason or len(reason) > MAX_REASON_CHARS or not reason.isprintable():
        raise ValueError(f"the reason must be 1..{MAX_REASON_CHARS} printable characters")
    state_dir = Path(state_dir)
    path = state_dir / JOURNAL_FILE
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            meta = read_meta(conn)
        finally:
            conn.close()
    except sqlite3.Error as exc:
        raise JournalError(f"journal {path} unreadable: {exc}") from exc
    table_id, game = meta.get("table_id", ""), meta.get("game", "")
    with Journal.open(state_dir, table_id=table_id, game=game, create=False, upgrade=False,
                      key_file=key_file, _recovering=True) as j:
        last_out = j._next_outbox_id - 1
        text, mark_seq = j.mark_problem or (None, None)
        if text is None:
            if outbox_after is None or outbox_after <= last_out:
                raise JournalError(f"journal {path}: nothing to accept, the journal and its "
                                   f"high-water mark agree (seq {j.last_seq}, outbox message "
                                   f"{last_out})")
            text = (f"head office acknowledged outbox message {outbox_after}, the journal's "
                    f"last is message {last_out}")
        mark_out = _readable_mark_out(state_dir, j)
        skip_to = max(last_out, mark_out, outbox_after or 0) + 1
        data = {"by": user, "reason": reason, "problem": text, "mark_seq": mark_seq,
                "journal_seq": j.last_seq,
                "lost": ([j.last_seq + 1, mark_seq]
                         if mark_seq is not None and mark_seq > j.last_seq else None),
                "outbox_next": skip_to, "outbox_lost": ([last_out + 1, skip_to - 1]
                                                        if skip_to > last_out + 1 else None)}
        now = Now(utc_now(), time.monotonic_ns() // 1_000_000)
        seq = j.append(Event(LOSS_KIND, data), now, round=j.last_event_round)
        # Durable (unlike the per-commit update): the mark now names this record.
        create_mark(state_dir / MARK_FILE, j.key, table_id, game, seq, skip_to - 1,
                    j.last_hash)
    return {"seq": seq, "utc": now.utc, **data}


def _readable_mark_out(state_dir: Path, j: Journal) -> int:
    """The last outbox id the (genuine) mark names; 0 if it is missing or forged."""
    try:
        return read_mark(state_dir / MARK_FILE, j.key, j.table_id, j.game).out
    except (OSError, MarkError):
        return 0
