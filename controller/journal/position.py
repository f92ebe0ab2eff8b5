"""The journal writer's position (last seq and hash, round counts, the next outbox id) read
without checking the chain: `Journal.open(verify=False)`, a tool's quick look. Verified opens
take the same figures from the walk (verify.py)."""

from __future__ import annotations

import sqlite3

from controller.journal.chain import chain_hash, genesis_hash
from controller.journal.codec import Codec, parse_body
from controller.journal.records import LOSS_KIND, ROUND_STATUSES, fx_items, round_next
from controller.journal.schema import KEYED_SCHEMAS, read_acked_upto, read_meta
from controller.journal.verify import prune_base
from controller.journal.walk import VerifyReport


def load_state(conn: sqlite3.Connection, table_id: str, game: str) -> VerifyReport:
    """The writer's position without checking the chain (open with verify=False)."""
    st = VerifyReport()
    st.last_hash = genesis_hash(table_id, game)
    row = conn.execute("SELECT seq, hash, round FROM events ORDER BY seq DESC LIMIT 1").fetchone()
    if row is not None:
        st.last_seq, st.last_hash, st.last_event_round = row
    for status, n in conn.execute("SELECT status, count(*) FROM rounds GROUP BY status"):
        if status in ROUND_STATUSES:
            setattr(st, f"rounds_{status}", n)
    st.acked_upto = read_acked_upto(conn)
    top = int(conn.execute("SELECT coalesce(max(id), 0) FROM outbox").fetchone()[0])
    meta = read_meta(conn)
    keyed = meta.get("schema") in KEYED_SCHEMAS
    base = prune_base(conn, meta, None, VerifyReport()) if keyed else None
    if base is not None:  # the counts of what was pruned
        st.rounds_completed, st.rounds_voided = base.completed, base.voided
        st.rounds_skipped = base.skipped
        st.pruned_through, st.pruned_hash, top = base.seq, base.hash, base.out
        # Where the chain stands before the first commit that remains.
        st.last_seq, st.last_hash, st.last_event_round = base.seq, base.hash, base.round
    if meta.get("schema") != "1":
        codec = Codec(meta["deflate_dict"])
        for key, rnd, out, body, h in conn.execute(
                "SELECT seq, round, out, body, hash FROM commits ORDER BY seq"):
            records = parse_body(codec.unpack(body))
            if h:
                chain = h.hex()
            else:  # schema 4 stores none: recomputed on from where the chain stood
                chain, first = st.last_hash, key - len(records) + 1
                for i, (text, _record) in enumerate(records):
                    if first + i > st.last_seq:
                        chain = chain_hash(chain, first + i, text)
            st.last_seq, st.last_hash, st.last_event_round = key, chain, rnd
            top = max(top, out)
            for _text, record in records:
                if record[2] == LOSS_KIND:  # a recovery's skipped round numbers
                    skip_to = round_next(record[4]) or 0
                    if skip_to > st.last_round_number + 1:
                        st.rounds_skipped += skip_to - st.last_round_number - 1
                for _n, status, _summary in fx_items(record[5] or {})[1]:
                    if status in ROUND_STATUSES:
                        setattr(st, f"rounds_{status}", getattr(st, f"rounds_{status}") + 1)
    st.records = st.last_seq
    st.next_outbox_id = max(top, st.acked_upto) + 1
    return st
