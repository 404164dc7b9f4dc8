"""How many trials a paired comparison needs: the power calculation behind the claims'
"more trials" column (`airfl.core.claims`) and the smallest difference an inconclusive
comparison could have detected.

With the observed mean difference and spread taken as the true ones, a paired 95 % t interval
over n trials stays on one side of a boundary `distance` away with 80 % power once
(t_{1-a/2, n-1} + t_{power, n-1}) / sqrt(n) * spread <= distance: the interval shrinks as
~1/sqrt(n).
"""

from __future__ import annotations

import math
from typing import Iterable

from airfl.core.experiments import INCONCLUSIVE, ClaimResult

LEVEL = 0.95
"""The two-sided confidence level of every paired interval."""
POWER = 0.80
"""The power at which an inconclusive comparison reports the difference it could have detected
(`PairedDifference.detectable`): the conventional 80 %."""
MAX_TRIALS = 100_000


def power_factor(n: int, level: float = LEVEL) -> float:
    """(t_{1-a/2} + t_{power}) / sqrt(n), n - 1 degrees of freedom: a true difference of this
    many spreads (of the per-trial values) is detected by n trials with POWER at `level`."""
    from scipy.stats import t as student

    return float(student.ppf(0.5 + level / 2, n - 1) + student.ppf(POWER, n - 1)) / math.sqrt(n)


def trials_for(distance: float, spread: float, level: float = LEVEL) -> float:
    """The fewest trials (>= 2) whose interval, at this spread of the per-trial values, stays
    on one side of a boundary `distance` away from the true mean with POWER (80 %):
    `power_factor(n) * spread <= distance`; inf when the distance is 0 (the mean sits on the
    boundary: no number of trials decides it) or when more than MAX_TRIALS would be needed. The
    interval shrinks as ~1/sqrt(n), so this is the usual power calculation with the observed
    difference and spread taken as the true ones."""
    if not distance > 0 or not math.isfinite(spread):
        return math.inf
    if spread == 0:
        return 2
    n = 2
    while n <= MAX_TRIALS:
        if power_factor(n, level) * spread <= distance:
            return n
        n = n + 1 if n < 64 else int(n * 1.1)
    return math.inf


def most_trials(results: Iterable[ClaimResult]) -> tuple[int | None, float | None]:
    """(`trials`, `trials_to_decide`) of a claim made of these parts: the most trials any part
    had, and the trials that decide every inconclusive part (the largest of theirs; None when
    one of them is not computed). The largest is conservative: a part decided against the claim
    may settle it earlier."""
    results = list(results)
    had = [r.trials for r in results if r.trials is not None]
    need = [r.trials_to_decide for r in results if r.verdict == INCONCLUSIVE]
    return (max(had) if had else None,
            None if not need or any(n is None for n in need) else max(need))
