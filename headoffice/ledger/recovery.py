"""A table's recovery message (controller/journal/recover.py): whether it closes a gap in the
table's message ids, and the alarm that says what the table did (docs/journal.md, "Recovering")."""

from __future__ import annotations

from typing import Any

from shared.link import contract


def closes_gap(last_seq: int, body: dict[str, Any]) -> bool:
    """Whether `body`, ahead of a gap after `last_seq`, is a table's recovery message whose
    `outbox_lost` (controller/journal/recover.py) covers the gap: ids the lost journal records
    used, which head office never received and no table has any more (docs/journal.md,
    "Recovering"). Applied across the gap, not parked waiting for them. Only a valid one: a
    refused message would pass the gap without the alarm that names it."""
    if body.get("type") != contract.RECOVERED:
        return False
    try:
        payload = contract.check_outbox_payload(contract.RECOVERED, body.get("payload"))
    except contract.SchemaError:
        return False
    lost = payload.get("outbox_lost")
    return (isinstance(lost, list) and lost[0] <= last_seq + 1
            and lost[1] == body.get("seq", 0) - 1)


def recovery_alarm(table_id: str, p: dict[str, Any], seq: int, last_seq: int,
                   last_round: int) -> tuple[str, bool]:
    """The alarm's text for a table's recovery (lost records accepted, or a new journal
    started): who, why, and where it goes on; and whether it forks: it goes on at a round
    number head office has already ledgered (`last_round`), which would be used twice."""
    what = "started a new journal" if p["fresh"] else "accepted a loss of journal records"
    text = (f"table {table_id} {what} (message {seq}): by {p['by']}: {p['reason']}"
            f" ({p['problem']}); rounds go on at {p['round_next']}, messages at"
            f" {p['outbox_next']}")
    voided = p.get("voided_round")
    if isinstance(voided, int) and p.get("voided_held") is False:
        # recover.py: head office never had the round's increments; they, their
        # cancellation and the void come with the table's messages (UTH 15.3.1)
        text += (f"; the round {voided} left open in its restored copy was voided at the"
                 f" table: its jackpot wagers cancelled and returned (UTH 15.3.1)")
    elif isinstance(voided, int):  # a phantom: head office's record stands
        text += (f"; the round {voided} left open in its restored copy was voided"
                 f" at the table: head office's record of round {voided} stands")
    if seq > last_seq + 1:  # closes_gap: messages the table lost before they came
        text += (f"; messages {last_seq + 1}..{seq - 1} were lost at the table before"
                 " head office received them")
    forked = p["round_next"] <= last_round
    if forked:
        text += (f"; BUT head office has ledgered round {last_round}: round numbers"
                 f" {p['round_next']}..{last_round} would be used twice")
    return text, forked
