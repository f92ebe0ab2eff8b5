"""`python -m controller.rules --refresh`: after citations change (a merge, a new test), drop the
classifications of clauses that are cited now from classified.toml and write
docs/traceability.md again. A clause that is no longer cited and has no classification stays
"unknown": give it one by hand (people or n/a, with why)."""

from __future__ import annotations

import argparse
import sys

from controller.rules import classify, report
from controller.rules.trace import build, repo_root


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m controller.rules", description=__doc__)
    ap.add_argument("--refresh", action="store_true", required=True,
                    help="prune classified.toml and regenerate docs/traceability.md")
    ap.parse_args(argv)
    root = repo_root()
    dropped = classify.prune(build(root).stale, root)
    trace = build(root)
    (root / report.DOC).write_text(report.markdown(trace), encoding="utf-8")
    print(f"classified.toml: {len(dropped)} now cited, dropped"
          + "".join(f"\n  {seed} {ref}" for seed, ref in dropped))
    print(f"{report.DOC} written")
    for seed in trace.rows:
        print(f"  {seed:<4} {report.totals_line(trace, seed)}")
    for problem in trace.problems:
        print(f"problem: {problem}", file=sys.stderr)
    left = len(trace.unknown()) + len(trace.untested()) + len(trace.problems)
    return 1 if left else 0


if __name__ == "__main__":
    sys.exit(main())
