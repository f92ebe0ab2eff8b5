"""The journal read without the daemon and without writing anything, for `tablectl journal
segments` and the other offline readers: a technician may read the journal's file but not write
its directory, so it is opened as `journal verify` opens it (controller/journal/verify.py)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from controller.journal import JOURNAL_FILE, segments
from controller.journal.lock import read_only_uri
from controller.journal.mac import KeyFileError, find_key
from controller.journal.schema import LOCK_FILE, read_meta
from controller.journal.segments import SegmentState
from shared.errors import InputError


def read_only(state_dir: Path, key_file: Path | None,
              ) -> tuple[dict[str, str], list[SegmentState], int, str]:
    """The journal's meta, segments, last round and how the MACs were checked, read-only."""
    path = state_dir / JOURNAL_FILE
    if not path.is_file():
        raise InputError(f"no journal: {path} does not exist")
    try:
        key = find_key(state_dir, key_file=key_file)
        macs = "checked" if key is not None else "not checked: no key"
    except KeyFileError as exc:
        key, macs = None, f"not checked: {exc}"
    try:
        with read_only_uri(path, state_dir / LOCK_FILE) as uri:  # as `journal verify` reads it
            conn = sqlite3.connect(uri, uri=True)
            try:
                meta = read_meta(conn)
                states = segments.read_all(conn, key, meta["table_id"], meta["game"])
                last_round = int(conn.execute("SELECT coalesce(max(rec), 0) FROM commits")
                                 .fetchone()[0])
            finally:
                conn.close()
    except (sqlite3.Error, KeyError) as exc:
        raise InputError(f"journal {path} unreadable: {exc}") from None
    return meta, states, last_round, macs
