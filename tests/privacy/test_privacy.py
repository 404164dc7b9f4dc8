"""Tests of airfl.privacy: contracts, closed forms, high precision, and dp-accounting as oracle.

dp-accounting (a dev dependency) is used here only, never by src/.
"""

from __future__ import annotations

import json
import logging
import math
from functools import lru_cache

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from airfl.privacy import (DEFAULT_ORDERS, ComposedEvent, GaussianEvent, RdpAccountant,
                           RdpCurveEvent, SubsampledGaussianEvent, compose, cumulative_rdp,
                           delta_from_rdp, delta_from_rdp_classic, eps_from_rdp,
                           eps_from_rdp_classic, epsilon_curve, event_from_dict, event_rdp,
                           gaussian_noise_for_epsilon, rdp_gaussian, rdp_subsampled_gaussian)

dp_event = pytest.importorskip("dp_accounting.dp_event")
rdp_privacy_accountant = pytest.importorskip("dp_accounting.rdp.rdp_privacy_accountant")

DELTA = 1e-5
#: Orders beyond the defaults: fractional ones off the 0.1 grid and large ones.
EXTRA_ORDERS = (1.25, 1.5, 2.25, 7.8, 12.5, 100.5, 300.5, 2048.0)
NOISES = (0.5, 0.8, 1.0, 2.0, 5.0)
RATES = (0.001, 0.01, 0.1, 0.5, 1.0)
ROUNDS = (1, 10, 100, 1000)
HYPOTHESIS = settings(max_examples=50, deadline=None, database=None)


@pytest.fixture(autouse=True, scope="module")
def _quiet_dp_accounting():
    """dp-accounting logs a warning per non-converged fractional order; we expect those."""
    logging.getLogger("absl").setLevel(logging.ERROR)


def assert_rel_close(ours, ref, rtol):
    """Same inf pattern and relative agreement on the finite entries."""
    ours, ref = np.asarray(ours, float), np.asarray(ref, float)
    np.testing.assert_array_equal(np.isinf(ours), np.isinf(ref))
    finite = np.isfinite(ref)
    np.testing.assert_allclose(ours[finite], ref[finite], rtol=rtol, atol=0)


# --------------------------------------------------------------------------- contract tests
class AccountantContract:
    """Properties every accountant configuration must have; subclasses pick the config."""

    orders = DEFAULT_ORDERS
    conversion = "improved"

    def make_event(self, sigma, q=1.0):
        return SubsampledGaussianEvent(q, sigma)

    def eps(self, event, count=1):
        acc = RdpAccountant(self.orders).compose(event, count)
        return acc.get_epsilon(DELTA, conversion=self.conversion)

    def test_count_equals_repetition(self):
        event = self.make_event(1.1, 0.1)
        one_by_one = RdpAccountant(self.orders)
        for _ in range(7):
            one_by_one.compose(event)
        counted = RdpAccountant(self.orders).compose(event, count=7)
        nested = RdpAccountant(self.orders).compose(ComposedEvent((event,) * 7))
        np.testing.assert_allclose(one_by_one.rdp, counted.rdp, rtol=1e-12)
        np.testing.assert_allclose(nested.rdp, counted.rdp, rtol=1e-12)
        assert one_by_one.get_epsilon(DELTA, self.conversion) == pytest.approx(
            counted.get_epsilon(DELTA, self.conversion), rel=1e-12)

    def test_eps_decreasing_in_noise(self):
        eps = [self.eps(self.make_event(s, 0.1), 100) for s in (0.5, 0.8, 1, 1.5, 2, 5, 10, 50)]
        assert all(b <= a * (1 + 1e-12) for a, b in zip(eps, eps[1:])), eps

    def test_eps_increasing_in_rounds(self):
        eps = [self.eps(self.make_event(1.0, 0.05), t) for t in (1, 2, 10, 100, 1000)]
        assert all(b >= a * (1 - 1e-12) for a, b in zip(eps, eps[1:])), eps

    def test_eps_increasing_in_sampling_rate(self):
        eps = [self.eps(self.make_event(1.0, q), 50) for q in RATES]
        assert all(b >= a * (1 - 1e-12) for a, b in zip(eps, eps[1:])), eps

    def test_eps_nonnegative_and_delta_a_probability(self):
        acc = RdpAccountant(self.orders).compose(self.make_event(3.0, 0.01), 10)
        assert acc.get_epsilon(DELTA, self.conversion) >= 0
        assert 0 <= acc.get_delta(0.5, self.conversion) <= 1

    def test_delta_at_reported_eps_is_within_delta(self):
        acc = RdpAccountant(self.orders).compose(self.make_event(1.0, 0.1), 100)
        eps = acc.get_epsilon(DELTA, self.conversion)
        assert acc.get_delta(eps, self.conversion) <= DELTA * (1 + 1e-9)

    def test_no_leak_event_costs_nothing(self):
        acc = RdpAccountant(self.orders).compose(self.make_event(math.inf, 0.3), 1000)
        np.testing.assert_array_equal(acc.rdp, 0.0)
        assert acc.get_epsilon(DELTA, self.conversion) == 0.0


class TestContractSubsampledImproved(AccountantContract):
    pass


class TestContractGaussianClassicIntegerOrders(AccountantContract):
    orders = tuple(range(2, 257))
    conversion = "classic"

    def make_event(self, sigma, q=1.0):
        return GaussianEvent(sigma) if q == 1.0 else SubsampledGaussianEvent(q, sigma)


class TestContractRdpCurveImproved(AccountantContract):
    """Precomputed curves (as a paper wing would store them) behave like the mechanism."""

    def make_event(self, sigma, q=1.0):
        return RdpCurveEvent(DEFAULT_ORDERS, tuple(rdp_subsampled_gaussian(q, sigma, DEFAULT_ORDERS)))


class TestContractComposedClassic(AccountantContract):
    conversion = "classic"

    def make_event(self, sigma, q=1.0):
        half = SubsampledGaussianEvent(q, sigma * math.sqrt(2.0))
        return ComposedEvent((half, half))


# --------------------------------------------------------------------------- closed forms
@pytest.mark.parametrize("sigma", [0.3, 1.0, 4.0])
def test_gaussian_rdp_closed_form(sigma):
    alphas = np.array(DEFAULT_ORDERS + EXTRA_ORDERS)
    np.testing.assert_allclose(rdp_gaussian(sigma, alphas), alphas / (2 * sigma**2), rtol=1e-15)


@pytest.mark.parametrize("sigma", NOISES)
def test_full_sampling_is_gaussian_and_special_cases(sigma):
    orders = DEFAULT_ORDERS + EXTRA_ORDERS
    np.testing.assert_array_equal(rdp_subsampled_gaussian(1.0, sigma, orders),
                                  rdp_gaussian(sigma, orders))
    np.testing.assert_array_equal(rdp_subsampled_gaussian(0.0, sigma, orders), 0.0)
    assert rdp_subsampled_gaussian(0.1, sigma, [2.0, math.inf])[1] == math.inf
    np.testing.assert_array_equal(rdp_subsampled_gaussian(0.1, 0.0, [2.0, 2.5]), math.inf)


@pytest.mark.parametrize("sigma,rounds", [(1.0, 1), (5.0, 1), (2.0, 10), (0.8, 100), (1.0, 1000)])
def test_classic_gaussian_matches_continuous_minimiser(sigma, rounds):
    """min_a T a/(2s^2) + log(1/delta)/(a-1) = r + 2 sqrt(r L), r = T/(2s^2), L = log(1/delta)."""
    alphas = 1.0 + np.logspace(-4, 4, 40001)
    rdp = rounds * rdp_gaussian(sigma, alphas)
    eps, order = eps_from_rdp_classic(alphas, rdp, DELTA)
    r, big_l = rounds / (2 * sigma**2), math.log(1 / DELTA)
    assert eps == pytest.approx(r + 2 * math.sqrt(r * big_l), rel=1e-6)
    assert order == pytest.approx(1 + math.sqrt(big_l / r), rel=1e-3)


@pytest.mark.parametrize("sigma", [1.0, 2.0, 5.0])
def test_small_sampling_rate_asymptotics(sigma):
    """For q -> 0: rdp(a) = a q^2 (e^{1/s^2} - 1) / 2 + O(q^3) (A_a = 1 + C(a,2) q^2 (...)),
    and the closed-form bound 2 q^2 a / s^2 of [MTZ19] holds within a factor 4. Both need a
    moderate order: q^i e^{(i^2-i)/(2 s^2)} small for i <= a, i.e. a - 1 << 2 s^2 log(1/q)."""
    q = 1e-4
    alphas = np.array([2.0, 3.0, 4.0, 6.0, 8.0])
    rdp = rdp_subsampled_gaussian(q, sigma, alphas)
    leading = alphas * q**2 * math.expm1(1 / sigma**2) / 2
    np.testing.assert_allclose(rdp, leading, rtol=1e-2)
    ratio = rdp / (2 * q**2 * alphas / sigma**2)
    assert np.all((ratio > 0.2) & (ratio <= 1.0)), ratio


# --------------------------------------------------------------------------- high precision
def _exact_rdp_integer(q, sigma, alpha, mp):
    terms = (mp.binomial(alpha, i) * mp.mpf(q)**i * (1 - mp.mpf(q))**(alpha - i)
             * mp.exp(mp.mpf(i * i - i) / (2 * mp.mpf(sigma)**2)) for i in range(alpha + 1))
    return mp.log(mp.fsum(terms)) / (alpha - 1)


def _exact_rdp_quadrature(q, sigma, alpha, mp):
    q, s, a = mp.mpf(q), mp.mpf(sigma), mp.mpf(alpha)
    density = lambda z: mp.npdf(z, 0, s) * ((1 - q) + q * mp.exp((2 * z - 1) / (2 * s * s)))**a
    return mp.log(mp.quad(density, [-mp.inf, -10 * s, 0, 1, 10 * s + a, mp.inf])) / (a - 1)


@pytest.mark.parametrize("q,sigma,alpha", [(1e-5, 20.0, 3), (1e-5, 20.0, 512), (1e-5, 0.5, 2),
                                           (0.001, 1.0, 11), (0.3, 0.7, 64)])
def test_integer_orders_against_60_digit_series(q, sigma, alpha):
    mp = pytest.importorskip("mpmath")
    with mp.workdps(60):
        exact = float(_exact_rdp_integer(q, sigma, alpha, mp))
    assert rdp_subsampled_gaussian(q, sigma, [alpha])[0] == pytest.approx(exact, rel=1e-12)


@pytest.mark.parametrize("q,sigma,alpha", [(0.01, 1.0, 1.5), (0.01, 1.0, 7.8), (0.1, 2.0, 2.25),
                                           (0.001, 0.8, 3.3), (0.2, 1.0, 20.5)])
def test_fractional_orders_upper_bound_quadrature(q, sigma, alpha):
    """The |binom| series of [MTZ19] Sec. 3.3 is an upper bound on the exact integral, and close."""
    mp = pytest.importorskip("mpmath")
    with mp.workdps(30):
        exact = float(_exact_rdp_quadrature(q, sigma, alpha, mp))
    ours = rdp_subsampled_gaussian(q, sigma, [alpha])[0]
    assert exact * (1 - 1e-12) <= ours <= exact * 1.05


# --------------------------------------------------------------------------- dp-accounting oracle
@lru_cache(maxsize=None)
def _dp_rdp(q, sigma, orders):
    acc = rdp_privacy_accountant.RdpAccountant(list(orders))
    acc.compose(dp_event.PoissonSampledDpEvent(q, dp_event.GaussianDpEvent(sigma)), 1)
    return acc.rdp


@pytest.mark.parametrize("q", RATES)
@pytest.mark.parametrize("sigma", NOISES)
def test_rdp_matches_dp_accounting(sigma, q):
    orders = DEFAULT_ORDERS + EXTRA_ORDERS
    assert_rel_close(rdp_subsampled_gaussian(q, sigma, orders), _dp_rdp(q, sigma, orders), 1e-4)


@pytest.mark.parametrize("q", RATES)
@pytest.mark.parametrize("sigma", NOISES)
def test_eps_and_delta_match_dp_accounting(sigma, q):
    """eps at delta 1e-5 (and delta at eps 1) for T rounds; dp's accountant composes T * rdp."""
    ref_rdp = _dp_rdp(q, sigma, DEFAULT_ORDERS)
    for rounds in ROUNDS:
        ours = RdpAccountant().compose(SubsampledGaussianEvent(q, sigma), rounds)
        assert_rel_close(ours.rdp, rounds * ref_rdp, 1e-4)
        ref_eps, ref_order = rdp_privacy_accountant.compute_epsilon(
            DEFAULT_ORDERS, rounds * ref_rdp, DELTA)
        assert ours.get_epsilon_and_order(DELTA) == (pytest.approx(ref_eps, rel=1e-4), ref_order)
        ref_delta, _ = rdp_privacy_accountant.compute_delta(DEFAULT_ORDERS, rounds * ref_rdp, 1.0)
        assert ours.get_delta(1.0) == pytest.approx(ref_delta, rel=1e-4, abs=1e-300)


def test_reference_value_from_environment():
    """sigma 1.0, q 0.01, 1000 steps, delta 1e-5 -> eps 2.101367 at order 7.8 (dp-accounting)."""
    ref = rdp_privacy_accountant.RdpAccountant()
    ref.compose(dp_event.PoissonSampledDpEvent(0.01, dp_event.GaussianDpEvent(1.0)), 1000)
    ref_eps, ref_order = ref.get_epsilon_and_optimal_order(DELTA)
    ours = RdpAccountant().compose(SubsampledGaussianEvent(0.01, 1.0), 1000)
    eps, order = ours.get_epsilon_and_order(DELTA)
    assert eps == pytest.approx(2.101367, rel=1e-4)
    assert eps == pytest.approx(ref_eps, rel=1e-10)
    assert order == ref_order == pytest.approx(7.8)


# --------------------------------------------------------------------------- conversions
@HYPOTHESIS
@given(sigma=st.floats(0.3, 20.0), q=st.floats(1e-3, 1.0), rounds=st.integers(1, 10_000))
def test_improved_conversion_never_worse_than_classic(sigma, q, rounds):
    rdp = rounds * rdp_subsampled_gaussian(q, sigma, DEFAULT_ORDERS)
    improved, _ = eps_from_rdp(DEFAULT_ORDERS, rdp, DELTA)
    classic, _ = eps_from_rdp_classic(DEFAULT_ORDERS, rdp, DELTA)
    assert improved <= classic * (1 + 1e-12) + 1e-15
    assert delta_from_rdp(DEFAULT_ORDERS, rdp, 1.0)[0] <= (
        delta_from_rdp_classic(DEFAULT_ORDERS, rdp, 1.0)[0] * (1 + 1e-12))


def test_conversion_edge_cases():
    orders = [1.0, 1.005, 2.0, 8.0, math.inf]
    assert eps_from_rdp(orders, [0, 0, 0, 0, 0], DELTA) == (0.0, 1.0)
    assert eps_from_rdp(orders, [-1e-17] * 5, DELTA)[0] == 0.0
    assert eps_from_rdp(orders, [math.inf] * 5, DELTA)[0] == math.inf
    assert eps_from_rdp(orders, [0.1, 0.1, 0.2, 0.5, 3.0], 0.0) == (math.inf, 1.0)
    eps, order = eps_from_rdp(orders, [math.inf, math.inf, 0.5, math.inf, math.inf], DELTA)
    assert order == 2.0 and math.isfinite(eps)  # orders 1 and 1.005 excluded, infs ignored
    assert eps_from_rdp_classic([2.0, math.inf], [math.inf, 0.7], DELTA) == (0.7, math.inf)
    assert delta_from_rdp([2.0, math.inf], [math.inf, 0.7], 0.7) == (0.0, math.inf)
    with pytest.raises(ValueError, match="delta"):
        eps_from_rdp(orders, [0.0] * 5, -0.1)
    with pytest.raises(ValueError, match="rdp"):
        eps_from_rdp(orders, [0.0] * 4, DELTA)


def test_conversions_vectorise_over_rounds():
    rdp = np.outer([1, 10, 100], rdp_subsampled_gaussian(0.1, 1.0, DEFAULT_ORDERS))
    for fn, arg in [(eps_from_rdp, DELTA), (eps_from_rdp_classic, DELTA),
                    (delta_from_rdp, 1.0), (delta_from_rdp_classic, 1.0)]:
        values, orders = fn(DEFAULT_ORDERS, rdp, arg)
        rows = [fn(DEFAULT_ORDERS, row, arg) for row in rdp]
        np.testing.assert_array_equal(values, [v for v, _ in rows])
        np.testing.assert_array_equal(orders, [o for _, o in rows])


# --------------------------------------------------------------------------- calibration
CALIBRATION_ORDERS = (1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0, 12.0, 16.0,
                      20.0, 24.0, 32.0, 48.0, 64.0, 128.0, 256.0)


@HYPOTHESIS
@given(target=st.floats(0.2, 10.0), q=st.floats(0.005, 1.0), rounds=st.integers(1, 500),
       conversion=st.sampled_from(["improved", "classic"]))
def test_calibration_never_overshoots_and_is_tight(target, q, rounds, conversion):
    sigma = gaussian_noise_for_epsilon(target, DELTA, rounds, q, CALIBRATION_ORDERS, conversion)

    def eps(s):
        acc = RdpAccountant(CALIBRATION_ORDERS).compose(SubsampledGaussianEvent(q, s), rounds)
        return acc.get_epsilon(DELTA, conversion)

    assert eps(sigma) <= target
    assert eps(0.99 * sigma) > target or eps(sigma) >= 0.99 * target


def test_calibration_reproduces_reference_setting():
    sigma = gaussian_noise_for_epsilon(2.101367, DELTA, 1000, sampling_rate=0.01)
    assert sigma == pytest.approx(1.0, rel=1e-3)
    with pytest.raises(ValueError, match="target_eps"):
        gaussian_noise_for_epsilon(0.0, DELTA, 10)


# --------------------------------------------------------------------------- per-round curves
def _heterogeneous_rounds():
    rng = np.random.default_rng(7)
    rounds = []
    for t in range(60):
        sigma, q = float(rng.uniform(0.6, 3.0)), float(rng.choice([0.01, 0.1, 1.0]))
        event = SubsampledGaussianEvent(q, sigma)
        kinds = [event, event.to_dict(), None, [event, GaussianEvent(5.0)],
                 GaussianEvent(math.inf), RdpCurveEvent((2.0, 4.0), (0.01, 0.03))]
        rounds.append(kinds[t % len(kinds)])
    return rounds


@pytest.mark.parametrize("conversion", ["improved", "classic"])
def test_epsilon_curve_matches_manual_accountant(conversion):
    rounds = _heterogeneous_rounds()
    curve = epsilon_curve(rounds, DELTA, conversion=conversion)
    acc, manual = RdpAccountant(), []
    for entry in rounds:
        if entry is not None:
            acc.compose(event_from_dict(entry) if isinstance(entry, dict) else
                        ComposedEvent(tuple(entry)) if isinstance(entry, list) else entry)
        manual.append(acc.get_epsilon(DELTA, conversion))
    np.testing.assert_allclose(curve, manual, rtol=1e-12)
    assert np.all(np.diff(curve) >= 0)
    np.testing.assert_allclose(cumulative_rdp(rounds)[-1], acc.rdp, rtol=1e-12)
    assert epsilon_curve([], DELTA).shape == (0,)


def test_rdp_curve_event_reads_other_orders_conservatively():
    stored = (2.0, 3.0, 128.0)
    event = RdpCurveEvent(stored, (0.1, 0.2, 5.0))
    np.testing.assert_array_equal(event_rdp(event, [1.5, 2.0, 2.5, 100.0, 128.0, 512.0]),
                                  [0.1, 0.1, 0.2, 5.0, 5.0, math.inf])


def test_compose_with_counts():
    a, b = rdp_gaussian(1.0, [2.0, 3.0]), np.array([math.inf, 1.0])
    np.testing.assert_allclose(compose([a, b], [3, 0]), 3 * a)
    np.testing.assert_allclose(compose([a, a]), 2 * a)


# --------------------------------------------------------------------------- events
@pytest.mark.parametrize("event", [
    GaussianEvent(1.3), GaussianEvent(math.inf), SubsampledGaussianEvent(0.01, 0.9),
    SubsampledGaussianEvent(1.0, math.inf), RdpCurveEvent((1.5, 2.0, 64.0), (0.1, 0.2, math.inf)),
    ComposedEvent((GaussianEvent(2.0), ComposedEvent((SubsampledGaussianEvent(0.1, 1.0),), (5,))),
                  (3, 1)),
])
def test_events_round_trip_through_json(event):
    text = json.dumps(event.to_dict(), allow_nan=False)
    back = event_from_dict(json.loads(text))
    assert back == event
    np.testing.assert_array_equal(event_rdp(back), event_rdp(event))


@pytest.mark.parametrize("make,field", [
    (lambda: GaussianEvent(0.0), "noise_multiplier"),
    (lambda: GaussianEvent(-1.0), "noise_multiplier"),
    (lambda: GaussianEvent(float("nan")), "noise_multiplier"),
    (lambda: GaussianEvent("loud"), "noise_multiplier"),
    (lambda: SubsampledGaussianEvent(0.0, 1.0), "sampling_rate"),
    (lambda: SubsampledGaussianEvent(1.5, 1.0), "sampling_rate"),
    (lambda: SubsampledGaussianEvent(0.5, 0.0), "noise_multiplier"),
    (lambda: RdpCurveEvent((2.0, 3.0), (0.1,)), "rdp"),
    (lambda: RdpCurveEvent((1.0, 3.0), (0.1, 0.2)), "orders"),
    (lambda: RdpCurveEvent((2.0, 3.0), (0.1, -0.2)), "rdp"),
    (lambda: ComposedEvent((GaussianEvent(1.0),), (-1,)), "counts"),
    (lambda: event_from_dict({"kind": "laplace", "scale": 1.0}), "kind"),
    (lambda: event_from_dict({"noise_multiplier": 1.0}), "kind"),
    (lambda: event_from_dict({"kind": "subsampled_gaussian", "noise_multiplier": 1.0}),
     "sampling_rate"),
    (lambda: RdpAccountant([0.5, 2.0]), "orders"),
    (lambda: RdpAccountant().get_epsilon(DELTA, conversion="pld"), "conversion"),
])
def test_invalid_values_raise_naming_the_field(make, field):
    with pytest.raises(ValueError, match=field):
        make()
