"""Progress of a long loop as plain lines in the job's log, at a readable rate.

A job's stderr is its log file (`> {log} 2>&1` in every rule), so a progress bar drawn with
carriage returns becomes one long unreadable line there. `Progress` writes one line, e.g.
`train lapa/fig4 fedavg, trial 1: round 120/200 (60 %), 31 s`, when at least `interval_s`
seconds passed since the last line (env AIRFL_PROGRESS_SECONDS, default 30; 0: every step),
and nothing for a loop that ends sooner. Logs only: no result depends on it.
"""

from __future__ import annotations

import os
import sys
import time

INTERVAL_ENV = "AIRFL_PROGRESS_SECONDS"
DEFAULT_INTERVAL_S = 30.0


def interval_s() -> float:
    """Seconds between two progress lines (AIRFL_PROGRESS_SECONDS; a bad value: the default)."""
    try:
        value = float(os.environ.get(INTERVAL_ENV, DEFAULT_INTERVAL_S))
    except ValueError:
        return DEFAULT_INTERVAL_S
    return value if value >= 0 else DEFAULT_INTERVAL_S


class Progress:
    """`update(done)` after each of `total` steps named `unit` of the loop `label`."""

    def __init__(self, label: str, total: int, unit: str = "round", enabled: bool = True):
        self.label, self.total, self.unit, self.enabled = label, total, unit, enabled
        self.interval = interval_s()
        self.started = self.last = time.monotonic()

    def update(self, done: int) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self.last < self.interval:
            return
        self.last = now
        share = f" ({100 * done / self.total:.0f} %)" if self.total else ""
        print(f"{self.label}: {self.unit} {done}/{self.total}{share}, {now - self.started:.0f} s",
              file=sys.stderr, flush=True)
