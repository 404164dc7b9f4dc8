"""CDPB design: Lemmas 1-2 (Stage I), Stage II solvers, Algorithm 3, the design artifact.

References: our analytic values. Printed values must agree to every printed digit (half a unit in
the last digit, ``assert_printed``); integer tau exactly. Where we fix a
tolerance (1e-6 for Algorithm 2 vs Brent) that tolerance is used.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from airfl.papers.cdpb.design import (argmin_rho, design_from_params, feasible_interval,
                                      gamma_interval, literal_rho, rho_bisection, rho_bounds,
                                      rho_eps_floor, rho_gamma, rho_gamma_closed, rho_numeric,
                                      rho_theorem3, stage_one, two_stage, utility_slope)
from airfl.papers.cdpb.objective import Objective
from airfl.papers.cdpb.setting import CdpbSetting

from cdpb_helpers import assert_printed

S = CdpbSetting()


@pytest.fixture(scope="module")
def designs():
    """Algorithm 3 for CDPB-i and CDPB-n in both Stage-II modes (defaults)."""
    return {(v, m): two_stage(Objective(S, v), mode=m) for v in ("cdpb_i", "cdpb_n")
            for m in ("constrained", "literal")}


# --------------------------------------------------------------------------- Stage I
@pytest.mark.parametrize("variant,rho_g,gamma1,tau_g,tau_e", [
    ("cdpb_i", "0.6180340", "0.2914641", 30, 74),
    ("cdpb_n", "0.5000000", "0.3262264", 33, 75),
])
def test_stage_one_matches_appendix_a(variant, rho_g, gamma1, tau_g, tau_e):
    obj = Objective(S, variant)
    st1 = stage_one(obj)
    assert_printed(st1.rho_gamma, rho_g)
    assert_printed(float(obj.gamma(st1.rho_gamma, 1)), gamma1)
    assert (st1.tau_gamma_min, st1.tau_eps_max, st1.rho_eps) == (tau_g, tau_e, 1.0)
    assert st1.size == tau_e - tau_g + 1


def test_closed_form_rho_gamma_vs_numeric_argmin():
    """(29) is the exact argmin of Phi_i only without receiver noise: then they agree to 1e-6.
    With sigma_z^2 = 0.01 the argmin moves by 3e-5 relative (a 1e-6 agreement
    does not hold) but Phi differs by < 1e-8 relative, so tau_gamma_min is unchanged.
    (28) for CDPB-n is exact here because a_n = 0 (App. C)."""
    quiet = Objective(S.replace(sigma_z2=0.0), "cdpb_i")
    assert rho_gamma(quiet, "numeric")[0] == pytest.approx(rho_gamma(quiet)[0], rel=1e-6)
    obj = Objective(S, "cdpb_i")
    closed, numeric = rho_gamma(obj)[0], rho_gamma(obj, "numeric")[0]
    assert 1e-6 < abs(numeric - closed) / closed < 1e-4
    assert float(obj.phi(numeric)) <= float(obj.phi(closed))
    assert float(obj.phi(closed)) == pytest.approx(float(obj.phi(numeric)), rel=1e-8)
    assert stage_one(obj, "numeric").tau_gamma_min == stage_one(obj).tau_gamma_min
    obj_n = Objective(S, "cdpb_n")
    assert rho_gamma(obj_n, "numeric")[0] == pytest.approx(0.5, rel=1e-6)


def _min_gamma(obj: Objective, tau: int) -> float:
    return argmin_rho(lambda r: obj.gamma(r, tau), *rho_bounds(obj.setting))[1]


def _min_eps_round(obj: Objective) -> float:
    return float(np.min(obj.eps_round(np.linspace(*rho_bounds(obj.setting), 4001))))


@pytest.mark.parametrize("strategy,beta,setting", [
    ("cdpb_i", None, S), ("cdpb_n", None, S), ("cdpb_mixed", 0.5, S),
    ("cdpb_i", None, S.replace(K=300, gamma_bar=0.005)),
    ("cdpb_n", None, S.replace(K=10, P=10.0, gamma_bar=0.1, h_bar=1.5)),
])
def test_feasible_set_endpoints_satisfy_lemmas(strategy, beta, setting):
    """tau_gamma_min is the fewest rounds at which some rho reaches gamma <= gamma_bar
    (Lemma 1); tau_eps_max the most rounds at which some rho keeps eps <= eps_bar (Lemma 2)."""
    obj = Objective(setting, strategy, beta)
    st1 = stage_one(obj)
    assert float(obj.gamma(st1.rho_gamma, st1.tau_gamma_min)) <= setting.gamma_bar
    assert _min_gamma(obj, st1.tau_gamma_min - 1) > setting.gamma_bar
    assert float(obj.eps(st1.rho_eps, st1.tau_eps_max)) <= setting.eps_bar
    assert (st1.tau_eps_max + 1) * _min_eps_round(obj) > setting.eps_bar


@pytest.mark.parametrize("h_bar,t_i,t_n", [(0.5, (30, 101), (33, 104)), (1.0, (30, 74), (33, 75)),
                                          (1.5, (30, 65), (33, 65))])
def test_fig8_setting_feasible_sets(h_bar, t_i, t_n):
    s = S.replace(K=10, P=10.0, gamma_bar=0.1, h_bar=h_bar)
    for variant, expected in (("cdpb_i", t_i), ("cdpb_n", t_n)):
        st1 = stage_one(Objective(s, variant))
        assert (st1.tau_gamma_min, st1.tau_eps_max) == expected


# --------------------------------------------------------------------------- Algorithm 3
@pytest.mark.parametrize("key,G,rho,tau,extra", [
    (("cdpb_i", "literal"), "0.00508391", "0.680152", 74, ("eps_opt", "112.93")),
    (("cdpb_n", "literal"), "0.00557935", "0.534071", 75, ("eps_opt", "122.00")),
    (("cdpb_i", "constrained"), "0.00533049", "0.901580", 72, ("gamma_opt", "0.004330")),
    (("cdpb_n", "constrained"), "0.00623002", "0.657598", 65, ("gamma_opt", "0.005230")),
])
def test_two_stage_matches_appendix_a(designs, key, G, rho, tau, extra):
    d = designs[key]
    assert d.feasible and d.tau_opt == tau
    assert_printed(d.G_opt, G)
    assert_printed(d.rho_opt, rho)
    assert_printed(getattr(d, extra[0]), extra[1])


def test_constrained_design_honours_p1_and_literal_does_not(designs):
    for variant in ("cdpb_i", "cdpb_n"):
        c, lit = designs[(variant, "constrained")], designs[(variant, "literal")]
        assert c.gamma_opt <= S.gamma_bar and c.eps_opt <= S.eps_bar * (1 + 1e-12)
        assert lit.eps_opt > S.eps_bar and lit.G_opt < c.G_opt
        g = np.array(c.per_tau["G"], dtype=float)
        eligible = np.array(c.per_tau["eligible"])
        assert c.G_opt == np.min(g[eligible])


def test_stage_two_numeric_never_worse_than_theorem3(designs):
    """Theorem 3 returns the boundary P/W^2 with the defaults while the true argmin
    of G lies in 0.62-0.90; the numeric solve is never worse."""
    table = designs[("cdpb_i", "literal")].per_tau
    g_num, g_t3 = np.array(table["G"]), np.array(table["G_theorem3"])
    assert np.all(g_num <= g_t3 * (1 + 1e-12)) and np.any(g_num < g_t3 * (1 - 1e-6))
    np.testing.assert_allclose(table["rho_theorem3"], 1.0, rtol=1e-12)
    obj = Objective(S, "cdpb_i")
    rhos = [rho_numeric(obj, t) for t in (20, 150)]
    assert 0.62 <= rhos[0] < rhos[1] <= 0.90


def test_theorem3_with_four_m2g_equal_four():
    """With 4 M^2 G = 4 Theorem 3 gives 0.5 and the true argmin is 0.39-0.48 over
    tau = 20..150 (printed to 2 decimals: [0.385, 0.485])."""
    obj = Objective(S.replace(G=1.0), "cdpb_i")
    for tau in (20, 150):
        assert rho_theorem3(obj, tau) == pytest.approx(0.5, rel=1e-9)
        assert 0.385 <= rho_numeric(obj, tau) <= 0.485
        assert float(obj.utility(rho_numeric(obj, tau), tau)) < float(obj.utility(0.5, tau))
    with pytest.raises(ValueError, match="CDPB-i"):
        rho_theorem3(Objective(S, "cdpb_n"), 10)


@pytest.mark.parametrize("tau", [1, 10, 50, 75, 150])
def test_bisection_finds_a_stationary_point_and_matches_brent(tau):
    obj = Objective(S, "cdpb_n")
    rho = rho_bisection(obj, tau)
    lo, hi = rho_bounds(S)
    assert lo < rho < hi
    assert utility_slope(obj, rho - 1e-6, tau) < 0 < utility_slope(obj, rho + 1e-6, tau)
    assert rho == pytest.approx(rho_numeric(obj, tau), rel=1e-6)  # our Stage II tolerance


def test_bisection_returns_the_boundary_when_g_is_monotone():
    """With lam1 = 0, G = lam2 eps decreases in rho: Algorithm 2 stops at P/W^2."""
    obj = Objective(S.replace(lam1=0.0), "cdpb_n")
    assert utility_slope(obj, S.rho_max, 10) <= 0
    assert rho_bisection(obj, 10) == S.rho_max


def test_paper_solver_reproduces_numeric_design_for_cdpb_n(designs):
    d = two_stage(Objective(S, "cdpb_n"), solver="paper")
    ref = designs[("cdpb_n", "constrained")]
    assert d.tau_opt == ref.tau_opt and d.rho_opt == pytest.approx(ref.rho_opt, rel=1e-6)


@pytest.mark.parametrize("variant,row", [
    ("cdpb_i", {"rho_opt": "0.9016", "p_opt": "0.406", "k_t_opt": "40.6", "sigma_q2_opt": "40.6",
                "eps_opt": "100.0", "eps_round": "1.389"}),
    ("cdpb_n", {"rho_opt": "0.6576", "p_opt": "0.518", "k_t_opt": "51.8", "sigma_q2_opt": "65.9",
                "eps_opt": "100.0", "eps_round": "1.538"}),
])
def test_operating_point_matches_the_reference_values(designs, variant, row):
    d = designs[(variant, "constrained")]
    for key, printed in row.items():
        value = d.eps_opt / d.tau_opt if key == "eps_round" else getattr(d, key)
        assert_printed(value, printed)


# --------------------------------------------------------------------------- artifact, errors
def test_design_artifact_is_json_and_consistent(designs):
    d = designs[("cdpb_i", "constrained")]
    data = json.loads(json.dumps(d.to_dict(), allow_nan=False))
    assert data["rho_opt"] == d.rho_opt and data["tau_opt"] == 72
    assert data["feasible_set"][0] == 30 and data["feasible_set"][-1] == 74
    assert data["stage_one"]["size"] == 45 and data["per_tau"]["tau"] == data["feasible_set"]
    assert data["setting"]["K"] == 100 and data["strategy"] == "cdpb_i"


def test_infeasible_problem_raises_naming_the_thresholds():
    """K = 10 with gamma_bar = 0.01 (tau_gamma_min ~ 300 > tau_eps_max)."""
    obj = Objective(S.replace(K=10, P=10.0), "cdpb_i")
    with pytest.raises(ValueError, match="gamma_bar"):
        two_stage(obj)
    d = two_stage(obj, on_infeasible="return")
    assert not d.feasible and d.rho_opt is None and d.stage_one.size <= 0
    assert json.dumps(d.to_dict(), allow_nan=False)
    assert 0 < literal_rho(obj, 150) <= obj.setting.rho_max


@pytest.mark.parametrize("kwargs,name", [
    ({"mode": "exact"}, "stage2_mode"), ({"solver": "cvx"}, "stage2_solver"),
    ({"rho_gamma_method": "guess"}, "rho_gamma_method"), ({"on_infeasible": "warn"},
                                                          "on_infeasible"),
])
def test_invalid_design_options_raise(kwargs, name):
    with pytest.raises(ValueError, match=name):
        two_stage(Objective(S, "cdpb_i"), **kwargs)


def test_constrained_mode_refuses_bounds_not_decreasing_in_rho():
    """no_amplification (alpha W^2 / sigma_q^2) grows with rho for CDPB-i, so the eps_bar
    root of the constrained Stage II is undefined. Lemma 2 then takes the grid minimiser of
    eps_r as rho_eps (here the lower end) instead of P/W^2."""
    obj = Objective(S.replace(rdp_bound="no_amplification"), "cdpb_i")
    with pytest.raises(ValueError, match="rdp_bound"):
        two_stage(obj)
    st1 = stage_one(obj)
    assert st1.rho_eps == rho_bounds(S)[0]
    assert st1.tau_eps_max == math.floor(S.eps_bar / float(obj.eps_round(st1.rho_eps)))
    wang = stage_one(Objective(S.replace(rdp_bound="wang_thm9"), "cdpb_i"))
    assert wang.rho_eps == S.rho_max and wang.tau_eps_max > 74  # tighter than Theorem 1


def test_binding_noise_constraint_raises_naming_h_bar():
    with pytest.raises(ValueError, match="h_bar"):
        stage_one(Objective(S.replace(h_bar=3.0), "cdpb_n"))
    assert stage_one(Objective(S.replace(h_bar=2.0), "cdpb_n")).size > 0  # h_bar ablation


def test_design_from_params_block():
    block = {"K": 100, "stage2_mode": "literal", "stage2_solver": "numeric",
             "stage1_rho_gamma": "closed", "gamma_form": "approx", "train": {"rounds": 200}}
    assert design_from_params(block, "cdpb_n").tau_opt == 75
    with pytest.raises(ValueError, match="gamma_form"):
        design_from_params({**block, "gamma_form": "exact"})
    with pytest.raises(ValueError, match="beta"):
        design_from_params(block, "cdpb_mixed")


def test_closed_forms_reject_mixed_beta():
    with pytest.raises(ValueError, match="beta"):
        rho_gamma_closed(S, 0.5)
    assert rho_gamma(Objective(S, "cdpb_mixed", 0.5))[1] == "numeric"
    assert math.isfinite(rho_gamma(Objective(S, "cdpb_mixed", 0.5))[0])


# --------------------------------------------------------------------------- edge cases
def test_theorem3_continues_at_the_boundary_where_its_denominator_is_not_positive():
    """At P = 10, (33)'s denominator W^2(alpha-1)/(P h_bar) + b - 1 at rho = P/W^2 is <= 0 for
    the larger tau of T (b ~ 1/tau^2): there the continuation is P/W^2 (the root grows without
    bound as the denominator falls to 0+, and (25e) clips it), so the literal paper-solver
    design keeps every tau of T (NaN used to drop them, even in literal mode)."""
    s = CdpbSetting(P=10.0)
    obj = Objective(s, "cdpb_i")
    design = two_stage(obj, mode="literal", solver="paper", on_infeasible="return")
    k_t = s.K * math.exp(-s.rho_max * s.W**2 / (s.P * s.h_bar))  # (53) at rho = P/W^2
    undefined = [tau for tau in design.feasible_set
                 if s.W**2 * (s.alpha - 1) / (s.P * s.h_bar)
                 + 4.0 * s.lam1 * s.M**2 * s.G / (s.lam2 * tau**2 * k_t) - 1.0 <= 0.0]
    assert len(undefined) >= 10                  # the case is constructed
    for tau in undefined:
        assert rho_theorem3(obj, tau) == s.rho_max
    assert design.feasible and all(design.per_tau["eligible"])
    assert all(math.isfinite(r) for r in design.per_tau["rho_theorem3"])
    assert design.tau_opt == design.feasible_set[int(np.argmin(design.per_tau["G"]))]


def test_constrained_stage_two_projects_onto_the_feasible_interval():
    """lam2 = 1e-2, gamma_bar = 0.01, eps_bar = 44: the unconstrained minimiser is P/W^2, where
    gamma > gamma_bar at every tau of T = {30, 31, 32}; max(rho_unc, rho_eps_floor) therefore
    rejected every tau and declared the problem infeasible. A rho meeting both thresholds exists
    (the upper end of the gamma interval); the projection finds it, and it is the constrained
    minimum of G over a fine grid (G convex in rho)."""
    s = CdpbSetting(lam2=1e-2, gamma_bar=0.01, eps_bar=44.0)
    obj = Objective(s, "cdpb_i")
    design = two_stage(obj, on_infeasible="return")
    assert design.feasible_set == (30, 31, 32)
    for tau in design.feasible_set:              # the old rule fails (25b) at every tau
        rho_unc = rho_numeric(obj, tau)
        floor = rho_eps_floor(obj, tau)
        old = max(rho_unc, floor) if floor is not None else math.nan
        assert not float(obj.gamma(old, tau)) <= s.gamma_bar
    assert design.feasible
    assert design.gamma_opt <= s.gamma_bar and design.eps_opt <= s.eps_bar
    grid = np.linspace(*rho_bounds(s), 200001)
    best = math.inf
    for tau in design.feasible_set:
        ok = (obj.gamma(grid, tau) <= s.gamma_bar) & (obj.eps(grid, tau) <= s.eps_bar)
        if ok.any():
            best = min(best, float(np.min(obj.utility(grid[ok], tau))))
    assert math.isfinite(best) and design.G_opt <= best * (1.0 + 1e-9)
    lo, hi = gamma_interval(obj, design.tau_opt)
    assert design.rho_opt == pytest.approx(hi, rel=1e-12)   # on the interval's upper end


def test_feasible_interval_is_empty_only_when_no_rho_meets_both():
    """gamma_bar = 0.004 leaves T = {73, 74}, but the gamma interval lies below the eps floor:
    the interval is empty, and a grid confirms no rho meets both thresholds."""
    s = CdpbSetting(gamma_bar=0.004)
    obj = Objective(s, "cdpb_i")
    grid = np.linspace(*rho_bounds(s), 200001)
    for tau in (73, 74):
        both = (obj.gamma(grid, tau) <= s.gamma_bar) & (obj.eps(grid, tau) <= s.eps_bar)
        assert feasible_interval(obj, tau) is None and not both.any()
    assert not two_stage(obj, on_infeasible="return").feasible
