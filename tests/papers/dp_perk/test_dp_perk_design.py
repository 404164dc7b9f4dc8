"""DP as a perk: the norm allocation (water-filling, bisection, cvxpy), the perk window
(P_thr, P_full) and the finite-D allocation (App. D; our readings)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

from airfl.papers.dp_perk import design as dz
from airfl.papers.dp_perk import privacy as pv
from airfl.papers.dp_perk.beamforming import zf_matrix
from airfl.papers.dp_perk.uplink import plan_uplink, trial_generators

torch.set_num_threads(1)

DIM, R, DELTA, SIGMA2 = 1000, 0.5, 1e-5, 1e-13
CLIP = dz.clip_threshold(DIM)


def _random_pi(seed: int, T: int = 50) -> np.ndarray:
    return np.exp(np.random.default_rng(seed).normal(0.0, 0.6, T)) * 1e5


def _binding_cases(n: int = 6):
    for seed in range(n):
        pi = _random_pi(seed)
        frac = np.random.default_rng(100 + seed).uniform(0.02, 0.95)
        yield pi, frac * np.sum(1.0 / pi ** 2)


@pytest.fixture(scope="module")
def plan():
    return plan_uplink(10, R, 8, 12, CLIP, DIM, 2e-3, trial_generators(0, 0))


def test_waterfill_matches_cvxpy_to_6e_5():
    """Prop. IV.2-IV.3: the sorted solution and a cvxpy solve agree to 6e-5 (our measurement)."""
    for pi, A in _binding_cases(4):
        exact, conic = dz.waterfill(pi, A), dz.waterfill_cvxpy(pi, A)
        assert np.max(np.abs(np.asarray(conic.q) / exact.q - 1)) <= 6e-5
        assert conic.objective >= exact.objective * (1 - 1e-9)   # the exact one is optimal


def test_waterfill_matches_bisection():
    for pi, A in _binding_cases():
        exact, bis = dz.waterfill(pi, A), dz.waterfill_bisection(pi, A)
        np.testing.assert_allclose(bis.q, exact.q, rtol=1e-11)
        assert bis.sum_inv_q2 <= A


def test_waterfill_satisfies_kkt():
    """(43): feasible, budget active, raised rounds at one level, the others with pi >= level."""
    for pi, A in _binding_cases():
        alloc = dz.waterfill(pi, A)
        q = np.asarray(alloc.q)
        assert alloc.binding and np.all(q >= pi)
        assert np.sum(1 / q ** 2) <= A and np.sum(1 / q ** 2) == pytest.approx(A, rel=1e-12)
        raised = q > pi
        assert raised.any() and np.ptp(q[raised]) == 0.0 and np.all(pi[~raised] >= q[raised][0])


def test_waterfill_beats_random_feasible_allocations():
    rng = np.random.default_rng(7)
    for pi, A in _binding_cases(3):
        best = dz.waterfill(pi, A).objective
        for _ in range(200):
            q = pi * np.exp(rng.uniform(0, 2, pi.size))
            q *= math.sqrt(max(1.0, np.sum(1 / q ** 2) / A))     # scale up until feasible
            assert np.sum(q ** 2) >= best * (1 - 1e-12)


def test_perk_regime_returns_pi_and_full_binding_returns_sqrt_T_over_A():
    pi = _random_pi(1)
    slack = dz.waterfill(pi, 1.01 * np.sum(1 / pi ** 2))
    assert not slack.binding and slack.q == tuple(pi) and slack.water_level is None
    A = 0.5 / np.max(pi) ** 2 * pi.size            # every pi below sqrt(T/A)
    full = dz.waterfill(pi, A)
    level = math.sqrt(pi.size / A)
    assert full.raised_rounds == pi.size and full.q[0] == pytest.approx(level, rel=1e-15)
    other = dz.waterfill(pi * 0.7, A)               # different channels, same T and A
    assert other.q == full.q                        # bitwise: q does not depend on P (our reading)


def test_budget_holds_in_floating_point_on_many_cases():
    rng = np.random.default_rng(11)
    for _ in range(300):
        pi = np.exp(rng.normal(0, 2, rng.integers(1, 80))) * 10 ** rng.uniform(-3, 12)
        A = rng.uniform(0.01, 0.99) * np.sum(1 / pi ** 2)
        assert dz.waterfill(pi, A).sum_inv_q2 <= A


def test_perk_window_on_a_channel_plan(plan):
    A = 0.3 * float(torch.sum(1 / plan.pi ** 2))     # binding at the plan's power
    p_thr, p_full = dz.perk_window(plan.pi, A=A, power_w=plan.power_w, clip=CLIP, dim=DIM)
    assert p_thr < plan.power_w < p_full or p_thr < p_full <= plan.power_w
    at_thr = plan.at_power(p_thr).pi
    assert float(torch.sum(1 / at_thr ** 2)) == pytest.approx(A, rel=1e-12)
    below = dz.waterfill(plan.at_power(p_thr * 0.999).pi, A)
    assert not below.binding and below.q == below.pi
    between = dz.waterfill(plan.at_power(math.sqrt(p_thr * p_full)).pi, A)
    assert 0 < between.raised_rounds < plan.rounds
    assert between.objective >= float(np.sum(np.square(between.pi)))
    above = [dz.waterfill(plan.at_power(p_full * f).pi, A) for f in (1.0001, 3.0, 1e6)]
    assert all(a.raised_rounds == plan.rounds for a in above)
    assert above[0].q == above[1].q == above[2].q
    assert dz.waterfill(plan.at_power(p_full * 0.99).pi, A).raised_rounds < plan.rounds


def test_perk_threshold_of_eq_51_from_the_channels(plan):
    """(51)-(52) with h_eff from ||H (H^H H)^{-1} u|| computed directly equals P A / sum pi^-2."""
    A = 1e-3 * float(torch.sum(1 / plan.pi ** 2))
    u = torch.ones(plan.channels.shape[-1], dtype=plan.channels.dtype)
    norms = torch.linalg.vector_norm(zf_matrix(plan.channels) @ u, dim=-1)
    h_eff = float(torch.sum(1 / norms ** 2))
    direct = dz.perk_threshold_power(A=A, clip=CLIP, dim=DIM, h_eff=h_eff)
    window = dz.perk_window(plan.pi, A=A, power_w=plan.power_w, clip=CLIP, dim=DIM)
    assert direct == pytest.approx(window[0], rel=1e-12)


def test_no_dp_target_is_airfl_mimo(plan):
    """eps_tilde=None (AirFL-MIMO, the benchmarks' plan): q = pi, no budget, no perk window;
    its privacy is the MIMO report of the same norms."""
    kw = dict(delta=DELTA, dim=DIM, clip=CLIP, sample_ratio=R, sigma2=SIGMA2, power_w=plan.power_w)
    free = dz.design_airfl_dp(plan.pi, eps_tilde=None, **kw)
    capped = dz.design_airfl_dp(plan.pi, eps_tilde=0.05, **kw)
    assert free.q == free.pi == capped.pi and not free.binding
    assert math.isinf(free.budget_A) and free.power_threshold_w is None is free.power_full_w
    assert free.privacy_dp.to_dict() == free.privacy_mimo.to_dict() == capped.privacy_mimo.to_dict()
    assert json.loads(json.dumps(free.to_dict()))["budget_A"] == "inf"


@pytest.mark.parametrize("eps_tilde", [0.05, 0.3, 50.0])
def test_design_meets_the_eps_target(plan, eps_tilde):
    design = dz.design_airfl_dp(plan.pi, eps_tilde=eps_tilde, delta=DELTA, dim=DIM, clip=CLIP,
                                sample_ratio=R, sigma2=SIGMA2, power_w=plan.power_w)
    target = eps_tilde * math.sqrt(DIM)
    assert design.privacy_dp.eps_paper <= target
    if design.binding:
        assert design.privacy_dp.eps_paper == pytest.approx(target, rel=1e-9)
        assert design.privacy_mimo.eps_paper > target
    else:
        assert design.q == design.pi
    json.dumps(design.to_dict(), allow_nan=False)


def test_design_solvers_and_finite_domain(plan):
    kw = dict(eps_tilde=0.3, delta=DELTA, dim=DIM, clip=CLIP, sample_ratio=R, sigma2=SIGMA2,
              power_w=plan.power_w)
    exact = dz.design_airfl_dp(plan.pi, **kw)
    assert exact.binding
    np.testing.assert_allclose(dz.design_airfl_dp(plan.pi, solver="bisection", **kw).q, exact.q,
                               rtol=1e-11)
    np.testing.assert_allclose(dz.design_airfl_dp(plan.pi, solver="cvxpy", **kw).q, exact.q,
                               rtol=6e-5)
    B = pv.domain_constant(0.005, 10.0, 5, R, 10, 1e-4, CLIP)
    finite = dz.design_airfl_dp(plan.pi, domain_B=B, **kw)
    assert finite.allocation_solver.startswith("finite_domain/")
    assert finite.privacy_dp.eps_paper <= kw["eps_tilde"] * math.sqrt(DIM)
    assert sum(q * q for q in finite.q) <= sum(q * q for q in exact.q) * (1 + 1e-12)
    json.dumps(finite.to_dict(), allow_nan=False)


def test_strict_convention_spends_half_the_budget(plan):
    kw = dict(eps_tilde=0.3, delta=DELTA, dim=DIM, clip=CLIP, sample_ratio=R, sigma2=SIGMA2,
              power_w=plan.power_w)
    paper = dz.design_airfl_dp(plan.pi, **kw)
    strict = dz.design_airfl_dp(plan.pi, dp_noise_convention="strict", **kw)
    assert strict.budget_A == pytest.approx(paper.budget_A / 2, rel=1e-15)
    assert strict.privacy_dp.eps_paper == pytest.approx(paper.privacy_dp.eps_paper, rel=1e-9)


def test_finite_domain_closed_form_equals_the_paper_branches():
    for pi, A in _binding_cases(3):
        for B in (1.5, 8.0, 40.0, 1e4):
            closed = dz.allocate_finite_domain(pi, A, B, "closed_form")
            branches = dz.allocate_finite_domain(pi, A, B, "branches")
            assert branches.objective == pytest.approx(closed.objective, rel=1e-6)
            acc = pv.accumulated_phi(1 / np.asarray(closed.q) ** 2, B)
            assert acc <= A                                    # (72b) holds
            assert closed.objective <= dz.waterfill(pi, A).objective * (1 + 1e-12)


def test_finite_domain_limits():
    pi, A = next(_binding_cases(1))
    huge = dz.allocate_finite_domain(pi, A, 1e30)
    assert huge.branch == "linear" and huge.q == dz.waterfill(pi, A).q
    small = dz.allocate_finite_domain(pi, A, 1.0001)
    assert small.branch == "last_round" and small.q[:-1] == tuple(pi[:-1])


def test_errata3_third_term_only_guards_the_branch_condition():
    """A literal (P3b') closed form without S_</(B-1) can violate B r_{T-1} <= sum r, but
    min{sum r, B r_{T-1}} <= A (the privacy budget) still holds; our guarded form meets both."""
    pi = np.array([1e3, 1e3, 1.0])               # S_< = 2e-6, last 1/pi^2 = 1
    A, B = 1e-3, 10.0
    spec = 1 / np.asarray(dz._last_round(pi, A, B, side_condition=False)) ** 2
    guarded = 1 / np.asarray(dz._last_round(pi, A, B, side_condition=True)) ** 2
    assert B * spec[-1] > spec.sum()                          # side condition violated
    assert min(spec.sum(), B * spec[-1]) <= A                 # budget still met
    assert B * guarded[-1] <= guarded.sum() * (1 + 1e-15) and min(guarded.sum(), B * guarded[-1]) <= A


@pytest.mark.parametrize("call, name", [
    (lambda: dz.waterfill([1.0, 2.0], 0.0), "A"),
    (lambda: dz.waterfill([1.0, -2.0], 1.0), "pi"),
    (lambda: dz.allocate_finite_domain([1.0], 1.0, 0.5), "domain_B"),
    (lambda: dz.design_airfl_dp([1.0], eps_tilde=0.0, delta=DELTA, dim=DIM, clip=CLIP,
                                sample_ratio=R, sigma2=SIGMA2, power_w=1.0), "eps_tilde"),
    (lambda: dz.design_airfl_dp([1.0], eps_tilde=0.1, delta=2.0, dim=DIM, clip=CLIP,
                                sample_ratio=R, sigma2=SIGMA2, power_w=1.0), "delta"),
    (lambda: dz.design_airfl_dp([1.0], eps_tilde=0.1, delta=DELTA, dim=DIM, clip=CLIP,
                                sample_ratio=R, sigma2=SIGMA2, power_w=0.0), "power_w"),
])
def test_infeasible_input_names_the_parameter(call, name):
    with pytest.raises(ValueError, match=name):
        call()
