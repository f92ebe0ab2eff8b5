"""Head office under cProfile: `bench.fleet.run --profile-worker FILE`.

Run as a module, this is `tablectl-headoffice` with the profiler on from the start:
`python -m bench.fleet.profiled OUT.prof --config FILE run`. The bench stops head office with
SIGTERM; the handler writes the profile (pstats format) then exits at once, so the stats are
the worker's whole run: start-up, the burst and the latency samples. Read them with
`python -m pstats OUT.prof` (`sort tottime`, `stats 30`).
"""

from __future__ import annotations

import cProfile
import os
import signal
import sys
from types import FrameType


def main(argv: list[str]) -> int:
    out, rest = argv[0], argv[1:]
    profiler = cProfile.Profile()

    def dump(signum: int, frame: FrameType | None) -> None:
        profiler.disable()
        profiler.dump_stats(out)
        os._exit(0)

    signal.signal(signal.SIGTERM, dump)
    from headoffice.cli import main as headoffice

    profiler.enable()
    code = headoffice(rest)
    profiler.disable()
    profiler.dump_stats(out)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
