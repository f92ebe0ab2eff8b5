"""How the technician commands show the daemon's answers to a person: money in dollars and
cents, nested figures as readable lines, never a raw dict. (`--json` prints the answer as it
came, amounts in integer cents, for machines.)"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from controller.describe import describe_round
from controller.events import EffectKind
from shared.money import dollars, dollars_or_dash

# Keys whose integer values are amounts in cents, wherever they appear in an answer.
MONEY_KEYS = frozenset({
    "amount", "seed", "reserve", "ceiling", "wagered", "paid", "from_house", "house_win",
    "commission", "jackpot_contributions", "jackpot_awards", "player_net", "house_net", "net",
    "meter_at_hit", "pool_before", "pool_after", "wager", "ante", "blind", "trips", "play",
    "funds",
})  # fmt: skip


def value_text(key: str, value: Any) -> str:
    if key in MONEY_KEYS and isinstance(value, int) and not isinstance(value, bool):
        return dollars(value)
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{k} {value_text(str(k), v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(value_text(key, v) for v in value) + "]" if value else "none"
    if value is None:
        return "-"
    return str(value)


def fields_text(data: Mapping[str, Any], skip: tuple[str, ...] = ()) -> str:
    """`key value, key value` of a flat-ish answer, amounts in dollars."""
    return ", ".join(f"{k} {value_text(k, v)}" for k, v in data.items() if k not in skip)


def tree_lines(data: Mapping[str, Any], indent: str = "  ") -> list[str]:
    """A nested answer as indented lines, one figure a line: a mapping of scalars on one line
    (`chung3 pin 4, active no`), deeper mappings as a heading and their lines under it; lists
    of scalars joined; amounts in dollars. What a person reads instead of nested braces."""
    lines: list[str] = []
    for key, value in data.items():
        if isinstance(value, Mapping) and value:
            if all(not isinstance(v, Mapping | list) for v in value.values()) and len(value) <= 4:
                lines.append(f"{indent}{key}: {_flat(value)}")
            else:
                lines.append(f"{indent}{key}:")
                lines += tree_lines(value, indent + "  ")
        elif isinstance(value, list) and any(isinstance(v, Mapping) for v in value):
            lines.append(f"{indent}{key}:")
            for i, item in enumerate(value, 1):
                if isinstance(item, Mapping):
                    lines.append(f"{indent}  {i}. {_flat(item)}")
                else:
                    lines.append(f"{indent}  {i}. {value_text(key, item)}")
        else:
            lines.append(f"{indent}{key}: {_scalar(key, value)}")
    return lines


def _flat(value: Mapping[str, Any]) -> str:
    """`pin 4, active no`: a figure with no value (None) is left out, not shown as `-`."""
    return ", ".join(f"{k} {_scalar(str(k), v)}" for k, v in value.items()
                     if v is not None) or "none"


def _scalar(key: str, value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, Mapping):
        return "none" if not value else _flat(value)
    if isinstance(value, list):
        return ", ".join(_scalar(key, v) for v in value) if value else "none"
    return value_text(key, value)


def pool_text(pool: Any) -> str:
    """The UTH jackpot pool as `tablectl status` shows it."""
    if not isinstance(pool, Mapping):
        return "-"
    ledger = pool.get("ledger") or {}
    pending = pool.get("pending") or []
    held = ", ".join(f"round {h.get('round')}" for h in pending) or "none"
    return (
        f"{pool.get('id')} ({pool.get('mode')}) {dollars_or_dash(pool.get('amount'))};"
        f" seed {dollars_or_dash(pool.get('seed'))},"
        f" reserve {dollars_or_dash(pool.get('reserve'))};"
        f" wagered {dollars_or_dash(ledger.get('wagered'))}, paid"
        f" {dollars_or_dash(ledger.get('paid'))}, from house"
        f" {dollars_or_dash(ledger.get('from_house'))}; pending hits {held}"
    )


def link_text(link: Any) -> str:
    """The head-office link: the machine's word for it, or the link extension's status."""
    if not isinstance(link, Mapping):
        return str(link)
    state = "connected" if link.get("connected") else "NOT connected"
    line = (
        f"{state} to {link.get('broker') or '-'}; outbox pending {link.get('outbox_pending')},"
        f" sent {link.get('sent')}, resent {link.get('resent')}, acked up to"
        f" {link.get('ack_upto')}"
    )
    if link.get("last_error"):
        line += f"; last error: {link['last_error']}"
    return line


def figures_lines(f: Mapping[str, Any], indent: str = "  ") -> list[str]:
    """A span's meters (a shift, the lifetime) as lines; per box when the figures have them."""
    lines = [
        f"{indent}rounds     {f.get('rounds_played')} played, {f.get('rounds_voided')} voided"
        + (f" (rounds {f.get('first_round')}..{f.get('last_round')})"
           if f.get("first_round") is not None else ""),
        f"{indent}wagers     {_by_type(f.get('wagers'))}",
        f"{indent}payouts    {_by_type(f.get('payouts'))}",
        f"{indent}commission {dollars_or_dash(f.get('commission'))}",
        f"{indent}jackpot    contributions {dollars_or_dash(f.get('jackpot_contributions'))},"
        f" awards {dollars_or_dash(f.get('jackpot_awards'))}",
        f"{indent}house win  {dollars_or_dash(f.get('house_win'))}",
    ]
    for box, b in (f.get("boxes") or {}).items():
        lines.append(
            f"{indent}box {box:<3}    wagers {_by_type(b.get('wagers'))}; payouts"
            f" {_by_type(b.get('payouts'))}; commission {dollars_or_dash(b.get('commission'))};"
            f" jackpot {dollars_or_dash(b.get('jackpot_contributions'))} in,"
            f" {dollars_or_dash(b.get('jackpot_awards'))} won; players"
            f" {dollars_or_dash(b.get('player_net'))}"
        )
    return lines


def _by_type(amounts: Any) -> str:
    if not isinstance(amounts, Mapping) or not amounts:
        return "none"
    total = sum(v for v in amounts.values() if isinstance(v, int))
    parts = ", ".join(f"{k} {dollars_or_dash(v)}" for k, v in amounts.items())
    return f"{dollars(total)} ({parts})" if len(amounts) > 1 else parts


def effect_text(effect: Mapping[str, Any]) -> str:
    """One effect of a watched event, short: what it did, not its JSON."""
    kind, data = effect.get("kind"), effect.get("data") or {}
    if kind in (EffectKind.LOG, EffectKind.ALARM):
        head = "ALARM " if kind == EffectKind.ALARM else ""
        return f"{head}{in_dollars(str(data.get('text', '')))}".strip() or str(kind)
    if kind == EffectKind.DEVICE:
        return f"{data.get('device')} {data.get('command')}"
    if kind == EffectKind.DISPLAY:
        return f"meter {data.get('mode')}"
    if kind == EffectKind.OUTBOX:
        return f"to head office: {data.get('type')}"
    if kind == EffectKind.ROUND:
        return f"round {data.get('number')} {data.get('status')}"
    return str(kind)


CENTS_IN_TEXT = re.compile(r"\b(\d+) c\b")  # the machines' words: "wager of p2 on box 2: 1000 c"


def in_dollars(text: str) -> str:
    """A machine's line with its amounts in cents (`1000 c`, as journaled) in dollars, so a
    person's terminal shows one unit ($10.00)."""
    return CENTS_IN_TEXT.sub(lambda m: dollars(int(m.group(1))), text)


def event_args(data: Mapping[str, Any]) -> str:
    """An event's data as `key=value ...`, amounts in dollars (who acted is left out: it is in
    --json and the journal)."""
    return " ".join(f"{k}={value_text(k, v)}" for k, v in data.items() if k != "operator")


def watch_lines(item: Mapping[str, Any]) -> list[str]:
    """One processed event as `tablectl watch` shows it: the event, then its effects, then a
    closed round's summary on its own line."""
    event = item.get("event") or {}
    args = event_args(event.get("data") or {})
    head = f"{item.get('utc')} #{item.get('seq')} {event.get('kind')}"
    if args:
        head += f" {args}"
    effects = [e for e in item.get("effects") or [] if e.get("kind") != "round"]
    said = "; ".join(effect_text(e) for e in effects)
    lines = [f"{head} -> {said}" if said else head]
    for e in item.get("effects") or []:
        if e.get("kind") == "round":
            lines.append("    " + describe_round(e.get("data") or {}))
    return lines


# Config keys whose values are amounts in cents (controller/config.py reads them as cents).
CONFIG_MONEY = frozenset({
    "wager", "seed", "ceiling", "royal_minimum", "straight_flush_minimum", "bonus_for_royal",
    "bonus_for_straight_flush", "cobank_box_maximum",
})  # fmt: skip


def config_lines(cfg: Mapping[str, Any], prefix: str = "") -> list[str]:
    """The configuration as `section.key = value` lines, amounts in dollars beside the cents."""
    lines = []
    for key, value in cfg.items():
        path = f"{prefix}{key}"
        if isinstance(value, Mapping):
            lines += config_lines(value, f"{path}.")
            continue
        text = json.dumps(value)
        money = key in CONFIG_MONEY or ".limits." in f".{path}" or ".fixed." in f".{path}"
        if money and isinstance(value, int) and not isinstance(value, bool):
            text += f"  # {dollars(value)}"
        lines.append(f"{path} = {text}")
    return lines
