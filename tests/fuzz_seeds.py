"""Valid inputs the parser fuzzers start from (bench/fuzz_parsers.py, tests/test_fuzz_parsers.py):
messages built by the code that sends them, and the shipped and documented config files."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TABLE = "T1"  # the table a table-side parser believes it is


def contract_seeds() -> list[bytes]:
    from shared.link import contract as c

    inc = {"round": 3, "pool_id": "p1", "wager": 100, "wagers": 2, "amount": 200,
           "boxes": [1, 4]}
    hit = {"round": 4, "pool_id": "p1", "hits": [{"box": 2, "award": "royal"}],
           "entries": [{"box": 2, "wager": 100, "cards": ["AS", "KS", "QS", "JS", "TS"],
                        "folded": False}]}
    settled = {"round": 3, "card": "card-0001", "reserved": 2500, "wagered": 2000,
               "net": -1500, "returned": 500, "void": False}
    out = [c.outbox_message(TABLE, 1, 5, t, "2026-01-01T00:00:00Z", p)
           for t, p in (("jackpot_increment", inc), ("jackpot_cancel", inc),
                        ("jackpot_hit", hit), ("round_result", {"round": 3, "status": "ok"}),
                        ("card_settled", settled),
                        ("card_restricted", {"card": "card-0001", "by": "sup", "reason": "r"}),
                        ("chips_declared", {"card": "card-0001", "round": None,
                                            "amount": 10000, "kind": "brought"}))]
    rest = [
        c.birth_message(TABLE, "2026-01-01T00:00:00Z", {"pool": {"amount": 1}, "pending_hits": [
            {"round": 4, "boxes": [2]}]}),
        c.status_message(TABLE, "online", "2026-01-01T00:00:00Z"),
        c.ack_message(TABLE, 7),
        c.ack_message(TABLE, 7, pack=c.PACK_MAX),
        c.outbox_pack(TABLE, out[:2]),
        c.pool_message("p1", 500_000, 3, "2026-01-01T00:00:00Z"),
        c.pool_message("p1", 500_000, 4, "2026-01-01T00:00:00Z", awards=2, wager=500),
        c.award_message(TABLE, "p1", 4, 9, [{"box": 2, "award": "royal", "amount": 500_000}]),
        c.segment_message(TABLE, 2, 21, 40, "a" * 64, "b" * 64, "c" * 64, 2_500_000, (3, 4),
                          "2026-01-01T00:00:00.000Z"),
        c.segment_ack_message(TABLE, 2, "b" * 64, "c" * 64, "refused", "a broken chain"),
    ]
    from shared.link import patron as pa

    rest += [  # Player Cards (issue 29)
        pa.card_request(TABLE, f"{TABLE}/1", "card_reserve", "card-0001", round=3,
                        amount=2500, utc="2026-01-01T00:00:00Z"),
        pa.card_request(TABLE, f"{TABLE}/2", "card_check", "card-0001",
                        utc="2026-01-01T00:00:00Z"),
        pa.card_answer(TABLE, f"{TABLE}/1", "card-0001", valid=True, limit=10000,
                       remaining=7500, period_end="2026-01-02T00:00:00.000Z", granted=2500),
    ]
    return [c.dumps(m) for m in out + rest]


def frame_seeds() -> list[bytes]:
    from devices.proto.framing import ACK, DATA, NAK, encode, message

    return [encode(1, DATA, message("HELLO", "v1")), encode(2, DATA, message("DICE", 3, 4, 5)),
            encode(3, ACK), encode(4, NAK), encode(5, DATA, message("CARD", "AS", 12))]


def alpha_seeds() -> list[bytes]:
    from devices.proto.alpha import (
        FLASH,
        HOLD,
        encode_read_text,
        encode_text_reply,
        encode_write_text,
    )

    return [encode_write_text("JACKPOT $5,000.00", HOLD), encode_write_text("CLOSED", FLASH),
            encode_read_text(), encode_text_reply("JACKPOT $5,000.00")]


def control_seeds() -> list[bytes]:
    return [b'{"cmd": "status", "args": {}}\n', b'{"cmd": "journal_tail", "args": {"n": 5}}\n',
            b'{"cmd": "dealer", "args": {"action": "bank", "box": 3}}\n']


def table_config_seeds() -> list[bytes]:
    return [p.read_bytes() for p in sorted((REPO / "examples").glob("*.toml"))]


def ho_config_seeds() -> list[bytes]:
    doc = (REPO / "docs" / "headoffice.md").read_text()
    blocks = re.findall(r"```toml\n(.*?)```", doc, re.S)
    return [b.encode() for b in blocks]
