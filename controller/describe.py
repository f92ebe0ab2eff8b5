"""One line a newcomer can read of a round's journal record (the daemon's per-round lines,
`tablectl watch`, `tablectl round show`)."""

from __future__ import annotations

from typing import Any

from shared.money import dollars_or_dash as _money


def describe_round(record: dict[str, Any]) -> str:
    """One line a newcomer can read: what happened in the round."""
    s = record.get("summary") or {}
    head = f"round {record.get('number')} {record.get('status')}"
    if record.get("status") == "voided":
        line = f"{head}: {s.get('reason', '')}".rstrip(": ")
        by = s.get("voided_by")
        who = by.get("user") if isinstance(by, dict) else None
        if s.get("kind") == "invalidated":  # NSW 16.5-16.6, ACT 15.3-15.4, UTH 13.9-13.10
            line += f"; outcome invalidated ({s.get('rule')})"
        if who:
            line += f"; voided by {who}"
        if s.get("forfeited"):
            line += f"; forfeited {_money(s.get('house_net'))}"
        return line
    if s.get("game") == "paigow":
        banker = s.get("banker") or {}
        who = (
            "house"
            if banker.get("holder") == "house"
            else f"{banker.get('holder')} box {banker.get('box')}"
        )
        dice = s.get("dice") or {}
        cut = (s.get("cut") or {}).get("cut")
        outcomes = " ".join(f"{b}:{o}" for b, o in sorted((s.get("outcomes") or {}).items()))
        money = s.get("settlement") or {}
        return (
            f"{head}: bank {who}; dice {dice.get('box_dice')} -> first box {s.get('first_box')},"
            f" cut {cut}; {outcomes or 'no wagers'}; house {_money(money.get('house_net'))}"
        )
    if "community" in s:
        dealer = s.get("dealer") or {}
        boxes = " ".join(
            f"{b.get('box')}:{b.get('decision')}/{b.get('category')}/{_money(b.get('net'))}"
            for b in s.get("boxes") or []
        )
        payouts = (s.get("jackpot") or {}).get("payouts") or []
        hits = (
            ", ".join(
                f"box {p.get('box')} {p.get('award')} {_money(p.get('amount'))}" for p in payouts
            )
            or "none"
        )
        return (
            f"{head}: board {' '.join(s.get('community') or [])}; dealer"
            f" {' '.join(dealer.get('cards') or [])} {dealer.get('category')}"
            f"{'' if dealer.get('qualifies') else ' (does not qualify)'}; {boxes or 'no wagers'};"
            f" jackpot hits {hits}; house {_money(s.get('house_net'))}"
        )
    if isinstance(s.get("text"), str):
        return f"{head}: {s['text']}"
    return head
