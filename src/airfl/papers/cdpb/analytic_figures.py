"""The analytic figures of CDPB (Figs. 2(a), 2(b), 3, 5, 6(a), 6(b), 7(a), 7(b), 9(a), 9(b)):
one pure function per panel, from a plain parameter dict to a tidy DataFrame.

Paper §IV-V (curves) and Appendix A (values). Every frame has the columns
``x, scheme, metric, value``; ``frame.attrs`` names the x axis and keeps the resolved
parameters, so the claims (claims.py) are evaluated on the stored frame alone.
Fig. 9(b) is our second panel (G_opt vs beta), not a paper panel.

Each entry of DEFAULTS is tagged with its source: stated (the paper gives it), missing-default
(the paper does not give it; our choice) or reconstructed (the paper's description cannot be
used as written; our reading).
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

import numpy as np
import pandas as pd

from airfl.papers.cdpb.claims import analytic as analytic_claims
from airfl.papers.cdpb.channel_stats import hmin_rho
from airfl.papers.cdpb.design import (CdpbDesign, rho_gamma, rho_numeric, stage_one,
                                      strategy_rho, two_stage)
from airfl.papers.cdpb.objective import Objective
from airfl.papers.cdpb.privacy import strategy_rdp_round
from airfl.papers.cdpb.setting import CdpbSetting

DEFAULTS: dict[str, Any] = {
    # --- analytic setting (Appendix B)
    "K": 100,                     # stated (§V: 100 clients)
    "P": 1.0,                     # missing-default
    "h_bar": 1.0,                 # missing-default (E[h] = 2 sigma_k^2 = 1)
    "W": 1.0,                     # reconstructed (normalised gradient units)
    "M": 1.0,                     # missing-default
    "G": 0.25,                    # missing-default (4 M^2 G / W^2 = 1)
    "mu": 1.0,                    # missing-default
    "alpha": 2,                   # missing-default
    "sigma_z2": 0.01,             # missing-default (20 dB per-client SNR)
    "lam1": 1.0,                  # stated (§V)
    "lam2": 1.0e-5,               # stated (§V)
    "gamma_bar": 0.01,            # stated (§V)
    "eps_bar": 100.0,             # stated (§V)
    "q_IS": 0.9,                  # missing-default
    "rdp_bound": "paper_thm1",    # stated (Theorem 1)
    # --- design options (our readings of Algorithm 3)
    "stage2_mode": "constrained",  # reconstructed
    "stage2_solver": "numeric",    # reconstructed
    "stage1_rho_gamma": "closed",  # stated (Lemma 1, (28)/(29))
    # --- figure axes (Appendix B sweeps)
    "fig2a_points": 400,           # missing-default
    "fig2a_tau": 72,               # reconstructed (the CDPB-i tau_opt)
    "fig2b_rounds": 200,           # missing-default
    "fig3_rounds": 100,            # missing-default
    "fig5_rounds": 200,            # missing-default (R = 200, as Fig. 4)
    "fig6_gamma_bar": [0.005, 0.0075, 0.01, 0.02, 0.03, 0.05, 0.1],  # missing-default
    "fig6_K": [50, 75, 100, 150, 200, 300, 500],                     # missing-default
    "fig7_K": [100, 150, 200, 300, 500],                             # missing-default
    "fig7_P": [0.5, 1.0, 2.0, 5.0, 10.0],                            # missing-default
    "fig9_rounds": 100,            # missing-default
    "mixed_betas": [0.0, 0.25, 0.5, 0.75, 1.0],  # missing-default ("portion", §V)
    "fig9b_betas": [i / 10 for i in range(11)],  # reconstructed (our second Fig. 9 panel)
}

#: Strategies of Figs. 3 and 5, in legend order.
BASELINE_ORDER = ("cdpb_i", "cdpb_n", "gamma_bar", "is", "hmin", "noise_free")


def resolve(params: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """DEFAULTS overridden by params; an unknown key is a ValueError (a typo would be silent)."""
    params = dict(params or {})
    unknown = sorted(set(params) - set(DEFAULTS) - {"model_dim"})
    if unknown:
        raise ValueError(f"unknown analytic-figure parameters {unknown}; known: {sorted(DEFAULTS)}")
    return {**DEFAULTS, **params}


def _setting(p: Mapping[str, Any], **changes: Any) -> CdpbSetting:
    return CdpbSetting.from_dict({**p, **changes})


def _design(p: Mapping[str, Any], strategy: str, beta: float | None = None,
            mode: str | None = None, rho_gamma_method: str | None = None,
            on_infeasible: str = "return", **changes: Any) -> CdpbDesign:
    """Algorithm 3 for one strategy (sweeps keep infeasible points; figures that need a rho
    pass on_infeasible="raise")."""
    obj = Objective(_setting(p, **changes), strategy, beta)
    return two_stage(obj, mode=mode or p["stage2_mode"], solver=p["stage2_solver"],
                     rho_gamma_method=rho_gamma_method or p["stage1_rho_gamma"],
                     on_infeasible=on_infeasible)


def _frame(rows: list[tuple], name: str, x: str, p: Mapping[str, Any]) -> pd.DataFrame:
    frame = pd.DataFrame(rows, columns=["x", "scheme", "metric", "value"])
    frame.attrs.update(figure=name, x=x, params=dict(p))
    return frame


def _rows(x: np.ndarray, scheme: str, metric: str, values: Any) -> list[tuple]:
    values = np.broadcast_to(np.asarray(values, dtype=np.float64), np.shape(x))
    return [(float(a), scheme, metric, float(v)) for a, v in zip(x, values)]


def _argmin_curve(obj: Objective, taus: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(rho, G) with rho the per-tau argmin of G (literal Stage II over all taus)."""
    rhos = np.array([rho_numeric(obj, int(t)) for t in taus])
    return rhos, np.asarray(obj.utility(rhos, taus))


def fig2a(params: Mapping[str, Any] | None = None) -> pd.DataFrame:
    """Fig. 2(a): gamma and eps vs rho at fixed tau, CDPB-i and CDPB-n."""
    p = resolve(params)
    s = _setting(p)
    rho = np.linspace(s.rho_max / p["fig2a_points"], s.rho_max, p["fig2a_points"])
    tau = p["fig2a_tau"]
    rows: list[tuple] = []
    for strategy in ("cdpb_i", "cdpb_n"):
        obj = Objective(s, strategy)
        rho_g = rho_gamma(obj, p["stage1_rho_gamma"])[0]
        rows += _rows(rho, strategy, "gamma", obj.gamma(rho, tau))
        rows += _rows(rho, strategy, "eps", obj.eps(rho, tau))
        rows.append((rho_g, strategy, "rho_gamma", float(obj.gamma(rho_g, tau))))
    return _frame(rows, "fig2a", "rho", p)


def fig2b(params: Mapping[str, Any] | None = None) -> pd.DataFrame:
    """Fig. 2(b): gamma and eps vs tau at each variant's rho_opt."""
    p = resolve(params)
    taus = np.arange(1, p["fig2b_rounds"] + 1)
    rows: list[tuple] = []
    for strategy in ("cdpb_i", "cdpb_n"):
        design = _design(p, strategy, on_infeasible="raise")
        obj = Objective(_setting(p), strategy)
        rows += _rows(taus, strategy, "gamma", obj.gamma(design.rho_opt, taus))
        rows += _rows(taus, strategy, "eps", obj.eps(design.rho_opt, taus))
        rows.append((float(design.tau_opt), strategy, "rho_opt", design.rho_opt))
    return _frame(rows, "fig2b", "tau", p)


def _fig3_rho(p: Mapping[str, Any], s: CdpbSetting, strategy: str,
              taus: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(rho, G) per tau of one Fig.-3 curve: CDPB, IS and Noise-Free at their own
    per-tau argmin, gamma_bar at rho_gamma of CDPB-i, h_min at P h_bar / (K W^2)."""
    obj = Objective(s, strategy)
    if strategy == "gamma_bar":
        rho = np.full(taus.shape, rho_gamma(obj, p["stage1_rho_gamma"])[0])
    elif strategy == "hmin":
        rho = np.full(taus.shape, hmin_rho(s))
    else:
        return _argmin_curve(obj, taus)
    return rho, np.asarray(obj.utility(rho, taus))


def fig3(params: Mapping[str, Any] | None = None) -> pd.DataFrame:
    """Fig. 3: G(rho, tau) vs tau for every strategy (literal, unconstrained)."""
    p = resolve(params)
    s = _setting(p)
    taus = np.arange(1, p["fig3_rounds"] + 1)
    rows: list[tuple] = []
    for strategy in BASELINE_ORDER:
        rho, g = _fig3_rho(p, s, strategy, taus)
        rows += _rows(taus, strategy, "G", g) + _rows(taus, strategy, "rho", rho)
    return _frame(rows, "fig3", "tau", p)


def fig5(params: Mapping[str, Any] | None = None) -> pd.DataFrame:
    """Fig. 5: cumulative RDP eps(t) = t eps_r vs round for the six strategies, each at the rho
    of its strategy (§V); plus each CDPB variant's eps at its own tau_opt (our addition)."""
    p = resolve(params)
    s = _setting(p)
    designs = {v: _design(p, v, on_infeasible="raise") for v in ("cdpb_i", "cdpb_n")}
    rhos = {strategy: strategy_rho(p, strategy)[0] for strategy in BASELINE_ORDER}
    t = np.arange(1, p["fig5_rounds"] + 1)
    rows: list[tuple] = []
    for strategy in BASELINE_ORDER:
        eps_r = float(strategy_rdp_round(s, strategy, rhos[strategy]))
        rows += _rows(t, strategy, "eps", t * eps_r)
        rows.append((1.0, strategy, "eps_round", eps_r))
        rows.append((1.0, strategy, "rho", rhos[strategy]))
    for strategy, design in designs.items():
        rows.append((float(design.tau_opt), strategy, "eps_at_tau_opt", design.eps_opt))
    return _frame(rows, "fig5", "round", p)


def _fig6(p: Mapping[str, Any], key: str, values: list) -> list[tuple]:
    rows: list[tuple] = []
    for x in values:
        sizes = {}
        for strategy in ("cdpb_i", "cdpb_n"):
            st1 = stage_one(Objective(_setting(p, **{key: x}), strategy), p["stage1_rho_gamma"])
            sizes[strategy] = st1.size
            rows += [(float(x), strategy, "tau_gamma_min", float(st1.tau_gamma_min)),
                     (float(x), strategy, "tau_eps_max", float(st1.tau_eps_max)),
                     (float(x), strategy, "T_size", float(st1.size))]
        rows.append((float(x), "disparity", "delta_T", float(sizes["cdpb_i"] - sizes["cdpb_n"])))
    return rows


def fig6a(params: Mapping[str, Any] | None = None) -> pd.DataFrame:
    """Fig. 6(a): signed |T_i|, |T_n| and Delta|T| = |T_i| - |T_n| vs gamma_bar."""
    p = resolve(params)
    return _frame(_fig6(p, "gamma_bar", p["fig6_gamma_bar"]), "fig6a", "gamma_bar", p)


def fig6b(params: Mapping[str, Any] | None = None) -> pd.DataFrame:
    """Fig. 6(b): the same vs the number of clients K."""
    p = resolve(params)
    return _frame(_fig6(p, "K", p["fig6_K"]), "fig6b", "K", p)


def _fig7(p: Mapping[str, Any], key: str, values: list) -> list[tuple]:
    """G_opt of CDPB-i and CDPB-n and Delta G = G_n - G_i, constrained (default) and literal."""
    rows: list[tuple] = []
    for x in values:
        for mode, suffix in (("constrained", ""), ("literal", "_literal")):
            g = {}
            for strategy in ("cdpb_i", "cdpb_n"):
                d = _design(p, strategy, mode=mode, **{key: x})
                g[strategy] = d.G_opt if d.feasible else np.nan
                rows += [(float(x), strategy, "G_opt" + suffix, g[strategy]),
                         (float(x), strategy, "rho_opt" + suffix, d.rho_opt or np.nan),
                         (float(x), strategy, "tau_opt" + suffix, d.tau_opt or np.nan)]
            rows.append((float(x), "disparity", "delta_G" + suffix, g["cdpb_n"] - g["cdpb_i"]))
    return rows


def fig7a(params: Mapping[str, Any] | None = None) -> pd.DataFrame:
    """Fig. 7(a): Delta G = G_n(rho_opt,n, tau_opt,n) - G_i(rho_opt,i, tau_opt,i) vs K."""
    p = resolve(params)
    return _frame(_fig7(p, "K", p["fig7_K"]), "fig7a", "K", p)


def fig7b(params: Mapping[str, Any] | None = None) -> pd.DataFrame:
    """Fig. 7(b): the same vs the power budget P."""
    p = resolve(params)
    return _frame(_fig7(p, "P", p["fig7_P"]), "fig7b", "P", p)


#: Privacy weights lam2 (relative to lam1 = 1; G's argmins depend on lam2/lam1 only) scanned for
#: an interior optimum in beta: every second decade around the paper's 1e-5 (§V), from nearly
#: convergence-only to nearly privacy-only (G_opt at 1e1 is ~ lam2 eps_opt). A diagnostic range,
#: not a paper parameter; the bisection then refines the first bracket to WEIGHT_RTOL.
WEIGHT_DECADES = (1e-7, 1e-5, 1e-3, 1e-1, 1e1)
WEIGHT_RTOL = 0.05          # relative precision of the bisected weight


def _fig9a_curves(p: Mapping[str, Any], taus: np.ndarray, **changes: Any) -> np.ndarray:
    """G at the per-tau argmin rho for every beta of `mixed_betas` ([len(betas), len(taus)])."""
    s = _setting(p, **changes)
    return np.array([_argmin_curve(Objective(s, "cdpb_mixed", b), taus)[1]
                     for b in p["mixed_betas"]])


def _first_weight(advantage: Callable[[float], float], start: float) -> dict[str, Any]:
    """The smallest privacy weight lam2 >= start (relative to lam1) on WEIGHT_DECADES at which
    advantage(lam2) > 0, refined by bisection in log lam2 to WEIGHT_RTOL; None if no weight of
    the scan gives one. Assumes one sign change between the bracketing decades (checked at the
    ends, which is what bisection needs)."""
    grid = [start] + [w for w in WEIGHT_DECADES if w > start]
    values = []
    for w in grid:
        values.append(advantage(w))
        if values[-1] > 0:
            break
    out: dict[str, Any] = {"scanned_lam2": grid[:len(values)], "advantage": values,
                           "lam1": 1.0}
    if values[-1] <= 0:
        return {**out, "lam2_threshold": None}
    if len(values) == 1:                            # already interior at the configured weight
        return {**out, "lam2_threshold": start}
    lo, hi = grid[len(values) - 2], grid[len(values) - 1]
    while hi / lo > 1.0 + WEIGHT_RTOL:               # bisection in log lam2
        mid = float(np.sqrt(lo * hi))
        lo, hi = (lo, mid) if advantage(mid) > 0 else (mid, hi)
    return {**out, "lam2_threshold": hi}


def fig9a(params: Mapping[str, Any] | None = None) -> pd.DataFrame:
    """Fig. 9: G vs tau for CDPB-mixed(beta) at its per-tau argmin rho (the derived mixed
    formula at every beta), with CDPB-i ((60)) and CDPB-n ((56)) as reference curves.

    attrs["interior_weight"]: the paper hopes the mixture "has the potential to enhance the
    system" but leaves the optimal portion open (§V); with lam1 = 1, the smallest privacy weight
    lam2 at which an interior beta of `mixed_betas` beats both ends at some tau (same formulas,
    same taus), i.e. what it would take for that hope to come true."""
    p = resolve(params)
    s = _setting(p)
    taus = np.arange(1, p["fig9_rounds"] + 1)
    rows: list[tuple] = []
    curves = _fig9a_curves(p, taus)
    for beta, g in zip(p["mixed_betas"], curves):
        rows += _rows(taus, f"beta={beta:g}", "G", g)
    for strategy in ("cdpb_i", "cdpb_n"):
        rows += _rows(taus, strategy, "G", _argmin_curve(Objective(s, strategy), taus)[1])
    frame = _frame(rows, "fig9a", "tau", p)
    ratio = p["lam2"] / p["lam1"]

    def advantage(lam2: float) -> float:
        if lam2 == ratio:
            return analytic_claims.interior_advantage(curves)
        return analytic_claims.interior_advantage(_fig9a_curves(p, taus, lam1=1.0, lam2=lam2))

    frame.attrs["interior_weight"] = _first_weight(advantage, ratio)
    return frame


def _fig9b_optima(p: Mapping[str, Any], **changes: Any) -> np.ndarray:
    """Constrained G(rho_opt, tau_opt) of CDPB-mixed for every beta of `fig9b_betas` (NaN where
    infeasible), with the figure's numeric Stage I."""
    designs = [_design(p, "cdpb_mixed", beta, mode="constrained", rho_gamma_method="numeric",
                       **changes) for beta in p["fig9b_betas"]]
    return np.array([d.G_opt if d.feasible else np.nan for d in designs], dtype=np.float64)


def fig9b(params: Mapping[str, Any] | None = None) -> pd.DataFrame:
    """Our second Fig.-9 panel: G(rho_opt, tau_opt) vs beta from Algorithm 3 with the
    numeric Stage I, constrained (default) and literal.

    attrs["interior_weight"]: the smallest privacy weight lam2 >= the configured one (lam1 = 1)
    at which Algorithm 3's constrained optimum has an interior beta below both ends (None: no
    weight of WEIGHT_DECADES gives one)."""
    p = resolve(params)
    rows: list[tuple] = []
    constrained = []
    for beta in p["fig9b_betas"]:
        for mode, suffix in (("constrained", ""), ("literal", "_literal")):
            d = _design(p, "cdpb_mixed", beta, mode=mode, rho_gamma_method="numeric")
            rows += [(float(beta), "cdpb_mixed", "G_opt" + suffix,
                      d.G_opt if d.feasible else np.nan),
                     (float(beta), "cdpb_mixed", "tau_opt" + suffix, d.tau_opt or np.nan)]
            if mode == "constrained":
                constrained.append(d.G_opt if d.feasible else np.nan)
    frame = _frame(rows, "fig9b", "beta", p)
    ratio = p["lam2"] / p["lam1"]

    def advantage(lam2: float) -> float:
        g = np.asarray(constrained, dtype=np.float64) if lam2 == ratio else \
            _fig9b_optima(p, lam1=1.0, lam2=lam2)
        return analytic_claims.interior_dip(g)

    frame.attrs["interior_weight"] = _first_weight(advantage, ratio)
    return frame


#: figure id -> (frame function, claims function).
FIGURES: dict[str, tuple[Callable[..., pd.DataFrame], Callable[[pd.DataFrame], list]]] = {
    "fig2a": (fig2a, analytic_claims.claims_fig2a),
    "fig2b": (fig2b, analytic_claims.claims_fig2b),
    "fig3": (fig3, analytic_claims.claims_fig3),
    "fig5": (fig5, analytic_claims.claims_fig5),
    "fig6a": (fig6a, analytic_claims.claims_fig6a),
    "fig6b": (fig6b, analytic_claims.claims_fig6b),
    "fig7a": (fig7a, analytic_claims.claims_fig7a),
    "fig7b": (fig7b, analytic_claims.claims_fig7b),
    "fig9a": (fig9a, analytic_claims.claims_fig9a),
    "fig9b": (fig9b, analytic_claims.claims_fig9b),
}


def all_figures(params: Mapping[str, Any] | None = None) -> dict[str, pd.DataFrame]:
    """Every analytic figure's frame (about 10 s on one core with the defaults)."""
    return {name: make(params) for name, (make, _) in FIGURES.items()}
