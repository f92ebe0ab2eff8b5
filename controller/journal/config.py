"""The journal's retention settings, as the journal and its background upkeep use them
(`[journal]` in table.toml: read by controller/config/journal.py, docs/configuration.md). Here,
in the journal's room, so the journal never imports the table's configuration."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class JournalConfig:
    segment_rounds: int = 2000
    keep_rounds: int | None = None
    keep_days: int | None = None
    keep_archives_days: int | None = None
    archive_dir: Path | None = None  # None: STATE_DIR/archive
    # A second high-water mark outside the state directory: a state directory put back from an
    # older copy, or gone, is then noticed on a standalone table too (docs/journal.md).
    outside_mark: Path | None = None

    @property
    def prunes(self) -> bool:
        return self.keep_rounds is not None or self.keep_days is not None
