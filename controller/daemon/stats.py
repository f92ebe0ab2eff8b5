"""The daemon's run counters: what `tablectl status` shows of this run."""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field


@dataclass
class Stats:
    events: int = 0
    rounds: Counter[str] = field(default_factory=Counter)
    rejected: int = 0  # events the machine could not take (a machine fault, logged)
    effect_errors: int = 0
    ignored: int = 0  # events that arrived while out of service (counted, summarised in the log)
    task_failures: Counter[str] = field(default_factory=Counter)  # task name -> deaths
    stop_errors: int = 0  # extensions/devices that failed to stop (logged)
    stop_abandoned: int = 0  # parts (or tasks) that did not stop within their limit (logged)
    started_mono: float = field(default_factory=time.monotonic)
