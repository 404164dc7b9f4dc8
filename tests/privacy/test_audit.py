"""The privacy audit: its statistics against independent oracles, and its teeth: a
correct Gaussian mechanism is audited close to its true epsilon and never above it, and broken
mechanisms (half the noise variance the accountant assumes; clipping after the noise) are flagged."""

import math

import numpy as np
import pytest
import torch
from scipy import stats

from airfl.core.aggregation import clip_by_norm, gaussian_noise
from airfl.core.audit_draws import linear_draws, loop_draws
from airfl.privacy.audit import (audit_threshold, clopper_pearson, empirical_mu, eps_from_rates,
                                 gaussian_mechanism_epsilon, gdp_delta, gdp_epsilon)
from airfl.privacy.auditing import AuditableMechanism, run_audit
from airfl.runtime.rng import torch_generator

DELTA = 1e-5


@pytest.mark.parametrize("k,n", [(0, 50), (1, 50), (7, 100), (99, 100), (100, 100), (3, 10**6)])
def test_clopper_pearson_is_scipys_beta_quantiles(k, n):
    lower, upper = clopper_pearson(k, n, 0.05)
    assert lower == (0.0 if k == 0 else pytest.approx(stats.beta.ppf(0.025, k, n - k + 1), rel=1e-9))
    assert upper == (1.0 if k == n else pytest.approx(stats.beta.ppf(0.975, k + 1, n - k), rel=1e-9))
    assert lower <= k / n <= upper


@pytest.mark.parametrize("sigma", [0.5, 1.0, 2.0, 4.0])
def test_gdp_epsilon_of_a_gaussian_matches_dp_accounting(sigma):
    """mu = 1/sigma GDP is the exact Gaussian mechanism (Dong-Roth-Su Cor. 2.13); dp-accounting's
    PLD of the same mechanism is an independent (pessimistic, finely discretised) oracle."""
    from dp_accounting.pld import privacy_loss_distribution

    pld = privacy_loss_distribution.from_gaussian_mechanism(
        standard_deviation=sigma, value_discretization_interval=1e-4)
    expected = pld.get_epsilon_for_delta(DELTA)
    assert gaussian_mechanism_epsilon(sigma, DELTA) == pytest.approx(expected, rel=2e-3, abs=1e-3)
    assert gdp_delta(gdp_epsilon(1.0 / sigma, DELTA), 1.0 / sigma) == pytest.approx(DELTA, rel=1e-6)


def test_kairouz_bound_of_the_rates():
    """Both directions of eps >= log((1 - delta - FNR)/FPR) (Kairouz-Oh-Viswanath Thm 2.1)."""
    assert eps_from_rates(0.01, 0.2, 0.0) == pytest.approx(math.log(0.8 / 0.01))
    assert eps_from_rates(0.2, 0.01, 0.0) == pytest.approx(math.log(0.8 / 0.01))
    assert eps_from_rates(0.5, 0.5, 0.0) == 0.0


def _gaussian_release(sigma):
    """A plain Gaussian mechanism on a sum: the core's own noise helper, sensitivity 1."""
    def release(row, call, dim):
        total = row if row is not None else torch.zeros(dim, dtype=torch.float64)
        return total + gaussian_noise(dim, sigma, torch_generator(7, "test", call), torch.float64)
    return release


def _mechanism(sigma, claimed, release=None, batched=True, canary=1.0, dim=2):
    """The audit's view of a mechanism: the canary's update canary * e_0 present, 0 absent."""
    release = release or _gaussian_release(sigma)

    def sample(world, draws, seed):
        value = canary if world == "present" else 0.0
        if batched:
            return linear_draws(lambda r, c, d: release(r, seed * 1_000_003 + c, d), value, draws)
        row = lambda v: torch.cat([torch.tensor([v], dtype=torch.float64),  # noqa: E731
                                   torch.zeros(dim - 1, dtype=torch.float64)])
        return loop_draws(lambda v, i: float(release(row(v), seed * 1_000_003 + i, dim)[0]),
                          value, draws)
    return AuditableMechanism(name="test", paper="test", delta=DELTA, eps_claimed=claimed,
                              eps_simulated=claimed, claimed_accountant="exact",
                              simulated_note="", neighbours="", conditioning="", aggregation="",
                              sample=sample, batched=batched)


@pytest.mark.parametrize("eps", [0.5, 1.0, 2.0, 4.0])
def test_a_correct_gaussian_mechanism_is_audited_within_1_5_of_its_epsilon(eps):
    from scipy.optimize import brentq

    sigma = brentq(lambda s: gaussian_mechanism_epsilon(s, DELTA) - eps, 0.2, 50.0)
    result = run_audit(_mechanism(sigma, eps), 1_000_000, seed=3)
    assert result["holds"]                                       # never above the truth
    assert result["eps_audited_lower"] >= eps / 1.5              # and close to it
    assert result["gdp_mu"] == pytest.approx(1.0 / sigma, rel=0.02)
    assert result["gdp_eps"] == pytest.approx(eps, rel=0.1)


def test_half_the_noise_variance_the_accountant_assumes_is_flagged():
    sigma = 4.0                                       # the accountant's noise: eps ~ 1.1
    claimed = gaussian_mechanism_epsilon(sigma, DELTA)
    broken = _mechanism(sigma, claimed, _gaussian_release(sigma / math.sqrt(2.0)))
    result = run_audit(broken, 1_000_000, seed=4)
    assert not result["holds"], result
    assert result["eps_audited_lower"] > claimed


def _clipped(after_noise, sigma, clip=1.0):
    """Client update -> released value: clip then noise (right), or noise then clip (broken)."""
    def release(row, call, dim):
        noise = gaussian_noise(dim, sigma, torch_generator(8, "test", call), torch.float64)
        if after_noise:
            return clip_by_norm((row + noise)[None, :], clip)[0][0]
        return clip_by_norm(row[None, :], clip)[0][0] + noise
    return release


def test_clipping_after_the_noise_is_flagged_and_before_it_is_not():
    """A canary far beyond the clip norm (100 C, d = 10): clipped first, its sensitivity is C
    and the claim holds; noised first and then clipped, the release points along e_0 whatever
    the noise, which no noise-only release does."""
    sigma = 4.0
    claimed = gaussian_mechanism_epsilon(sigma, DELTA)
    right = _mechanism(sigma, claimed, _clipped(False, sigma), batched=False, canary=100.0, dim=10)
    wrong = _mechanism(sigma, claimed, _clipped(True, sigma), batched=False, canary=100.0, dim=10)
    assert run_audit(right, 4000, seed=5)["holds"]
    result = run_audit(wrong, 4000, seed=5)
    assert not result["holds"] and result["eps_audited_lower"] > 3 * claimed


def test_identical_neighbours_give_no_privacy_loss_in_most_seeds():
    """The threshold is picked on a held-out half, so the bound is valid: for two identical
    distributions a positive lower bound is a false alarm and must be rare (alpha = 5 %)."""
    alarms = 0
    for seed in range(20):
        rng = np.random.default_rng(seed)
        bound = audit_threshold(rng.standard_normal(20_000), rng.standard_normal(20_000), DELTA)
        alarms += bound.eps_lower > 0
    assert alarms <= 3


def test_empirical_mu_of_shifted_gaussians():
    rng = np.random.default_rng(0)
    assert empirical_mu(rng.normal(0.5, 2.0, 200_000), rng.normal(0.0, 2.0, 200_000)) == \
        pytest.approx(0.25, rel=0.03)
