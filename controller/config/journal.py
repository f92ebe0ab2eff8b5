"""`[journal]`: retention of the table's journal, read into `JournalConfig`
(controller/journal/config.py) (docs/journal.md, "Segments, archive,
retention"; docs/configuration.md).

    [journal]
    segment_rounds = 2000        # a closed segment every this many rounds
    keep_rounds = 16500          # rounds kept on the table (pruning needs head office's ack)
    keep_days = 30               # and/or days kept; with both, a segment must pass both
    keep_archives_days = 365     # archive files deleted this long after their segment was
                                 # pruned (acknowledged); unset: archives are never deleted
    archive_dir = "/var/lib/tablectl/archive"
    outside_mark = "/var/lib/tablectl-mark/journal.mark"   # a copy of the high-water mark
                                 # outside the state directory (docs/journal.md); unset: none

Without `keep_rounds` and `keep_days` nothing is pruned (closed segments are still archived).
"""

from __future__ import annotations

from controller.config.reader import Table
from controller.journal.config import JournalConfig

__all__ = ["JournalConfig", "read_journal"]

SEGMENT_ROUNDS = (100, 100_000)  # bounds; a busy UTH table plays ~550 rounds a day
MAX_KEEP_ROUNDS = 10_000_000  # ~50 years of a busy table: beyond, a typo
MAX_DAYS = 36_500


def read_journal(root: Table) -> JournalConfig:
    """The `[journal]` table, every problem named in the file's one error list."""
    t = root.table("journal")
    if t is None:
        return JournalConfig()
    d = JournalConfig()
    cfg = JournalConfig(
        segment_rounds=t.integer("segment_rounds", d.segment_rounds, lo=SEGMENT_ROUNDS[0],
                                 hi=SEGMENT_ROUNDS[1]),
        keep_rounds=t.integer("keep_rounds", None, lo=0, hi=MAX_KEEP_ROUNDS),
        keep_days=t.integer("keep_days", None, lo=0, hi=MAX_DAYS),
        keep_archives_days=t.integer("keep_archives_days", None, lo=0, hi=MAX_DAYS),
        archive_dir=t.path_("archive_dir", None),
        outside_mark=t.path_("outside_mark", None),
    )
    if cfg.keep_archives_days is not None and not cfg.prunes:
        t.error("keep_archives_days", "needs keep_rounds or keep_days (an archive is deleted "
                "only after its segment was pruned)")
    t.done(hints={"keep": "write keep_rounds or keep_days"})
    return cfg
