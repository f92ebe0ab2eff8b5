"""The journal's errors: each a `TablectlError` (shared/errors.py), so the daemon and the CLI
catch one root."""

from __future__ import annotations

from shared.errors import TablectlError


class JournalError(TablectlError):
    """The journal cannot be used: corrupt, of another table, locked, or a write failed.

    The message names the file and, where one is at fault, the record's seq.
    """


class JournalLossError(JournalError):
    """The journal is shorter than what the table knows it committed (its high-water mark), or
    its mark is missing or forged: records were lost or the journal replaced."""

    def __init__(self, text: str, mark_seq: int | None, journal_seq: int) -> None:
        super().__init__(text)
        self.mark_seq = mark_seq
        self.journal_seq = journal_seq


class EntryRefused(JournalError, ValueError):
    """What the journal was asked to write or do cannot be: an event or effect it cannot encode
    (a non-string key, NaN, a round going back), or an argument out of range. Nothing is written.

    Also a `ValueError`, as it was before it had a family, for callers that catch that.
    """


class RecordDamaged(JournalError, ValueError):
    """What the journal reads back does not decode or check: a commit body, a checkpoint, a
    stored chain hash, a meta row. The message says which and why.

    Also a `ValueError`, as it was before it had a family, for callers that catch that.
    """


class AckBeyondJournal(TablectlError, ValueError):
    """Head office acknowledged an outbox message this journal never wrote: it had one, so the
    journal lost it (or head office is of another table)."""

    def __init__(self, upto: int, last: int) -> None:
        super().__init__(f"ack of message {upto}, but the last message is {last}")
        self.upto = upto
        self.last = last


class RoundPruned(JournalError, ValueError):
    """The round asked for was pruned (retention): the message says where its archive went."""
