"""One batch of messages in one transaction: each table's in order, exactly once;
contributions summed into this writer's share of the pool, written at `flush`."""

from __future__ import annotations

import json
from collections.abc import Sequence
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from controller.meters import SHIFT_METERS
from headoffice.ledger import cards, common
from headoffice.ledger.common import (
    _IN_CHUNK,
    BatchResult,
    Incoming,
    _Exclusive,
    _HeldHit,
    _Hold,
    _increment_of,
    _Pending,
    _scan,
    _Table,
    _with_shares,
    encode_body,
)
from headoffice.ledger.hits import BatchHits
from headoffice.ledger.recovery import closes_gap, recovery_alarm
from headoffice.ledger.tables import BatchTables
from headoffice.pools import ConservationError, Pool
from shared.errors import InputError
from shared.link import contract
from shared.link.outbox import OutboxType

if TYPE_CHECKING:
    from headoffice.ledger.core import Ledger


class _Batch(BatchTables, BatchHits):
    """One transaction's worth of messages, applied in memory and written at `flush`."""

    def __init__(self, ledger: Ledger, result: BatchResult, exclusive: set[str]) -> None:
        self.ledger = ledger
        self.db = ledger.db
        self.result = result
        self.tables: dict[str, _Table] = {}
        # Pools as they stood when loaded (row plus shares). Those in `exclusive` are locked
        # FOR UPDATE and changed message by message (dirty_pools: written, shares folded);
        # the others FOR KEY SHARE, this batch's contributions summed in `pending` and added
        # to this Ledger's share (`own`, locked) at flush.
        self.pools: dict[str, Pool | None] = {}
        self.exclusive = exclusive
        self.dirty_pools: set[str] = set()
        self.pending: dict[str, _Pending] = {}
        self.own: dict[str, _Pending] = {}
        self.unbalanced: set[str] = set()
        self.shared_changed: set[str] = set()
        # (pool, wager) -> its exact meter and reserve parts, and their text as stored
        self.parts: dict[tuple[str, int], tuple[Fraction, Fraction, str, str]] = {}
        self.messages: list[tuple[Any, ...]] = []
        self.increments: dict[tuple[str, int], dict[str, Any]] = {}
        self.cancelled: list[tuple[int, str, int]] = []
        self.hits: list[tuple[Any, ...]] = []
        self.held_hits: list[tuple[Any, ...]] = []
        self.rounds: list[tuple[Any, ...]] = []
        self.parking: dict[str, dict[int, str]] = {}  # table -> seq -> body, parked this batch
        self.drained: set[str] = set()  # tables whose parked messages were applied
        # increments stored by earlier transactions, by (table, round), and the keys looked up
        self.stored: dict[tuple[str, int], dict[str, Any]] = {}
        self.looked_up: set[tuple[str, int]] = set()
        self.utc = common.utc_now()

    # -- loading (locks the rows on PostgreSQL) -------------------------------------------------
    def table(self, table_id: str) -> _Table:
        t = self.tables.get(table_id)
        if t is None:
            self._load_tables([table_id])
            t = self.tables[table_id]
        return t

    def preload(self, items: Sequence[Incoming],
                skip: bool) -> tuple[list[Incoming], list[Incoming], set[str]]:
        """The batch's tables, and the stored increments of the rounds its outbox messages
        name, in a few queries. With `skip`, only the tables no other transaction holds:
        -> (the messages of those, the messages left for the next transaction, the pools
        the first name)."""
        ids = sorted({i.table for i in items})
        got: set[str] = set()
        for lo in range(0, len(ids), _IN_CHUNK):
            got |= self._load_tables(ids[lo:lo + _IN_CHUNK], skip)
        later: list[Incoming] = []
        if skip:
            later = [i for i in items if i.table not in got]
            items = [i for i in items if i.table in got]
        pool_ids, round_keys = _scan(items)
        keys = sorted(round_keys)
        for lo in range(0, len(keys), _IN_CHUNK):
            chunk = keys[lo:lo + _IN_CHUNK]
            rows = self.db.execute(
                "SELECT table_id, round, seq, pool_id, amount, meter_part, reserve_part,"
                " cancelled_seq FROM increments WHERE (table_id, round) IN"
                f" (VALUES {', '.join(['(?, ?)'] * len(chunk))})",
                [v for key in chunk for v in key],
            )
            self.looked_up.update(chunk)
            for row in rows:
                self.stored[(row["table_id"], int(row["round"]))] = _increment_of(row)
        return items, later, pool_ids

    def _load_tables(self, ids: list[str], skip: bool = False) -> set[str]:
        """Sorted table ids -> self.tables. A table with no row, or not enrolled, is loaded
        as not enrolled: its messages are refused (never a row created on the fly). With
        `skip`, rows another transaction holds are left out, and so are tables with no row
        (the next transaction, which waits, refuses them): -> the ids loaded."""
        marks = ", ".join("?" * len(ids))
        lock = self.db.skip_locked if skip else self.db.for_update
        select = (f"SELECT id, last_seq, pool_id, enrolled, enrolled_pool, journal_seq,"
                  f" chain_hash FROM tables WHERE id IN ({marks})"
                  f" ORDER BY id{lock}")
        rows = {r["id"]: r for r in self.db.execute(select, ids)}
        if skip:
            ids = sorted(rows)
            if not ids:
                return set()
            marks = ", ".join("?" * len(ids))
        parked = {
            r["table_id"]
            for r in self.db.execute(
                f"SELECT DISTINCT table_id FROM parked WHERE table_id IN ({marks})", ids)
        }
        for table_id in ids:
            row = rows.get(table_id)
            if row is None or not row["enrolled"]:
                self.tables[table_id] = _Table(table_id, 0, None, False, enrolled=False)
                continue
            self.tables[table_id] = _Table(
                table_id, int(row["last_seq"]), row["pool_id"], table_id in parked,
                enrolled_pool=row["enrolled_pool"], journal_seq=int(row["journal_seq"] or 0),
                chain_hash=row["chain_hash"])
        return set(ids)

    def enrolled(self, table_id: str) -> _Table | None:
        """The table, or None (counted and refused) if head office does not know it."""
        t = self.table(table_id)
        if not t.enrolled:
            self.result.unknown.append(table_id)
            return None
        return t

    def pool(self, pool_id: str) -> Pool | None:
        if pool_id not in self.pools:
            if pool_id in self.exclusive:
                self.pools[pool_id] = self.ledger._locked_pool(pool_id)
            else:
                self.pools[pool_id] = self._shared_pool(pool_id)
        return self.pools[pool_id]

    def _shared_pool(self, pool_id: str) -> Pool | None:
        """The pool for contributions: its row FOR KEY SHARE, this Ledger's share locked
        (made if new), every share added. Books that do not balance are noted: the first
        message that touches the pool then needs it exclusively (and stops it)."""
        row = self.db.one(f"SELECT * FROM pools WHERE id = ?{self.db.for_key_share}",
                          (pool_id,))
        if row is None:
            return None
        # The upsert locks this Ledger's row (and returns it), made or found.
        own = self.db.one(
            "INSERT INTO pool_shares (pool_id, shard, meter, reserve, wagers_in, changes)"
            " VALUES (?, ?, '0', '0', 0, 0) ON CONFLICT (pool_id, shard) DO UPDATE"
            " SET changes = pool_shares.changes RETURNING meter, reserve, wagers_in, changes",
            (pool_id, self.ledger.shard))
        assert own is not None
        self.own[pool_id] = _Pending(Fraction(own["meter"]), Fraction(own["reserve"]),
                                     int(own["wagers_in"]), int(own["changes"]))
        self.pending[pool_id] = _Pending()
        shares = self.db.execute(
            "SELECT meter AS share_meter, reserve AS share_reserve, wagers_in AS share_wagers,"
            " changes AS share_changes FROM pool_shares WHERE pool_id = ?", (pool_id,))
        pool = _with_shares(Pool.from_row(row), shares)
        try:
            pool.check()
        except ConservationError:
            self.unbalanced.add(pool_id)
        return pool

    def _parts(self, pool: Pool, staked: int) -> tuple[Fraction, Fraction, str, str]:
        """A contribution's exact meter and reserve parts and their stored text; the same
        wager at the same rates is worked out once per batch (Fraction arithmetic and
        str(Fraction) were most of a contribution)."""
        key = (pool.id, staked)
        parts = self.parts.get(key)
        if parts is None:
            meter, reserve = staked * pool.params.increment, staked * pool.params.hidden
            parts = self.parts[key] = (meter, reserve, str(meter), str(reserve))
        return parts

    def _needs_exclusive(self, pool_id: str) -> None:
        if pool_id not in self.exclusive:
            raise _Exclusive(pool_id)

    # -- outbox -----------------------------------------------------------------------------------
    def outbox(self, table_id: str, body: dict[str, Any], text: str | None = None) -> None:
        """A table's message (`text`: as received, stored as its body; None: encoded)."""
        t = self.enrolled(table_id)
        if t is None:
            return
        seq = body["seq"]
        if seq <= t.last_seq:
            self._same_as_ledgered(t, body)
            self.result.duplicates += 1
            self.result.acks[table_id] = t.last_seq  # the ack may have been lost: say it again
            if body.get("type") == OutboxType.JACKPOT_HIT:
                self._reanswer(table_id, body)
            return
        if t.blocked or (seq > t.last_seq + 1 and not closes_gap(t.last_seq, body)):
            # Kept here and written at flush, unless drained meanwhile: with a shared
            # subscription half a table's messages can reach a worker ahead of their turn.
            self.parking.setdefault(table_id, {}).setdefault(
                seq, encode_body(body) if text is None else text)
            t.has_parked = True
            self.result.parked += 1
            return
        if self._apply(t, body, text):
            self._drain(t)

    def _drain(self, t: _Table) -> None:
        """Apply parked messages that now follow on: the ones parked by this batch, and the
        ones in the database, read in order a few hundred per query (their rows are deleted
        at flush). A held one stays parked."""
        mine = self.parking.get(t.id, {})
        while t.has_parked and not t.blocked:
            text = mine.pop(t.last_seq + 1, None)
            if text is not None:
                if not self._apply(t, json.loads(text), text):
                    mine[t.last_seq + 1] = text
                    return
                self.drained.add(t.id)
                continue
            rows = self.db.execute(
                "SELECT seq, body FROM parked WHERE table_id = ? AND seq > ? ORDER BY seq"
                " LIMIT ?", (t.id, t.last_seq, _IN_CHUNK))
            first = t.last_seq + 1
            for row in rows:
                body = json.loads(row["body"])
                if ((int(row["seq"]) != t.last_seq + 1 and not closes_gap(t.last_seq, body))
                        or not self._apply(t, body, row["body"])):
                    break
            if t.last_seq < first and not self._across_gap(t, mine):
                return  # a gap, or the next one held
            self.drained.add(t.id)

    def _across_gap(self, t: _Table, mine: dict[int, str]) -> bool:
        """Apply the first message this batch parked beyond a gap if it is a recovery message
        that closes it (`_closes_gap`); whether it was applied."""
        ahead = min((n for n in mine if n > t.last_seq), default=None)
        if ahead is None:
            return False
        body = json.loads(mine[ahead])
        if not closes_gap(t.last_seq, body) or not self._apply(t, body, mine[ahead]):
            return False
        del mine[ahead]
        return True

    def _apply(self, t: _Table, body: dict[str, Any], text: str | None = None) -> bool:
        """Apply the table's next message (`text`: its JSON as received, stored as it is).
        False if it is held (not applied, not acked)."""
        type_ = body.get("type", "")
        payload = body.get("payload")
        status, reason, pool_id, amount = "applied", None, None, 0
        round_ = payload.get("round") if isinstance(payload, dict) else None
        try:
            payload = contract.check_outbox_payload(type_, payload)
            pool_id = payload.get("pool_id")
            amount = self._dispatch(t, body, type_, payload)
        except (contract.SchemaError, InputError) as exc:
            # A bad message still has its sequence number: record it refused and go on, so the
            # valid messages behind it are not stuck; the body is kept for the audit.
            status, reason, amount = "refused", str(exc), 0
            self.result.refused.append(f"{t.id}/{body['seq']}: {exc}")
            self.ledger.alarm(f"message {t.id}/{body['seq']} refused: {exc}",
                              pool_id if isinstance(pool_id, str) else None, t.id,
                              kind="refused", subject=type_[:40] or None)
        except _Hold as exc:
            t.blocked = True
            self.result.held.append(f"{t.id}/{body['seq']}: {exc}")
            return False
        except _HeldHit as exc:
            status, reason = "held", str(exc)
        journal_seq = body.get("journal_seq", 0)
        # equal: one record wrote several messages; a recovery's own message says why its
        # journal is behind (alarmed by _recovered), and the table's messages go on from it.
        if journal_seq < t.journal_seq and not (type_ == contract.RECOVERED
                                                and status == "applied"):
            text = (f"table {t.id}: message seq {body['seq']} comes from journal record"
                    f" {journal_seq}, after one from record {t.journal_seq}: its journal went"
                    " backwards")
            self.result.forks.append(text)
            self.ledger.alarm(text, None, t.id, kind="chain_mismatch")
        t.journal_seq = journal_seq
        t.chain_hash = body.get("journal_hash")
        t.last_seq = body["seq"]
        t.dirty = True
        self.result.acks[t.id] = t.last_seq
        self.result.applied += 1
        self.messages.append((
            t.id, body["seq"], type_, pool_id if isinstance(pool_id, str) else None,
            round_ if isinstance(round_, int) else None, status, reason, amount,
            encode_body(body) if text is None else text, self.utc,
        ))
        return True

    def _recovered(self, t: _Table, p: dict[str, Any], seq: int) -> None:
        """A table's journal was recovered (lost records accepted, or a new journal started):
        an alarm says who, why, and where it goes on; a louder one if it goes on at a round
        number head office has already ledgered (it would be used twice)."""
        text, forked = recovery_alarm(t.id, p, seq, t.last_seq, self._last_round(t.id))
        if forked:
            self.result.forks.append(text)
        kind = "chain_mismatch" if forked else "journal_loss"  # alarms.py
        self.ledger.alarm(text, None, t.id, kind=kind)

    def _live_pool(self, t: _Table, pool_id: str) -> Pool:
        if t.enrolled_pool is not None and pool_id != t.enrolled_pool:
            # UTH 15.1.2.2: a table is linked to one pool, the one it is enrolled on.
            raise InputError(f"table {t.id} is enrolled on pool {t.enrolled_pool},"
                             f" not {pool_id}")
        pool = self.pool(pool_id)
        if pool is None:
            raise _Hold(f"no pool {pool_id!r} at head office")
        if pool.stopped:
            raise _Hold(f"pool {pool_id} is stopped: {pool.stopped}")
        if pool_id in self.unbalanced:
            self._needs_exclusive(pool_id)  # to stop it (_guarded)
        if t.pool_id != pool_id:
            t.pool_id = pool_id
            t.dirty = True
        return pool

    def _guarded(self, pool_id: str, step: Any) -> Pool:
        """Run a pool operation; a broken invariant stops the pool (the message is held)."""
        try:
            pool = step()
        except ConservationError as exc:
            from dataclasses import replace

            stopped = replace(self.pools[pool_id], stopped=f"{self.utc}: {exc}")  # type: ignore[arg-type]
            self.pools[pool_id] = stopped
            self.dirty_pools.add(pool_id)
            self.result.stopped.append(pool_id)
            self.ledger.alarm(f"POOL {pool_id} STOPPED: conservation violated: {exc}", pool_id,
                              kind="conservation")
            raise _Hold(f"pool {pool_id} stopped") from None
        self.pools[pool_id] = pool
        self.dirty_pools.add(pool_id)
        self.result.pools[pool_id] = pool.value()
        return pool

    def _dispatch(self, t: _Table, body: dict[str, Any], type_: str, p: dict[str, Any]) -> int:
        seq = body["seq"]
        if type_ == OutboxType.ROUND_RESULT:
            self.rounds.append((t.id, p["round"], seq, str(p["status"]),
                                encode_body(p)))
            return 0
        if type_ == SHIFT_METERS:  # moves no money: stored with the message (headoffice/meters.py)
            if p.get("incomplete"):  # the table reports its journal lost the shift's start
                self.ledger.alarm(f"table {t.id} reports journal records lost: its shift"
                                  f" meters (message {seq}) are incomplete: {p['incomplete']}",
                                  None, t.id, kind="journal_loss")
            return 0
        if type_ == contract.RECOVERED:  # moves no money: stored with the message, alarmed
            self._recovered(t, p, seq)
            return 0
        if type_ in contract.CARD_TYPES:  # Player Cards (issue 29): headoffice/ledger/cards.py
            return cards.apply_outbox(self.db, t.id, seq, type_, p, self.ledger.alarm)
        pool_id = p["pool_id"]
        pool = self._live_pool(t, pool_id)
        key = (t.id, p["round"])
        if type_ == OutboxType.JACKPOT_INCREMENT:
            if key in self.increments or self._stored_increment(key) is not None:
                raise InputError(f"round {p['round']}: a second increment for the round")
            if p["wager"] > self.ledger.policy.max_wager:
                raise InputError(f"round {p['round']}: jackpot wager {p['wager']} above the"
                                 f" configured {self.ledger.policy.max_wager} (UTH 15.2.3)")
            if pool.params.wager is not None and p["wager"] != pool.params.wager:
                # UTH 15.2.5.3: every linked table uses the pool's qualifying wager; a table that
                # differs contributes nothing (its meter takes the jackpot off, ho.pool `wager`).
                self.result.wager_refused.append(f"{t.id}/{seq}")
                raise InputError(f"round {p['round']}: jackpot wager {p['wager']} is not pool"
                                 f" {pool_id}'s qualifying wager {pool.params.wager}"
                                 " (UTH 15.2.5.3)")
            parts: dict[str, Any] = {}
            pending = self.pending.get(pool_id)
            if pending is not None:  # shared: summed, added to this Ledger's share at flush
                meter, reserve, *texts = self._parts(pool, p["amount"])
                parts.update(meter=meter, reserve=reserve, texts=texts)
                pending.wagers += p["amount"]
                pending.changes += 1
            else:
                def inc() -> Pool:
                    new, meter, reserve = pool.contribute(p["amount"])
                    parts.update(meter=meter, reserve=reserve)
                    return new

                self._guarded(pool_id, inc)
            self.increments[key] = {"seq": seq, "pool": pool_id, "amount": p["amount"],
                                    "meter": parts["meter"], "reserve": parts["reserve"],
                                    "new": True, "boxes": p["boxes"], "wager": p["wager"],
                                    "texts": parts.get("texts")}
            return int(p["amount"])
        if type_ == OutboxType.JACKPOT_VERIFIED:
            return self._verified(t, p, key)
        self._needs_exclusive(pool_id)  # a cancellation or a hit: the pool's row, in order
        if type_ == OutboxType.JACKPOT_CANCEL:
            return self._cancel(t, p, key, pool, seq)
        return self._hit(t, body, p, key, pool, seq)
    def flush(self) -> None:
        db = self.db
        # COPY on PostgreSQL: one stream per table of the ledger, not a statement per row.
        db.insert_many("messages", ("table_id", "seq", "type", "pool_id", "round", "status",
                                    "reason", "amount", "body", "utc"), self.messages)
        db.insert_many(
            "increments", ("table_id", "round", "seq", "pool_id", "amount", "meter_part",
                           "reserve_part", "cancelled_seq"),
            [
                (k[0], k[1], v["seq"], v["pool"], v["amount"],
                 *(v["texts"] or (str(v["meter"]), str(v["reserve"]))), None)
                for k, v in self.increments.items() if v["new"]
            ],
        )
        db.executemany(
            "UPDATE increments SET cancelled_seq = ? WHERE table_id = ? AND round = ?",
            self.cancelled,
        )
        db.executemany(
            "INSERT INTO hits (pool_id, hit_no, table_id, round, seq, utc, pool_before,"
            " pool_after, paid, seed_from_house, award) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            self.hits,
        )
        db.executemany(
            "INSERT INTO rounds (table_id, round, seq, status, summary) VALUES (?, ?, ?, ?, ?)",
            self.rounds,
        )
        db.executemany(
            "INSERT INTO held_hits (table_id, round, seq, pool_id, utc, meter_at_hit, reason,"
            " body, status, delivered) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
            " ON CONFLICT (table_id, round) DO NOTHING",
            self.held_hits,
        )
        # Parked rows up to where each table now stands are applied (or were stale copies);
        # what this batch parked beyond it is written.
        db.executemany("DELETE FROM parked WHERE table_id = ? AND seq <= ?",
                       [(t, self.tables[t].last_seq) for t in sorted(self.drained)])
        db.executemany(
            "INSERT INTO parked (table_id, seq, body, utc) VALUES (?, ?, ?, ?)"
            " ON CONFLICT (table_id, seq) DO NOTHING",
            [(table_id, seq, text, self.utc) for table_id, parked in self.parking.items()
             for seq, text in sorted(parked.items()) if seq > self.tables[table_id].last_seq])
        for pool_id in sorted(self.dirty_pools):
            pool = self.pools[pool_id]
            assert pool is not None
            self.ledger._write_pool(pool)
        for pool_id, pending in sorted(self.pending.items()):
            if not pending.changes:
                continue
            pool = self.pools[pool_id]
            assert pool is not None
            # The batch's wagers at the pool's rates (locked FOR KEY SHARE: unchanged), exact:
            # the sum of each contribution's parts.
            pending.meter = pending.wagers * pool.params.increment
            pending.reserve = pending.wagers * pool.params.hidden
            try:  # the books after this batch, every share included
                pool.contributed(*pending.parts()).check()
            except ConservationError:
                raise _Exclusive(pool_id) from None  # again, message by message: it stops
            own = self.own[pool_id]
            own.add(*pending.parts())
            db.execute("UPDATE pool_shares SET meter = ?, reserve = ?, wagers_in = ?,"
                       " changes = ? WHERE pool_id = ? AND shard = ?",
                       (str(own.meter), str(own.reserve), own.wagers, own.changes, pool_id,
                        self.ledger.shard))
            self.shared_changed.add(pool_id)
        now = self.ledger.clock()
        db.executemany(  # one statement, many rows: psycopg pipelines them
            "UPDATE tables SET last_seq = ?, pool_id = ?, last_seen_utc = ?,"
            " last_seen_epoch = ?, state = CASE WHEN state = 'unknown' THEN 'online'"
            " ELSE state END, journal_seq = ?, chain_seq = ?, chain_hash = ?"
            " WHERE id = ?",
            [(t.last_seq, t.pool_id, self.utc, now, t.journal_seq, t.last_seq, t.chain_hash,
              t.id) for t in self.tables.values() if t.dirty],
        )

