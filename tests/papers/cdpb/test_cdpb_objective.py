"""CDPB's convergence bound (objective.py): Lemma 5's s_tau in closed form, and the exact
Theorem 2 bound approaching its App.-C approximation."""

from __future__ import annotations

import numpy as np
import pytest

from airfl.papers.cdpb.objective import gamma_approx, gamma_exact, phi, s_tau, step_offset
from airfl.papers.cdpb.setting import CdpbSetting


S = CdpbSetting()


# ------------------------------------------------------------------------- Theorem 2
def test_s_tau_matches_lemma5_closed_form():
    """(49): S_tau = tau (2 tau^2 + 6 a tau - 3 tau + 6 a^2 - 6 a + 1) / 6 >= tau^3 / 3."""
    a = step_offset(S, 10)
    assert a == pytest.approx(81.0)
    taus = np.array([1, 2, 7, 50, 300])
    closed = taus * (2 * taus**2 + 6 * a * taus - 3 * taus + 6 * a**2 - 6 * a + 1) / 6
    np.testing.assert_allclose(s_tau(a, taus), closed, rtol=1e-12)
    assert np.all(s_tau(a, taus) >= taus**3 / 3)


def test_exact_bound_approaches_the_app_c_approximation():
    value = phi(S, 0.7, 40.0, 45.0)
    assert float(value) == pytest.approx(1 / 40 + 45 / (1600 * 0.7))
    ratio = [float(gamma_exact(S, value, t, 10, init_dist2=0.0) / gamma_approx(S, value, t))
             for t in (1_000, 100_000)]
    assert abs(ratio[1] - 1) < 0.01 and abs(ratio[1] - 1) < abs(ratio[0] - 1) / 10
