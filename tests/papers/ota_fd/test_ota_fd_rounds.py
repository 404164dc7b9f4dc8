"""Prop. 2 as we read (P3.1)-(P3.2) (Appendix D): a, b, T_0, the exact piecewise objective and its
minimiser max(T_0, a/b); T_0 at a quantile of the fading."""

import numpy as np
import pytest

from airfl.papers.ota_fd import rounds as rd
from airfl.papers.ota_fd.transceiver import privacy_coefficients

M = K = 10
COUNTS = np.where(np.eye(M, K, dtype=bool), 1110.0, 10.0)
CONSTS = rd.TheoryConstants(eta0=0.1, gamma=1.0, L1=10.0, L2=1.0)
FMAX = np.full(M, 3.0)


def _rho(eps):
    return privacy_coefficients(eps=np.full(M, eps), delta=np.full(M, 1e-8), class_counts=COUNTS)


def _choice(eps, sigma_n2, T_max=100_000):
    return rd.optimal_rounds(fmax=FMAX, consts=CONSTS, class_counts=COUNTS, rho=_rho(eps),
                             sigma_n2=sigma_n2, channel_power=1.0, K=K, T_max=T_max)


@pytest.mark.parametrize("eps, T0, b, t_hat", [(1.0, 195.43, 0.0262687, 34261.4),
                                               (0.1, 1.954, 2.62687, 342.61)])
def test_reference_vectors(eps, T0, b, t_hat):
    c = _choice(eps, 0.1)
    assert c.a == pytest.approx(900.0)
    assert c.b == pytest.approx(b, rel=1e-5)
    assert c.T0 == pytest.approx(T0, rel=5e-4)        # the reference value has 4 digits
    assert c.T_hat == pytest.approx(t_hat, rel=5e-5)      # printed to 5 digits
    assert CONSTS.A1 == pytest.approx(0.6) and CONSTS.A2 == pytest.approx(6.0)


def test_the_optimum_is_T0_when_above_a_over_b():
    """eps = 0.1, sigma_n^2 = 100: a/b = 342.6 but the optimum of the piecewise objective is
    T_0 = 1954 (below T_0, (P3.1)'s objective still falls)."""
    c = _choice(0.1, 100.0)
    assert c.T_hat == pytest.approx(342.61, rel=1e-4)
    assert c.T0 == pytest.approx(1954.3, rel=1e-4)
    assert c.T_argmin in (1954, 1955) and c.T_closed == 1954


@pytest.mark.parametrize("eps, sigma_n2", [(1.0, 0.1), (0.1, 0.1), (0.3, 10.0), (0.05, 1.0)])
def test_closed_form_matches_argmin_of_exact_objective(eps, sigma_n2):
    c = _choice(eps, sigma_n2)
    assert abs(c.T_argmin - c.T_closed) <= 1
    T = np.array([max(c.T_argmin - 1, 1), c.T_argmin, c.T_argmin + 1])
    values = rd.objective(T, fmax=FMAX, consts=CONSTS, class_counts=COUNTS, rho=_rho(eps),
                          sigma_n2=sigma_n2, channel_power=1.0, K=K)
    assert values[1] <= values.min() + 1e-12


def test_objective_above_T0_is_a_over_sqrtT_plus_b_sqrtT():
    c = _choice(0.1, 0.1)
    T = np.array([10.0, 100.0, 1000.0])
    values = rd.objective(T, fmax=FMAX, consts=CONSTS, class_counts=COUNTS, rho=_rho(0.1),
                          sigma_n2=0.1, channel_power=1.0, K=K)
    assert values == pytest.approx(c.a / np.sqrt(T) + c.b * np.sqrt(T), rel=1e-12)


def test_T_star_scales_with_eps_squared():
    """Constant-free consequence: T_hat ~ eps^2 / ln(1/delta)."""
    assert _choice(0.5, 0.1).T_hat / _choice(0.05, 0.1).T_hat == pytest.approx(100.0)


def test_fading_quantile_is_the_quantile_of_the_minimum():
    rng = np.random.default_rng(0)
    draws = rng.exponential(size=(200_000, M)).min(axis=1)
    for q in (0.1, 0.5):
        exact = rd.fading_quantile(num_devices=M, power=1.0, mean_gain=1.0, quantile=q)
        assert exact == pytest.approx(np.quantile(draws, q), rel=0.02)


def test_fading_quantile_at_the_top_of_the_support_is_infinite_without_a_warning():
    """q = 1 (what param_deps' perturbation of 0.5 gives) is +inf, as -ln(1 - q) -> inf, with no
    RuntimeWarning from log1p(-1); q outside [0, 1] is no quantile."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert rd.fading_quantile(num_devices=M, power=2.0, mean_gain=1.0, quantile=1.0) == np.inf
        assert rd.fading_quantile(num_devices=M, power=2.0, mean_gain=1.0, quantile=0.0) == 0.0
    with pytest.raises(ValueError, match="fading_quantile must lie in"):
        rd.fading_quantile(num_devices=M, power=1.0, mean_gain=1.0, quantile=1.5)
