"""Per-round events for parallel Gaussian releases: many units (devices, or a device's class
vectors) each run their own Gaussian mechanism every round, and the run's guarantee is the
worst unit's composition over the rounds (the mechanism as simulated).

Why a helper: the privacy stage composes ONE event per round, so a record that names each
round's worst unit (the smallest noise multiplier of that round) composes a different unit
every round and over-counts (sum_t max_u >= max_u sum_t). For Gaussian mechanisms the exact
worst-unit composition is still a Gaussian event per round:

* unit u after t rounds has RDP alpha/2 * A_u(t), A_u(t) = sum_{s<=t} 1/z_{u,s}^2 ([M17]
  Prop. 7 for one Gaussian release, Prop. 1 for composition);
* disjoint units (parallel composition, McSherry 2009 Thm. 4, per order): max_u of it, which
  is alpha/2 * M(t), M(t) = max_u A_u(t), the same unit at every order alpha;
* so round t's increment alpha/2 * (M(t) - M(t-1)) is the RDP of a Gaussian with noise
  multiplier (M(t) - M(t-1))^(-1/2), and the stage's running sum of the events is exactly
  the worst unit's RDP after every round.

[M17] I. Mironov, "Rényi Differential Privacy", CSF 2017. McSherry, "Privacy Integrated
Queries", SIGMOD 2009 (parallel composition over disjoint data).
"""

from __future__ import annotations

import math

import numpy as np

from .events import Event, GaussianEvent, RdpCurveEvent

#: infinite RDP at every order (a release with no noise): the accountant reads a one-order
#: curve at inf as inf at every order (orders above the largest stored one are inf)
NO_GUARANTEE = RdpCurveEvent(orders=(1.01,), rdp=(math.inf,))


def gaussian_of_increment(increment: float) -> Event:
    """The Gaussian event whose RDP is alpha/2 * increment ([M17] Prop. 7): multiplier
    increment^(-1/2); no leak (multiplier inf) at 0, no guarantee at inf."""
    if increment < 0 or math.isnan(increment):
        raise ValueError(f"an RDP increment must be >= 0, got {increment}")
    if math.isinf(increment):
        return NO_GUARANTEE
    return GaussianEvent(math.inf if increment == 0 else 1.0 / math.sqrt(increment))


class WorstUnitGaussian:
    """Composes each unit's Gaussian releases and emits, per round, the event of the worst
    unit's increment (module docstring). One instance per trial; ``step`` once per round."""

    def __init__(self) -> None:
        self._per_unit: np.ndarray | None = None      # A_u(t) = sum_s 1/z_{u,s}^2
        self._worst = 0.0                             # M(t) = max_u A_u(t)

    def step(self, multipliers) -> Event:
        """Round t's event from every unit's noise multiplier std / L2-sensitivity this round
        (inf: the unit released nothing; 0: it released without noise)."""
        z = np.asarray(multipliers, dtype=np.float64)
        if np.any(np.isnan(z)) or np.any(z < 0):
            raise ValueError("noise multipliers must be >= 0 (inf: no release)")
        with np.errstate(divide="ignore"):
            inverse = np.where(np.isinf(z), 0.0, 1.0 / z ** 2)      # [M17] Prop. 7: alpha/(2z^2)
        if self._per_unit is None:
            self._per_unit = np.zeros_like(inverse)
        if inverse.shape != self._per_unit.shape:
            raise ValueError(f"units changed between rounds: {self._per_unit.shape} -> "
                             f"{inverse.shape}")
        self._per_unit = self._per_unit + inverse                   # [M17] Prop. 1
        worst = max(float(self._per_unit.max(initial=0.0)), self._worst)   # parallel: max_u
        increment = worst - self._worst if math.isfinite(worst) else math.inf
        if math.isinf(self._worst):
            increment = 0.0                                         # already no guarantee
        self._worst = worst
        return gaussian_of_increment(increment)
