"""`tablectl-headoffice card`: the Player Cards head office knows (issue 29;
headoffice/ledger/cards.py).

    tablectl-headoffice card add CARD (--limit C | --no-limit) [--period day|week|month]
                                 [--length N] [--start WHEN] --reason TEXT [--operator NAME]
    tablectl-headoffice card show CARD [--json]
    tablectl-headoffice card list [--json]
    tablectl-headoffice card limit CARD (--limit C | --no-limit) [--period P] [--length N]
                                   --reason TEXT [--operator NAME]
    tablectl-headoffice card restrict|unrestrict|invalidate CARD --reason TEXT [--operator NAME]

Amounts are cents. The card is its opaque id, never a name. Whoever decides is the operating
system's login (`cli.login_name`), authorised in headoffice.toml `[service] operators`, and
says why (`--reason`, recorded with their name and shown in the audit trail).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterable
from typing import Any

from headoffice.ledger import Ledger, cards
from shared.errors import InputError
from shared.money import dollars_or_dash as _money

DECIDE = ("add", "limit", "restrict", "unrestrict", "invalidate")


def add_parsers(sub: Any, cfg: argparse.ArgumentParser) -> None:
    card = sub.add_parser("card", help="Player Cards: Loss Limits, restrictions (UTH 13)")
    csub = card.add_subparsers(dest="card_cmd", required=True)
    for verb, text in (("show", "a card: limit, period, net, reserved, tables, refusals"),
                       ("list", "every card: limit, net so far, reserved, remaining")):
        p = csub.add_parser(verb, parents=[cfg], help=text)
        if verb == "show":
            p.add_argument("card")
        p.add_argument("--json", action="store_true")
    for verb, text in (("add", "a new card (its opaque id) with its Loss Limit"),
                       ("limit", "a new Loss Limit or period, from now"),
                       ("restrict", "restrict the player until the period resets (UTH 13.4)"),
                       ("unrestrict", "lift a restriction"),
                       ("invalidate", "the card is no longer valid (UTH 13.1)")):
        p = csub.add_parser(verb, parents=[cfg], help=text)
        p.add_argument("card")
        p.add_argument("--reason", required=True, help="why (recorded with your name)")
        p.add_argument("--operator", help="must be who runs the console (default)")
        if verb in ("add", "limit"):
            lim = p.add_mutually_exclusive_group(required=True)
            lim.add_argument("--limit", type=int, help="the Loss Limit per period, cents")
            lim.add_argument("--no-limit", action="store_true",
                             help="none (only where the profile does not require one)")
            p.add_argument("--period", choices=cards.PERIOD_KINDS,
                           default="day" if verb == "add" else None)
            p.add_argument("--length", type=int, default=1 if verb == "add" else None,
                           help="periods of --period in one Loss Limit period")
        if verb == "add":
            p.add_argument("--start", help="when the first period starts (ISO 8601 UTC;"
                           " default: today 00:00 UTC)")


def format_card(c: dict[str, Any]) -> str:
    state = "VALID" if c["status"] == "active" else f"INVALID: {c.get('invalid_why') or ''}"
    limit = "none" if c["limit"] is None else _money(c["limit"])
    lines = [f"card {c['card']}: {state}; Loss Limit {limit} per {c['period_len']}"
             f" {c['period_kind']}(s); period {c['period_start']} .. {c['period_end']}",
             f"  net so far {_money(c['net'])} (net loss {_money(c['net_loss'])}); reserved"
             f" {_money(c['reserved'])}; remaining {_money(c['remaining'])}"]
    if c.get("restricted_until"):
        lines.append(f"  RESTRICTED by {c['restricted_by']} until {c['restricted_until']}"
                     f" (UTH 13.4): {c['restricted_why']}")
    for r in c.get("held", []):
        lines.append(f"  held: table {r['table_id']} round {r['round']} {_money(r['amount'])}"
                     f" since {r['utc']}")
    for t in c.get("tables", []):
        lines.append(f"  table {t['table_id']}: {t['rounds']} round(s), wagered"
                     f" {_money(t['wagered'])}, net {_money(t['net'])}, last {t['last_utc']}")
    for e in c.get("refusals", [])[:20]:
        lines.append(f"  refused {e['utc']} table {e['table_id']} round {e['round']}"
                     f" {_money(e['amount'])}: {e['detail']}")
    for e in c.get("decisions", [])[:20]:
        lines.append(f"  {e['action']} {e['utc']} by {e['person'] or '-'}"
                     f"{' at ' + e['table_id'] if e['table_id'] else ''}: {e['detail']}")
    return "\n".join(lines)


def run(args: argparse.Namespace, ledger: Ledger, allowed: Iterable[str],
        operator: Callable[[], str]) -> int:
    """The command; 2 for bad input (one line naming it). LedgerError (refused: not
    authorised, no such card, no reason) is the caller's to report (exit 1)."""
    db = ledger.db
    try:
        if args.card_cmd == "list":
            rows = cards.list_cards(db)
            if args.json:
                print(json.dumps(rows, indent=2))
            else:
                print("\n".join(format_card(r) for r in rows) or "no cards")
            return 0
        if args.card_cmd == "show":
            view = cards.show(db, args.card)
            print(json.dumps(view, indent=2) if args.json else format_card(view))
            return 0
        who = operator()
        common = {"operator": who, "allowed": allowed, "reason": args.reason}
        if args.card_cmd in ("add", "limit"):
            limit = None if args.no_limit else args.limit
            if args.card_cmd == "add":
                view = cards.add_card(db, args.card, limit=limit, kind=args.period,
                                      length=args.length, start=args.start, **common)
            else:
                view = cards.set_limit(db, args.card, limit=limit, kind=args.period,
                                       length=args.length, **common)
        else:
            step = {"restrict": cards.restrict, "unrestrict": cards.unrestrict,
                    "invalidate": cards.invalidate}[args.card_cmd]
            view = step(db, args.card, **common)
    except (InputError, ValueError) as exc:
        print(f"tablectl-headoffice: {exc}", file=sys.stderr)
        return 2
    print(f"{args.card_cmd.upper()} by {who}: {args.reason.strip()}")
    print(format_card(view))
    return 0
