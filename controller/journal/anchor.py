"""The chain hash after a commit where schema 4 does not store it (schema.HASH_STORED_THROUGH).

Recomputed from the nearest point before it whose hash is known: a checkpoint (the daemon
writes one every 32 rounds; the one at the last pruned seq always stays), else the last row that
stores its hash (the upgrade to schema 4), else the genesis; by decoding the commits in between
(at most one checkpoint interval, ~190 commits: ~5 ms on this x86 VM). For readers:
verification recomputes the whole chain itself and checks every commit's MAC against it
(verify.py).
"""

from __future__ import annotations

import sqlite3
from collections import OrderedDict
from collections.abc import Mapping

from controller.journal.chain import chain_hash, genesis_hash
from controller.journal.checkpoint import Checkpoint, has_table
from controller.journal.codec import Codec, parse_body
from controller.journal.errors import RecordDamaged
from controller.journal.schema import hash_stored_through

CACHED = 512  # the commits whose hash a reader keeps (the writer's latest: the link reads them)


class ChainHashes:
    """The chain hash after any commit of one journal, stored or recomputed; the latest ones
    remembered (the writer tells it each commit it makes)."""

    def __init__(self, conn: sqlite3.Connection, meta: Mapping[str, str], codec: Codec) -> None:
        self._conn = conn
        self._codec = codec
        self._genesis = genesis_hash(meta.get("table_id", ""), meta.get("game", ""))
        try:
            self.stored_through = hash_stored_through(meta)
        except ValueError:
            self.stored_through = 0  # read as schema 4 from the start; verify says what is wrong
        self._cache: OrderedDict[int, str] = OrderedDict()

    def remember(self, key: int, chain: str) -> None:
        self._cache[key] = chain
        self._cache.move_to_end(key)
        while len(self._cache) > CACHED:
            self._cache.popitem(last=False)

    def after(self, key: int) -> str:
        """The chain hash after the commit whose last record is seq `key`. ValueError naming
        what is missing or unreadable."""
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        if self.stored_through is None or key <= self.stored_through:
            return self._stored(key)
        seq, chain = self._anchor(key)
        for c_key, body in self._conn.execute(
                "SELECT seq, body FROM commits WHERE seq > ? AND seq <= ? ORDER BY seq",
                (seq, key)):
            records = parse_body(self._codec.unpack(body))
            first = c_key - len(records) + 1
            if first > seq + 1:
                raise RecordDamaged(f"seq {seq + 1}..{first - 1} missing before the commit at seq "
                                 f"{c_key}")
            for i, (text, _record) in enumerate(records):
                if first + i > seq:
                    chain = chain_hash(chain, first + i, text)
            seq = c_key
        if seq != key:
            raise RecordDamaged(f"no commit ends at seq {key}")
        self.remember(key, chain)
        return chain

    def _anchor(self, key: int) -> tuple[int, str]:
        """The latest (seq, chain hash) at or before `key` known without decoding: a checkpoint
        that parses, or the last stored hash, or the genesis."""
        through = self.stored_through or 0
        if has_table(self._conn):
            for seq, body in self._conn.execute(
                    "SELECT seq, body FROM checkpoints WHERE seq <= ? AND seq > ? ORDER BY seq "
                    "DESC LIMIT 4", (key, through)):
                try:
                    return seq, Checkpoint.parse(body if isinstance(body, str) else "").hash
                except ValueError:
                    continue  # damaged: an older one (verification reports it)
        if through == 0:
            return 0, self._genesis
        return through, self._stored(through)

    def _stored(self, seq: int) -> str:
        row = self._conn.execute("SELECT hash FROM commits WHERE seq = ?", (seq,)).fetchone()
        if row is not None and isinstance(row[0], bytes) and row[0]:
            return row[0].hex()
        row = self._conn.execute("SELECT hash FROM events WHERE seq = ?", (seq,)).fetchone()
        if row is not None and isinstance(row[0], str):
            return row[0]
        raise RecordDamaged(f"no stored chain hash at seq {seq}")
