"""CDPB's expected per-round channel statistics (channel_stats.py, paper eqs. (52)-(60), App.
C): p, K_t and sigma_q^2 against Appendix A's values and Monte Carlo, the baselines' expected
rounds, and rho outside (25e) refused."""

from __future__ import annotations

import math

import numpy as np
import pytest

from airfl.papers.cdpb import channel_stats as cs
from airfl.papers.cdpb.setting import CdpbSetting

from cdpb_helpers import assert_printed


S = CdpbSetting()


# ------------------------------------------------------------------------- channel statistics
def test_expected_statistics_at_rho_max_match_appendix_a():
    assert_printed(float(cs.participation_probability(S, 1.0)), "0.367879")
    assert_printed(float(cs.expected_reliable(S, 1.0)), "36.788")
    assert_printed(float(cs.expected_noise_power(S, 1.0, 0.0)), "36.798")
    assert_printed(float(cs.expected_noise_power(S, 1.0, 1.0)), "63.222")


def test_mixed_formula_reduces_to_56_and_60():
    rho = np.linspace(0.01, 1.0, 50)
    np.testing.assert_allclose(cs.noise_power_mixed(S, rho, 0.0), cs.noise_power_idle(S, rho),
                               rtol=1e-14)
    np.testing.assert_allclose(cs.noise_power_mixed(S, rho, 1.0), cs.noise_power_noisy(S, rho),
                               rtol=1e-13)


@pytest.mark.parametrize("rho", [0.2, 0.7, 1.0])
def test_expected_statistics_match_monte_carlo(rho):
    """(53), (56), (60) and the derived mixed formula against a direct simulation of the
    channel h ~ Exp(h_bar = 1.3) and the per-client rules; 5 standard errors."""
    s = CdpbSetting(K=1, h_bar=1.3, P=1.0, sigma_z2=0.0)
    rng = np.random.default_rng(7)
    h = rng.exponential(s.h_bar, 400_000)
    coin = rng.random(h.size) < 0.4
    reliable = h >= rho * s.W**2 / s.P
    artificial = np.where(reliable, s.P * h - rho * s.W**2, 0.0)
    samples = {
        "p": (reliable.astype(float), cs.participation_probability(s, rho)),
        "idle": (artificial, cs.noise_power_idle(s, rho)),
        "noisy": (artificial + np.where(~reliable, s.P * h, 0.0), cs.noise_power_noisy(s, rho)),
        "mixed": (artificial + np.where(~reliable & coin, s.P * h, 0.0),
                  cs.noise_power_mixed(s, rho, 0.4)),
    }
    for name, (x, expected) in samples.items():
        se = x.std() / math.sqrt(x.size)
        assert abs(x.mean() - float(expected)) <= 5 * se, name


def test_baseline_expected_rounds():
    k, s2 = cs.expected_round(S, "hmin", cs.hmin_rho(S))
    assert (float(k), float(s2)) == (100.0, pytest.approx(99 + 0.01))
    k, s2 = cs.expected_round(S, "is", 0.5)
    p = math.exp(-0.5)
    assert float(k) == pytest.approx(90 * p) and float(s2) == pytest.approx(90 * p + 0.01)
    assert float(cs.expected_round(S, "noise_free", 0.5)[1]) == 0.01


@pytest.mark.parametrize("rho", [0.0, -0.1, 1.0001, np.nan, np.inf])
def test_rho_outside_25e_raises(rho):
    with pytest.raises(ValueError, match="rho"):
        cs.participation_probability(S, rho)
