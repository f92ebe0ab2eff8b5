"""The table's journal (docs/journal.md): every input event, hash-chained and MAC'd, in one
SQLite file, with a high-water mark beside it.

    chain     how a record's hash is formed (the auditor's spec)
    codec     commit bodies: raw deflate with a preset dictionary (dicts)
    records   entries, stored events, outbox messages, round records
    schema    the SQLite layout and a new journal; upgrade: schema 1 -> 2 -> 3 in place
    store     `Journal`: open, commit, close; read: its `Reader`; outbox: its `Outbox`
    verify    the whole-chain walk and `verify_dir`; mark, mac: the mark and the key
    lock      one writer per state directory; recover: `accept_loss`
"""

from controller.journal.chain import (
    canonical,
    chain_hash,
    element,
    genesis_hash,
    record_hash,
    snapshot_hash,
)
from controller.journal.codec import Codec
from controller.journal.errors import (
    AckBeyondJournal,
    EntryRefused,
    JournalError,
    JournalLossError,
    RecordDamaged,
)
from controller.journal.mark import MARK_FILE
from controller.journal.records import (
    LOSS_KIND,
    Entry,
    OutboxMessage,
    RoundRecord,
    StoredEvent,
)
from controller.journal.recover import accept_loss, start_fresh
from controller.journal.schema import JOURNAL_FILE, LOCK_FILE, PAGE_SIZE, SCHEMA_VERSION
from controller.journal.store import Journal
from controller.journal.verify import VerifyReport, verify_dir

__all__ = [
    "JOURNAL_FILE", "LOCK_FILE", "LOSS_KIND", "MARK_FILE", "PAGE_SIZE", "SCHEMA_VERSION",
    "AckBeyondJournal", "Codec", "Entry", "EntryRefused", "Journal", "JournalError",
    "JournalLossError", "OutboxMessage", "RecordDamaged", "RoundRecord", "StoredEvent",
    "VerifyReport", "accept_loss", "canonical",
    "chain_hash", "element", "genesis_hash", "record_hash", "snapshot_hash", "start_fresh",
    "verify_dir",
]
