"""Out of service, every event that still arrives is dropped (and, while a linked table waits
for head office's answer at start, the dealer's): counted, the first one logged, then one
summary line per IGNORED_SUMMARY_S (a full disk must not flood the log as well)."""

from __future__ import annotations

import logging
import time

from controller.daemon.stats import Stats
from controller.events import DEALER_PREFIX
from controller.logs import event as log_event
from controller.rounds.base import Event

IGNORED_SUMMARY_S = 10.0  # out of service: one line per this many seconds for ignored events


class IgnoredEvents:

    def __init__(self, log: logging.Logger, stats: Stats) -> None:
        self.log = log
        self.stats = stats
        self._since_line = 0  # ignored events not yet in a log line
        self._line_mono: float | None = None  # when the last such line was written
        self._why = "out of service"
        self.held: str | None = None  # why the dealer's keys do nothing (`hold`)

    def hold(self, reason: str | None) -> None:
        """Hold the dealer's keys, saying why, or release them (None): a linked table waiting
        for head office's answer at start (controller/link/numbering.py)."""
        self.held = reason
        log_event(self.log, logging.INFO, f"dealer's keys {reason or 'released'}")

    def passing(self, batch: list[Event], out_of_service: str | None) -> list[Event]:
        """The events of `batch` the table processes now, the others added here: none out of
        service; while the dealer's keys are held, all but the dealer's (devices, the link,
        ticks go on)."""
        if out_of_service is not None:
            self.add(batch)
            return []
        if self.held is None:
            return batch
        keys = [e for e in batch if e.kind.startswith(DEALER_PREFIX)]
        if keys:
            self.add(keys, f"dealer's keys {self.held}")
        return [e for e in batch if not e.kind.startswith(DEALER_PREFIX)]

    def add(self, batch: list[Event], why: str = "out of service") -> None:
        self.stats.ignored += len(batch)
        if self._line_mono is None or why != self._why:
            self.log_summary(final=True)
            self._why = why
            log_event(
                self.log,
                logging.WARNING,
                f"event ignored: {why} (further ones are counted, summarised every"
                f" {IGNORED_SUMMARY_S:.0f} s)",
                kind=batch[0].kind,
                code="E506",
            )
            self._line_mono = time.monotonic()
            self._since_line = len(batch) - 1
            return
        self._since_line += len(batch)
        self.log_summary()

    def log_summary(self, final: bool = False) -> None:
        if self._line_mono is None or not self._since_line:
            return
        elapsed = time.monotonic() - self._line_mono
        if elapsed < IGNORED_SUMMARY_S and not final:
            return
        log_event(
            self.log,
            logging.WARNING,
            f"{self._since_line} events ignored in {elapsed:.0f} s: {self._why}",
            ignored=self._since_line,
            ignored_total=self.stats.ignored,
            code="E506",
        )
        self._line_mono = time.monotonic()
        self._since_line = 0
