"""The outbox message types: every message a table's journal sends head office, by its `type`
(docs/mqtt.md). Part of the contract both ends speak; the table's registries
(controller/events.py, beside its event and effect kinds) name them from here. A type's text is
inside the journal's hash chain and on head office's wire: it never changes."""

from __future__ import annotations

from enum import StrEnum


class OutboxType(StrEnum):
    """Every outbox message type (an `outbox` effect's `type`): the MQTT contract's
    (shared/link/contract.py checks each payload; docs/mqtt.md)."""

    JACKPOT_INCREMENT = "jackpot_increment"
    JACKPOT_CANCEL = "jackpot_cancel"
    JACKPOT_HIT = "jackpot_hit"
    JACKPOT_VERIFIED = "jackpot_verified"
    ROUND_RESULT = "round_result"
    SHIFT_METERS = "shift_meters"
    TABLE_RECOVERED = "table_recovered"  # a recovery of the journal (controller/journal/recover.py)
    # Player Cards (issue 29; shared/link/patron.py checks their payloads).
    CARD_SETTLED = "card_settled"  # one per card per round: its net for the Loss Limit
    CARD_RESTRICTED = "card_restricted"  # a supervisor restricted the player (UTH 13.4)
    CHIPS_DECLARED = "chips_declared"  # chips bought or brought to the table (UTH 13.2)
