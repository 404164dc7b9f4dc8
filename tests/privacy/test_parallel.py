"""Worst-unit composition of parallel Gaussian releases (airfl.privacy.parallel): the events the
stage composes give, after every round, exactly the largest epsilon over the units, each unit
composed over its own rounds by an independent accountant."""

from __future__ import annotations

import math

import numpy as np
import pytest

from airfl.privacy import GaussianEvent, RdpAccountant, epsilon_curve
from airfl.privacy.parallel import NO_GUARANTEE, WorstUnitGaussian, gaussian_of_increment

DELTA = 1e-5


def _per_unit_worst(multipliers: np.ndarray) -> np.ndarray:
    """max_u eps_u(t), each unit's Gaussian releases composed by its own RdpAccountant."""
    accountants = [RdpAccountant() for _ in range(multipliers.shape[1])]
    out = []
    for row in multipliers:
        for accountant, z in zip(accountants, row):
            accountant.compose(GaussianEvent(z))
        out.append(max(a.get_epsilon(DELTA) for a in accountants))
    return np.array(out)


def test_events_compose_to_the_worst_unit_exactly():
    rng = np.random.default_rng(3)
    z = rng.uniform(0.8, 6.0, size=(12, 5))              # the worst unit moves between rounds
    z[4, 2] = math.inf                                   # a unit that releases nothing
    composer = WorstUnitGaussian()
    events = [composer.step(row) for row in z]
    got = epsilon_curve(events, DELTA)
    assert got == pytest.approx(_per_unit_worst(z), rel=1e-9)
    naive = epsilon_curve([GaussianEvent(float(row.min())) for row in z], DELTA)
    assert np.all(got <= naive * (1 + 1e-12)) and got[-1] < naive[-1]   # per round: an upper bound


def test_one_unit_worst_every_round_equals_the_per_round_minimum():
    z = np.tile([1.5, 3.0, 4.0], (6, 1)) * np.linspace(1.0, 2.0, 6)[:, None]
    composer = WorstUnitGaussian()
    got = epsilon_curve([composer.step(row) for row in z], DELTA)
    assert got == pytest.approx(epsilon_curve([GaussianEvent(float(r.min())) for r in z], DELTA),
                                rel=1e-9)


def test_no_noise_and_no_release():
    assert gaussian_of_increment(0.0) == GaussianEvent(math.inf)
    assert gaussian_of_increment(math.inf) == NO_GUARANTEE
    assert gaussian_of_increment(4.0) == GaussianEvent(0.5)
    composer = WorstUnitGaussian()
    eps = epsilon_curve([composer.step([2.0, 0.0]), composer.step([2.0, 1.0])], DELTA)
    assert np.isinf(eps).all()                           # a noiseless release: no guarantee
    with pytest.raises(ValueError, match="units changed"):
        composer.step([1.0, 1.0, 1.0])
    with pytest.raises(ValueError, match=">= 0"):
        WorstUnitGaussian().step([-1.0])
