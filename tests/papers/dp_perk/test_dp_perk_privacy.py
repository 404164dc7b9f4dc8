"""DP as a perk: the user-level bound (Prop. III.1), its (eps, delta) forms, and the project's
generic accountant as an independent oracle for D = inf."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

from airfl.papers.dp_perk import privacy as pv
from airfl.papers.dp_perk.uplink import transmit_scalars
from airfl.privacy import (DEFAULT_ORDERS, RdpAccountant, cumulative_rdp, eps_from_rdp,
                           eps_from_rdp_classic)

torch.set_num_threads(1)

D_MODEL, R, DELTA, T, SIGMA2, ETA, K = 582_026, 0.9, 1e-5, 50, 1e-13, 0.005, 45
C = math.sqrt(0.012 * D_MODEL)

#: Sec. III, our values: eps~, eps, c_delta, K_rdp,max, A, noise std on the sum, per-coordinate
#: model-noise std per round. Compared to half a unit of the last printed digit.
REFERENCE = [
    ("0.01", "7.629", "1.325", "0.9493", "7.551e-18", "575.4", "0.0639"),
    ("0.04", "30.52", "5.301", "8.696", "6.917e-17", "190.1", "0.0211"),
    ("0.10", "76.29", "13.25", "29.30", "2.331e-16", "103.6", "0.01151"),
    ("0.13", "99.18", "17.23", "40.25", "3.201e-16", "88.4", "0.00982"),
    ("0.28", "213.6", "37.11", "96.41", "7.669e-16", "57.1", "0.00634"),
]


def _half_ulp(text: str) -> float:
    """Half a unit in the last printed digit of a decimal string like '7.551e-18' or '0.0639'."""
    mantissa, _, exponent = text.partition("e")
    decimals = len(mantissa.split(".")[1]) if "." in mantissa else 0
    return 0.5 * 10.0 ** (-decimals + (int(exponent) if exponent else 0))


@pytest.mark.parametrize("row", REFERENCE, ids=[r[0] for r in REFERENCE])
def test_budget_reference_numbers(row):
    eps_tilde = float(row[0])
    eps = eps_tilde * math.sqrt(D_MODEL)
    A = pv.budget_A(eps, DELTA, R, C, SIGMA2)
    std_sum = math.sqrt(T * SIGMA2 / (2.0 * A))  # binding, equal q = sqrt(T/A), Re of CN noise
    ours = [eps, pv.c_delta_min(eps, DELTA), pv.rdp_budget(eps, DELTA), A, std_sum,
            ETA / K * std_sum]
    for printed, value in zip(row[1:], ours):
        assert abs(value - float(printed)) <= _half_ulp(printed) * (1 + 1e-9), (printed, value)


def test_privacy_constants():
    assert round(C, 4) == 83.5722 and round(C * C, 2) == 6984.31
    assert round(math.sqrt(D_MODEL), 3) == 762.906
    assert round(pv.log_inv_delta(DELTA), 4) == 11.5129


def test_binding_noise_closed_form_does_not_depend_on_sigma2():
    """Sec. III: Var on the sum = T sigma^2/(2A) = T r c~ (2 eps~ sqrt(d) + 4 L)/eps~^2."""
    for sigma2 in (1e-13, 3e-9):
        A = pv.budget_A(0.1 * math.sqrt(D_MODEL), DELTA, R, C, sigma2)
        closed = T * R * 0.012 * (2 * 0.1 * math.sqrt(D_MODEL) + 4 * pv.log_inv_delta(DELTA)) / 0.01
        assert T * sigma2 / (2 * A) == pytest.approx(closed, rel=1e-12)


@pytest.mark.parametrize("eps_tilde", [0.01, 0.1, 0.28, 3.0])
def test_full_budget_gives_the_target_eps(eps_tilde):
    """Lemma III.1: Sigma 1/q^2 = A  =>  eps_paper(2 r c^2 A / sigma^2) == eps (1e-9)."""
    eps = eps_tilde * math.sqrt(D_MODEL)
    A = pv.budget_A(eps, DELTA, R, C, SIGMA2)
    q = np.full(T, math.sqrt(T / A))
    k = pv.rdp_slope(q, R, C, SIGMA2)
    assert pv.eps_paper(k, DELTA) == pytest.approx(eps, rel=1e-9)
    # (23) literally with c_delta = 2 eps/L: eps = sqrt((2 c_delta + 8) L r c^2 sum phi / sigma^2)
    literal = math.sqrt((2 * pv.c_delta_min(eps, DELTA) + 8) * pv.log_inv_delta(DELTA) * R * C ** 2
                        * np.sum(1 / q ** 2) / SIGMA2)
    assert literal == pytest.approx(eps, rel=1e-9)


def test_paper_conversion_is_lemma_iii1_at_its_order_and_not_better_than_optimal():
    for k in (1e-3, 0.5, 29.3, 1e4):
        e = pv.eps_paper(k, DELTA)
        assert pv.eps_at_order(k, DELTA, pv.paper_order(e, DELTA)) == pytest.approx(e, rel=1e-12)
        e_opt, a_opt = pv.eps_optimal(k, DELTA)
        grid = 1.0 + np.geomspace(1e-4, 1e5, 400_001)
        brute = np.min(grid * k + pv.log_inv_delta(DELTA) / (grid - 1))
        assert e_opt <= brute * (1 + 1e-12) and brute <= e_opt * (1 + 1e-6)
        assert pv.eps_at_order(k, DELTA, a_opt) == pytest.approx(e_opt, rel=1e-12)
        assert e_opt <= e


def test_d_infinity_agrees_with_the_generic_accountant():
    """Composing the per-round Gaussian events in airfl.privacy gives the paper's RDP curve at
    every order, and its classic conversion is the min of Lemma III.1 over the same orders."""
    rng = np.random.default_rng(3)
    A = pv.budget_A(0.1 * math.sqrt(D_MODEL), DELTA, R, C, SIGMA2)
    q = np.exp(rng.normal(0.0, 0.4, T)) * math.sqrt(T / A)   # the binding regime: K_rdp ~ 30
    k = pv.rdp_slope(q, R, C, SIGMA2)
    acc = RdpAccountant()
    for qt in q:
        acc.compose(pv.gaussian_event(qt, R, C, SIGMA2))
    orders = np.asarray(DEFAULT_ORDERS)
    np.testing.assert_allclose(acc.rdp, orders * k, rtol=1e-12)
    eps_grid, order = eps_from_rdp_classic(orders, acc.rdp, DELTA)
    lemma = [pv.eps_at_order(k, DELTA, a) for a in orders]
    assert eps_grid == pytest.approx(min(lemma), rel=1e-12)
    assert pv.eps_optimal(k, DELTA)[0] <= eps_grid <= pv.eps_paper(k, DELTA)
    # the paper's (23) is the classic conversion at the single order 1 + 2 L / eps
    e = pv.eps_paper(k, DELTA)
    at_paper_order = eps_from_rdp_classic([pv.paper_order(e, DELTA)],
                                          [pv.paper_order(e, DELTA) * k], DELTA)[0]
    assert at_paper_order == pytest.approx(e, rel=1e-12)
    # the improved conversion of the generic accountant is tighter still
    assert eps_from_rdp(orders, acc.rdp, DELTA)[0] <= eps_grid
    # round-record path: dicts of events, composed by the privacy stage's function
    total = cumulative_rdp([pv.gaussian_event(qt, R, C, SIGMA2).to_dict() for qt in q], orders)
    np.testing.assert_allclose(total[-1], orders * k, rtol=1e-12)


def test_domain_constant_matches_phi_of_eq_22():
    """Phi = (sqrt(phi) + (1+kappa)^Q sqrt(r) D n / (2 eta c ||w||))^2 (22) equals B/q^2."""
    L, Q, n, D, q = 10.0, 5, 50, 0.3, 1.7e4
    B = pv.domain_constant(ETA, L, Q, R, n, D, C)
    phi22 = (math.sqrt(1 / q ** 2) + (1 + ETA * L) ** Q * math.sqrt(R) * D * n
             / (2 * ETA * C * q)) ** 2
    assert B / q ** 2 == pytest.approx(phi22, rel=1e-13)
    assert pv.domain_constant(ETA, L, Q, R, n, math.inf, C) == math.inf
    # our reading: more local steps, larger B (weaker saturation)
    assert pv.domain_constant(ETA, L, 600, R, n, D, C) > 1e20 * B


def test_cumulative_bound_saturates_at_T_star_equal_B():
    phi = np.full(80, 2.0)
    out = pv.cumulative_phi(phi, B=50.0)
    t = np.arange(1, 81)
    np.testing.assert_allclose(out, 2.0 * np.minimum(t, 50), rtol=1e-15)
    np.testing.assert_array_equal(pv.cumulative_phi(phi), np.cumsum(phi))


def test_all_tau_accountant_against_brute_force():
    rng = np.random.default_rng(5)
    phi = rng.uniform(0.1, 3.0, 30)
    B = 7.0
    ours = pv.cumulative_phi(phi, B, "pabi_all_tau")
    for horizon in range(1, 31):
        p = phi[:horizon]
        candidates = [p.sum()] + [B * p[tau] + p[tau + 1:].sum() for tau in range(1, horizon)]
        assert ours[horizon - 1] == pytest.approx(min(candidates), rel=1e-13)
    paper = pv.cumulative_phi(phi, B, "paper")
    assert np.all(ours <= paper) and np.any(ours < paper * (1 - 1e-6))


def test_phi_general_form_reduces_to_inverse_norm_square():
    g = torch.Generator().manual_seed(0)
    z = torch.randn(6, 3, 2, generator=g, dtype=torch.float64)
    H = torch.complex(z[..., 0], z[..., 1])
    w = torch.complex(*torch.randn(2, 6, generator=g, dtype=torch.float64))
    phi = pv.phi_from_gains(w, H, transmit_scalars(w, H))
    assert phi == pytest.approx(1.0 / float(torch.linalg.vector_norm(w)) ** 2, rel=1e-12)
    # a transceiver that under-inverts device 0 by a factor 2 leaks more through it
    s = transmit_scalars(w, H).clone()
    s[0] *= 2
    assert pv.phi_from_gains(w, H, s) == pytest.approx(4 * phi, rel=1e-12)


def test_strict_convention_doubles_the_rdp_for_the_real_part_receiver():
    q = np.full(T, 2e4)
    paper = pv.rdp_slope(q, R, C, pv.accounting_sigma2(SIGMA2, "complex_real_part", "paper"))
    strict = pv.rdp_slope(q, R, C, pv.accounting_sigma2(SIGMA2, "complex_real_part", "strict"))
    full = pv.rdp_slope(q, R, C, pv.accounting_sigma2(SIGMA2, "real_full", "strict"))
    assert strict == pytest.approx(2 * paper, rel=1e-15) and full == paper


def test_report_is_json_and_consistent():
    q = np.full(T, 5e4)
    rep = pv.privacy_report(q, R, C, SIGMA2, DELTA, D_MODEL, B=1e3)
    json.dumps(rep.to_dict(), allow_nan=False)
    assert rep.eps_optimal <= rep.eps_paper
    assert rep.accumulated_phi == pytest.approx(min(T / 5e4 ** 2, 1e3 / 5e4 ** 2), rel=1e-14)
    assert rep.eps_tilde_paper == pytest.approx(rep.eps_paper / math.sqrt(D_MODEL))


@pytest.mark.parametrize("call, name", [
    (lambda: pv.log_inv_delta(1.0), "delta"),
    (lambda: pv.rdp_slope([1.0, 0.0], R, C, SIGMA2), "q"),
    (lambda: pv.budget_A(-1.0, DELTA, R, C, SIGMA2), "eps"),
    (lambda: pv.domain_constant(ETA, 10, 5, R, 50, -1.0, C), "domain_D"),
    (lambda: pv.cumulative_phi([1.0], B=0.5), "B"),
    (lambda: pv.accounting_sigma2(SIGMA2, "complex_real_part", "loose"), "dp_noise_convention"),
])
def test_invalid_input_names_the_parameter(call, name):
    with pytest.raises(ValueError, match=name):
        call()
