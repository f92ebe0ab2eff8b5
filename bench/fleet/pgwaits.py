"""What head office's PostgreSQL backends were doing during the burst: `bench.fleet.run --pg-waits`.

A thread reads `pg_stat_activity` every `period_s` for the backends of one run (the bench names
them: `application_name` is the run's schema) and counts each backend's state and wait event.
Where workers wait on each other, it shows as `Lock:*` (a row or transaction lock) or `LWLock:*`;
a backend waiting for its worker to send the next statement shows `Client:ClientRead` (the
worker busy elsewhere, or held off the CPU by its quota); `IO:WALSync` is the commit's fsync.
"""

from __future__ import annotations

import threading
from collections import Counter


class WaitSampler:
    def __init__(self, admin_url: str, application_name: str, period_s: float = 0.02) -> None:
        self.url, self.name, self.period_s = admin_url, application_name, period_s
        self.counts: Counter[str] = Counter()
        self.samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="pg-waits", daemon=True)

    def start(self) -> WaitSampler:
        self._thread.start()
        return self

    def _run(self) -> None:
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as conn:
            while not self._stop.wait(self.period_s):
                rows = conn.execute(
                    "SELECT state, wait_event_type, wait_event, left(query, 48)"
                    " FROM pg_stat_activity"
                    " WHERE application_name = %s AND pid <> pg_backend_pid()",
                    (self.name,)).fetchall()
                self.samples += 1
                for state, kind, event, query in rows:
                    what = f"{kind}:{event}" if kind else "on CPU"
                    if kind == "Lock":  # which statement waits on a row or transaction
                        what += f" [{query}]"
                    self.counts[f"{state}/{what}"] += 1

    def stop(self) -> dict[str, float]:
        """Backends per sample in each state/wait (mean over the samples), busiest first;
        plain `idle` backends (between transactions, or connections for claims and LISTEN)
        are left out."""
        self._stop.set()
        self._thread.join(5)
        n = max(1, self.samples)
        return {k: round(v / n, 2) for k, v in self.counts.most_common()
                if not k.startswith("idle/")}
