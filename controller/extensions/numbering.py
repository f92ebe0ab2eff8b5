"""Head office's acks, and whether the table's journal is behind head office's numbering
(docs/journal.md, "Recovering"): head office's answer to the table's birth names its last
acknowledged message and, since 2026-11-28, the last round it has ledgered. A journal behind
either (an older copy put back, a lost write-ahead log, a new journal) would number rounds or
messages again that head office holds: the table goes out of service naming the command that
continues past them. At start the dealer's keys wait for that answer, at most `confirm_s`."""

from __future__ import annotations

import asyncio
import logging

from controller.extensions.base import Table
from controller.journal import AckBeyondJournal, JournalError
from controller.link import contract
from controller.link.relay import OutboxRelay
from controller.logs import event as log_event


class Numbering:
    """The link's check of head office's answer, and the dealer's keys held until it comes."""

    def __init__(self, confirm_s: float) -> None:
        self.confirm_s = confirm_s
        self.log = logging.getLogger("tablectl.link")
        # Head office's first answer since the daemon started: None (not waited for), False
        # (the dealer's keys held until it comes), True (came, or the wait ended).
        self.confirmed: bool | None = None

    def start(self, table: Table, tasks: list[asyncio.Task[None]]) -> None:
        """Hold the dealer's keys at the first start; the task that ends the wait goes to
        `tasks` (again if the link was restarted meanwhile)."""
        self.log = table.log
        if self.confirm_s > 0 and self.confirmed is None:
            self.confirmed = False
            table.hold("held: waiting for head office's answer (its last round and message) "
                       f"before the first round, at most {self.confirm_s:g} s")
        if self.confirmed is False:
            tasks.append(asyncio.create_task(self._deadline(table), name="link-numbering"))

    async def _deadline(self, table: Table) -> None:
        await asyncio.sleep(self.confirm_s)
        if self.confirmed is False:
            self.confirmed = True
            log_event(self.log, logging.WARNING,
                      f"no answer from head office within {self.confirm_s:g} s of the start: "
                      "playing without its confirmation that the journal is not behind it "
                      "(checked when it answers)", code="E301")
            table.hold(None)

    def on_ack(self, table: Table, relay: OutboxRelay, payload: bytes, table_id: str) -> None:
        """Head office's cumulative ack: the relay records it, then the numbers are checked
        (`answered`). SchemaError if it is malformed or goes back."""
        upto, ho_round, pack = contract.parse_ack_fields(payload, table_id)
        relay.head_office_packs(pack)
        try:
            relay.ack(upto)
        except AckBeyondJournal as exc:  # head office applied messages this journal lost
            relay.stats.bad_acks += 1
            self.answered(table, upto, ho_round, (exc.upto, exc.last))
        except ValueError as exc:
            relay.stats.bad_acks += 1
            raise contract.SchemaError(f"ack refused: {exc}") from None
        except JournalError as exc:
            table.go_out_of_service(f"journal write failed on an ack: {exc}", code="E102")
        else:
            self.answered(table, upto, ho_round)

    def answered(self, table: Table, upto: int, ho_round: int | None,
                 beyond: tuple[int, int] | None = None) -> None:
        """Head office acknowledged `upto` (`beyond`: (its id, the journal's last) when that is
        past the journal) and named `ho_round` as its last round (None: an ack that does not)."""
        journal = table.journal
        assert journal is not None
        # The last round recorded, or the open round once its increments were written: not
        # merely the round the table opened (after a recovery from the marks alone, a round
        # head office holds may be opened again before its answer, with a shuffle or a lamp).
        ours = journal.last_round_told()
        if beyond is not None:
            found = (f"head office acknowledged outbox message {beyond[0]}, the journal's last "
                     f"is message {beyond[1]}")
        elif ho_round is not None and ho_round > ours:
            found = f"head office has ledgered round {ho_round}, the journal's last is round {ours}"
        else:
            if self.confirmed is False:
                self.confirmed = True
                log_event(self.log, logging.INFO, "head office answered: the journal is not "
                          "behind it")
                table.hold(None)
            return
        self.confirmed = True  # answered: out of service now, the keys stay held
        rounds = "" if ho_round is None else f" --round-after {ho_round}"
        why = (f"journal lost data: {found} (recover past head office's numbering: "
               f"`sudo tablectl journal accept-loss --state-dir {journal.path.parent} "
               f"--outbox-after {upto}{rounds} --reason TEXT`; docs/journal.md, "
               "\"Recovering\")")
        if table.out_of_service is None:
            table.go_out_of_service(why, code="E102")
        else:
            log_event(self.log, logging.WARNING, f"link: ack refused: {why}", code="E303")
