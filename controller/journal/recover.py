"""After a loss: `accept_loss` and `start_fresh`, the documented ways back into service
(docs/journal.md, "Recovering"), each recorded as a journal record that says who, why, and
where the round numbers and outbox ids go on from, and sent to head office."""

from __future__ import annotations

import contextlib
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from controller.events import Effect, EffectKind, Event, Kind, Now, OutboxType
from controller.journal.errors import EntryRefused, JournalError
from controller.journal.mark import MARK_FILE, MarkError, parse, read_mark
from controller.journal.marks import fresh_refusal
from controller.journal.records import LOSS_KIND
from controller.journal.schema import JOURNAL_FILE, read_meta, utc_now
from controller.journal.store import Journal

MAX_REASON_CHARS = 500
MAX_PROBLEM_CHARS = 1000  # the contract's bound on a table_recovered text (MAX_RECOVERY_TEXT)
# The table's round machine, built from its config, for a recovery that voids a round left
# open in the restored copy (`_void_phantom`); None: the config cannot be read, and such a
# recovery is refused saying so.
MachineFactory = Callable[[], Any]  # a RoundMachine (rounds/base.py): the journal imports no rounds


def _check(reason: str, outbox_after: int | None, round_after: int | None) -> str:
    for name, value in (("outbox_after", outbox_after), ("round_after", round_after)):
        if value is not None and (type(value) is not int or not 0 <= value < 2**62):
            raise EntryRefused(f"{name} must be a number >= 0, got {value!r}")
    reason = reason.strip()
    if not reason or len(reason) > MAX_REASON_CHARS or not reason.isprintable():
        raise EntryRefused(f"the reason must be 1..{MAX_REASON_CHARS} printable characters")
    return reason


def _record(j: Journal, state_dir: Path, data: dict[str, Any]) -> dict[str, Any]:
    """Append the recovery record with its message to head office; the mark names it."""
    now = Now(utc_now(), time.monotonic_ns() // 1_000_000)
    # outbox_lost: the ids skipped, which head office may never have received (the link
    # down while the lost records were written); its message says so, and head office takes
    # it across that gap instead of waiting for messages the table no longer has.
    keys = ("by", "reason", "problem", "round_next", "outbox_next", "journal_seq", "fresh",
            *(k for k in ("voided_round", "voided_held", "outbox_lost")
              if data.get(k) is not None))
    effects = [Effect(EffectKind.OUTBOX, {"type": OutboxType.TABLE_RECOVERED, "payload": {
        k: data[k] for k in keys}})]
    seq = j.append(Event(LOSS_KIND, data), now, round=j.last_event_round, effects=effects)
    # Durable (unlike the per-commit update): the marks now name this record.
    j.marks.create(seq, j.outbox.next_id - 1, j.last_hash, j.last_round_number)
    return {"seq": seq, "utc": now.utc, **data}


def _marks(state_dir: Path, outside_mark: Path | None) -> list[Path]:
    return [state_dir / MARK_FILE] + ([outside_mark] if outside_mark is not None else [])


def accept_loss(state_dir: Path | str, *, reason: str, user: str,
                key_file: Path | None = None, outbox_after: int | None = None,
                round_after: int | None = None, outside_mark: Path | None = None,
                machine: MachineFactory | None = None) -> dict[str, Any]:
    """Record, as the journal's next record, that records (or its high-water mark) were lost,
    then reset the mark to the journal as it stands: the documented way back into service
    after a loss (`tablectl journal accept-loss`; docs/journal.md, "Recovering").

    New outbox messages continue after the last id the table is known to have used: the mark's,
    or `outbox_after` (head office's acknowledged id, from the out-of-service message); new
    rounds after the last round number it is known to have used: the mark's, or `round_after`
    (head office's last ledgered round), so that head office never takes a new message or
    round for one it already applied. The chain and MACs must verify: only the mark (or head
    office) may disagree. JournalError if they do not, or if there is nothing to accept.
    `outside_mark` ([journal] outside_mark): the mark's copy outside the state directory,
    read and reset like the mark.

    A round open in the journal whose jackpot increments were sent (its wagers locked) while
    numbering goes on past its number is voided first (`_void_open_round`, with `machine`, a
    factory of the table's round machine): its wagers are never carried to a new number that
    head office holds no increment for (docs/journal.md, "A round open in the restored copy").
    Returns the record's data with its seq."""
    reason = _check(reason, outbox_after, round_after)
    state_dir = Path(state_dir)
    path = state_dir / JOURNAL_FILE
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            meta = read_meta(conn)
        finally:
            conn.close()
    except sqlite3.Error as exc:
        raise JournalError(f"journal {path} unreadable: {exc}") from exc
    table_id, game = meta.get("table_id", ""), meta.get("game", "")
    with Journal.open(state_dir, table_id=table_id, game=game, create=False, upgrade=False,
                      key_file=key_file, outside_mark=outside_mark, _recovering=True) as j:
        last_out, last_round = j.outbox.next_id - 1, j.last_round_number
        text, mark_seq = j.mark_problem or (None, None)
        if text is None:
            ahead = [f"head office acknowledged outbox message {outbox_after}, the journal's "
                     f"last is message {last_out}"] if (outbox_after or 0) > last_out else []
            if (round_after or 0) > last_round:
                ahead.append(f"head office has ledgered round {round_after}, the journal's "
                             f"last is round {last_round}")
            if not ahead:
                raise JournalError(f"journal {path}: nothing to accept, the journal and its "
                                   f"high-water mark agree (seq {j.last_seq}, outbox message "
                                   f"{last_out}, round {last_round})")
            text = "; ".join(ahead)
        mark_out, mark_round = _readable_mark(_marks(state_dir, outside_mark), j)
        round_to = max(last_round, mark_round, round_after or 0) + 1
        journal_seq = j.last_seq  # where the journal ended: before the void's record, if any
        acked = max(j.outbox.acked_upto, outbox_after or 0)
        found = _void_open_round(j, round_to, user, acked, machine)
        voided = None if found is None else found[0]
        if found is not None and found[1]:
            text += (f"; round {voided}, open in the restored copy with its messages at head "
                     "office, voided here: head office's record of the round stands (no "
                     "result, cancellation or second increment sent for it)")
        elif found is not None:
            text += (f"; round {voided}, open in the restored copy, voided: its jackpot "
                     "wagers cancelled and returned (UTH 15.3.1)")
        # The void may have recorded the round and its messages: numbering goes on after them.
        last_out, last_round = j.outbox.next_id - 1, j.last_round_number
        skip_to = max(last_out, mark_out, outbox_after or 0) + 1
        if len(text) > MAX_PROBLEM_CHARS:
            text = text[:MAX_PROBLEM_CHARS - 3] + "..."
        data = {"by": user, "reason": reason, "problem": text, "mark_seq": mark_seq,
                "journal_seq": journal_seq, "fresh": False,
                "lost": ([journal_seq + 1, mark_seq]
                         if mark_seq is not None and mark_seq > journal_seq else None),
                "outbox_next": skip_to, "outbox_lost": ([last_out + 1, skip_to - 1]
                                                        if skip_to > last_out + 1 else None),
                "round_next": round_to, "rounds_lost": ([last_round + 1, round_to - 1]
                                                        if round_to > last_round + 1 else None),
                "voided_round": voided,
                "voided_held": None if found is None else found[1],
                # The voided round's jackpot wagers that stand at head office: the void's
                # cancellation was not sent, so the round machine adds them back to its
                # ledger (`tablectl status` pool.ledger.wagered) when it replays this record.
                **({"held_wagers": found[2]} if found is not None and found[2] else {})}
        return _record(j, state_dir, data)


def _open_round_messages(j: Journal, number: int) -> list[int]:
    """The outbox ids of the jackpot increments sent for round `number` (a round still open:
    its wagers locked, UTH 5.5): what head office keys by the round's number. Other messages
    that name a round (chips declared, UTH 13.2) tie no wager to it."""
    return [m.id for e in j.round_events(number) for m in e.outbox
            if m.type == OutboxType.JACKPOT_INCREMENT and isinstance(m.payload, dict)
            and m.payload.get("round") == number]


def _void_open_round(j: Journal, round_to: int, user: str, acked: int,
                     machine: MachineFactory | None) -> tuple[int, bool, int] | None:
    """Void the round open in the journal when numbering goes on past it (its number is below
    `round_to`) and its jackpot increments were sent (its wagers locked, UTH 5.5): carried to
    a new number, its wagers would have no increment there. The void is the supervisor's
    (`dealer.void`) as the table's own machine accepts it in that phase, its
    record put in the journal before the recovery's: replaying it returns the round's wagers
    on the table (UTH 11.3, 15.3.1) and opens the next round, which the recovery record then
    numbers past head office's (docs/journal.md, "A round open in the restored copy").

    - Head office acknowledged its messages (id <= `acked`): the lost records played the round
      to its end and head office holds its increments and its result under its number. Only
      the void's event is journaled, not its effects: no round result, cancellation or second
      increment goes to head office, whose record of the round stands, and the journal keeps
      no second record of that round number.
    - Head office never acknowledged them: the void is journaled with its effects, the round's
      record (voided) and its messages (the jackpot wagers cancelled, 15.3.1; the voided
      result): head office gets the increments, their cancellation and the void in order.

    Returns (the voided round's number, whether head office held it, the cents of its jackpot
    wagers the void cancelled at the table but not at head office: 0 unless held), or None: no round
    open, its number stands (head office has not ledgered it), or nothing of it was sent
    (renumbered, base.skip_rounds). JournalError if the machine refuses the void or cannot be
    built."""
    number = j.last_event_round
    if number <= j.last_round_number or number >= round_to:
        return None  # no round open, or numbering does not pass it: its number stands
    sent = _open_round_messages(j, number)
    if not sent:
        return None  # nothing of it left the table: renumbered (base.skip_rounds)
    held = sent[0] <= acked
    where = (f"round {number} is open in the journal and its jackpot increments (messages "
             f"{sent[0]}..{sent[-1]}) "
             + ("are at head office" if held else "were sent"))
    if machine is None:
        raise JournalError(f"{where}: voiding it needs the table's config (--config)")
    try:
        game = machine()
    except Exception as exc:  # the config's own error, whatever its type
        raise JournalError(f"{where}: the table's round machine: {exc}") from exc
    snapshot, events = j.replay_point()
    state = game.initial() if snapshot is None else game.from_json(snapshot)
    for stored in events:
        state, _ = game.step(state, stored.event, stored.now)
    now = Now(utc_now(), time.monotonic_ns() // 1_000_000)
    why = (f"head office holds round {number}'s increments and its result from the lost "
           "records" if held else f"the journal goes on past round {number}'s number")
    void = Event(Kind.DEALER_VOID, {
        "reason": f"recovery: round {number} was open in the restored copy; {why}",
        "rule": "UTH 11.3, 15.3.1 (a recovery: docs/journal.md)", "recovery": True,
        "held_by_head_office": held, "operator": {"uid": 0, "user": user}})
    _, effects = game.step(state, void, now)
    if not any(fx.kind == EffectKind.ROUND and fx.data.get("number") == number
               and fx.data.get("status") == "voided" for fx in effects):
        said = "; ".join(str(fx.data.get("text", fx.data)) for fx in effects)[:300]
        raise JournalError(f"{where}: the game refused to void it ({said})")
    j.append(void, now, round=number, effects=() if held else effects)
    kept = sum(int(fx.data["payload"]["amount"]) for fx in effects
               if fx.kind == EffectKind.OUTBOX and fx.data.get("type") == OutboxType.JACKPOT_CANCEL)
    return number, held, kept if held else 0


def start_fresh(state_dir: Path | str, *, table_id: str, game: str, reason: str, user: str,
                key_file: Path | None = None, outbox_after: int | None = None,
                round_after: int | None = None, outside_mark: Path | None = None
                ) -> dict[str, Any]:
    """Start a new journal where one is missing (`tablectl journal start-fresh`): the only way
    to a new journal where there was one (`fresh_refusal`). Its first record says who, why,
    what said a journal had been there, and where round numbers and outbox ids go on from
    (`round_after`/`outbox_after`: head office's, when linked). JournalError if a journal is
    there."""
    reason = _check(reason, outbox_after, round_after)
    state_dir = Path(state_dir)
    path = state_dir / JOURNAL_FILE
    if path.exists():
        raise JournalError(f"journal {path} exists: start-fresh never replaces a journal "
                           "(`tablectl journal accept-loss` records a loss in it)")
    problem = fresh_refusal(state_dir, outside_mark) or "no earlier journal found"
    old_marks: list[tuple[Path, bytes]] = []
    for mark_path in _marks(state_dir, outside_mark):
        # The lost journal's marks, if they are still there: read before new ones replace them.
        with contextlib.suppress(OSError):
            old_marks.append((mark_path, mark_path.read_bytes()))
    with Journal.open(state_dir, table_id=table_id, game=game, create=True, upgrade=False,
                      key_file=key_file, outside_mark=outside_mark) as j:
        mark_out = mark_round = 0
        for mark_path, raw in old_marks:
            try:
                old = parse(raw, j.key, table_id, game)
            except MarkError as exc:
                problem += f"; the mark {mark_path} is unusable ({exc})"
                continue
            mark_out, mark_round = max(mark_out, old.out), max(mark_round, old.round or 0)
        outbox_next = max(mark_out, outbox_after or 0) + 1
        data = {"by": user, "reason": reason, "problem": f"new journal: {problem}",
                "mark_seq": None, "journal_seq": 0, "fresh": True, "lost": None,
                "outbox_next": outbox_next,
                "outbox_lost": [1, outbox_next - 1] if outbox_next > 1 else None,
                "round_next": max(mark_round, round_after or 0) + 1, "rounds_lost": None}
        return _record(j, state_dir, data)


def _readable_mark(paths: list[Path], j: Journal) -> tuple[int, int]:
    """The last outbox id and round number the (genuine) marks name; 0 where one is missing,
    forged, or (the round) of version 1."""
    out = round_ = 0
    for path in paths:
        try:
            mark = read_mark(path, j.key, j.table_id, j.game)
        except (OSError, MarkError):
            continue
        out, round_ = max(out, mark.out), max(round_, mark.round or 0)
    return out, round_
