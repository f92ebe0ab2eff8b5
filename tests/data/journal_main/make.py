"""How tests/data/journal_main/ was made: run once with the journal code of main at e04d633
(controller/journal.py before it became a package), from the repository root:

    python3 tests/data/journal_main/make.py tests/data/journal_main

It writes a closed journal (`journal.sqlite3`, `journal.mark`, the development key
`journal.key`) and `expected.json`: what that code read back from it. tests/journal/
test_journal_golden.py checks that the current code verifies and reads it identically.
Running it again makes a different journal (new key, new times): the committed one is the
reference, this file only says how it came about.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from controller.journal import Entry, Journal, verify_dir
from controller.rounds.base import Effect, Event, Now

TABLE, GAME = "G01", "paigow"


def now(i: int) -> Now:
    return Now(f"2026-11-26T08:{i // 60 % 60:02d}:{i % 60:02d}.000Z", 1000 * i)


def main(out: Path) -> None:
    with Journal.open(out, table_id=TABLE, game=GAME) as j:
        for r in (1, 2, 3, 4):
            for k in range(6):
                i = j.last_seq + 1
                fx = [Effect("display", {"mode": "text", "text": "x"})]
                if k == 2:
                    fx.append(Effect("outbox", {"type": "increment",
                                                "payload": {"cents": 125 * i, "box": k}}))
                last = k == 5
                if last:
                    summary = {"r": r, "net": -500 * r, "who": "Zoë ✓"}
                    fx.append(Effect("round", {"number": r, "status": "voided" if r == 3
                                               else "completed", "summary": summary}))
                    # A round result that is the round record's summary: stored once.
                    fx.append(Effect("outbox", {"type": "round_result", "payload": summary}))
                j.append(Event("dealer.wager", {"i": i, "box": k, "amount": 2000 + i}),
                         now(i), round=r, effects=fx,
                         snapshot={"round": r, "after": i} if last else None)
            if r == 2:
                j.ack_outbox(3, utc="2026-11-26T08:01:00.000Z")
        # One commit of several records.
        j.append_batch([Entry(Event("dice.result", {"box_dice": [1, 2, 3], "n": n}), now(40 + n),
                              5) for n in range(4)])
        expected = {
            "last_seq": j.last_seq, "last_hash": j.last_hash,
            "last_round_number": j.last_round_number, "last_event_round": j.last_event_round,
            "events": [dict(e.as_json(), hash=e.hash) for e in j.iter_events()],
            "pending_outbox": [m.as_json() for m in j.pending_outbox()],
            "rounds": {n: (None if (rec := j.round_record(n)) is None else rec.as_json())
                       for n in range(0, 6)},
            "round_events": {n: [e.seq for e in j.round_events(n)] for n in range(0, 6)},
            "tail": [e.seq for e in j.tail(5)],
            "replay_point": [j.replay_point()[0], [e.seq for e in j.replay_point()[1]]],
            "key_id": j.key.key_id,
        }
        summary = j.summary()
    for k in ("path", "file_bytes"):
        summary.pop(k)
    expected["summary"] = summary
    rep = verify_dir(out)
    expected["verify"] = rep.as_json()
    expected["verify_mark"] = rep.mark
    (out / "expected.json").write_text(json.dumps(expected, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
