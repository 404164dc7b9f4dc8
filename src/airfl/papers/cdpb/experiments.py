"""CDPB's figures: the analytic ones (Figs. 2(a,b), 3, 5, 6(a,b), 7(a,b), 9 and our second
Fig. 9 panel: the formulas of analytic_figures.py, the checks of claims.py, the paper's
axes; params.yaml `cdpb.analytic`) and the training figures Fig. 4 (`cdpb.fig4`) and Figs. 8(a,b)
(`cdpb.fig8`), with their claims in the paper's words; the checks of those claims on the stored
figure data are in :mod:`airfl.papers.cdpb.claims.training`."""

from __future__ import annotations

from typing import Any

import pandas as pd

from airfl.core.experiments import AnalyticClaim, AnalyticFigure, Claim, Experiment, FigureSpec, Panel
from airfl.papers.cdpb import analytic_figures, schemes  # noqa: F401  (registers the scheme)
from airfl.papers.cdpb.claims import training as tr
from airfl.papers.cdpb.run_blocks import (PER_COORDINATE, compose_fig4, compose_fig8,
                                          median_update_norm)
from airfl.figures.styles import register_styles

LEGENDS = {
    "cdpb_i": "CDPB-i", "cdpb_n": "CDPB-n", "cdpb_mixed": "CDPB-mixed",
    "gamma_bar": "γ̄-based", "is": "IS-based", "hmin": "h_min-based", "noise_free": "Noise-Free",
    "disparity": "CDPB-i vs CDPB-n",
}

register_styles({
    "CDPB-i": ("#d62728", "*"), "CDPB-n": ("#1f77b4", "o"), "CDPB-mixed": ("#9467bd", "P"),
    "γ̄-based": ("#2ca02c", "^"), "IS-based": ("#ff7f0e", "s"), "h_min-based": ("#8c564b", "D"),
    "Noise-Free": ("#7f7f7f", "X"), "CDPB-i vs CDPB-n": ("#000000", "v"),
}, proposed=("CDPB-i", "CDPB-n", "CDPB-mixed"))


def label(scheme: str) -> str:
    """Legend name; mixed curves are 'beta=<b>' in the frames."""
    if scheme.startswith("beta="):
        return f"CDPB-mixed, β = {scheme[5:]}"
    return LEGENDS.get(scheme, scheme)


def _figure(name: str, title: str, description: str, xlabel: str, panels: tuple[Panel, ...],
            logx: bool = False) -> AnalyticFigure:
    make, claims = analytic_figures.FIGURES[name]

    def compute(block: dict[str, Any]) -> pd.DataFrame:
        return make(block)

    def check(frame: pd.DataFrame) -> list[AnalyticClaim]:
        return [tuple(c) for c in claims(frame)]

    return AnalyticFigure(paper="cdpb", figure=name, config_key="cdpb.analytic", title=title,
                          description=description, xlabel=xlabel, panels=panels,
                          compute=compute, check=check, label=label, logx=logx)


GAMMA = Panel("gamma", "Convergence error bound γ")
EPS = Panel("eps", "RDP ε (α = 2)")

ANALYTIC = (
    _figure("fig2a", "Fig. 2(a): γ and ε vs ρ (τ = 72)",
            "Theorem 2's convergence bound (approximate form) and the composed Theorem 1 RDP "
            "against the received power-balancing level rho at tau = 72.",
            "ρ (received amplitude², W = 1)", (GAMMA, EPS)),
    _figure("fig2b", "Fig. 2(b): γ and ε vs τ at each variant's ρ_opt",
            "The bound and the RDP against the number of global rounds at each variant's rho_opt.",
            "Global iterations τ", (Panel("gamma", "Convergence error bound γ", logy=True), EPS)),
    _figure("fig3", "Fig. 3: G(ρ, τ) vs τ per power-balancing strategy",
            "The utility G = lambda1 gamma + lambda2 eps at each strategy's rho, literal per-tau "
            "minimisation for CDPB (curves extend outside the feasible set).",
            "Global iterations τ", (Panel("G", "Utility G", logy=True),)),
    _figure("fig5", "Fig. 5: achievable RDP vs global iteration",
            "Cumulative RDP (alpha = 2) of every strategy at its rho.",
            "Global iteration t", (Panel("eps", "Cumulative RDP ε(t)", logy=True),)),
    _figure("fig6a", "Fig. 6(a): feasible-set sizes vs γ̄",
            "Signed sizes |T| = tau_eps,max - tau_gamma,min + 1 of CDPB-i and CDPB-n and their "
            "difference against the convergence target gamma-bar (K = 100).",
            "Convergence target γ̄", (Panel("delta_T", "Δ|T| = |T_i| − |T_n|"),
                                      Panel("T_size", "|T| (rounds)")), logx=True),
    _figure("fig6b", "Fig. 6(b): feasible-set sizes vs K",
            "The same against the number of clients K (gamma-bar = 0.01).",
            "Number of clients K", (Panel("delta_T", "Δ|T| = |T_i| − |T_n|"),
                                    Panel("T_size", "|T| (rounds)"))),
    _figure("fig7a", "Fig. 7(a): G(ρ_opt, τ_opt) disparity vs K",
            "Delta G = G_n - G_i at each variant's optimum (Algorithm 3, constrained) against K.",
            "Number of clients K", (Panel("delta_G", "ΔG = G_n − G_i"),
                                    Panel("G_opt", "G(ρ_opt, τ_opt)"))),
    _figure("fig7b", "Fig. 7(b): G(ρ_opt, τ_opt) disparity vs P",
            "The same against the power budget P (K = 100).",
            "Power budget P", (Panel("delta_G", "ΔG = G_n − G_i"),
                               Panel("G_opt", "G(ρ_opt, τ_opt)")), logx=True),
    _figure("fig9a", "Fig. 9: G vs τ for CDPB-mixed(β)",
            "The utility at the per-tau argmin rho for the portion beta of unreliable clients "
            "that send noise (beta = 0: CDPB-i, 1: CDPB-n).",
            "Global iterations τ", (Panel("G", "Utility G", logy=True),)),
    _figure("fig9b", "Fig. 9 (second panel): G(ρ_opt, τ_opt) vs β",
            "Algorithm 3's optimum of CDPB-mixed against beta, constrained and literal Stage II.",
            "Portion β of unreliable clients sending noise",
            (Panel("G_opt", "G(ρ_opt, τ_opt), constrained"),
             Panel("G_opt_literal", "G(ρ_opt, τ_opt), literal"))),
)


def curve_label(curve: str, params: dict[str, Any]) -> str:
    return label(params.get("strategy", curve))


OTHERS = ("cdpb_i", "cdpb_n", "gamma_bar", "hmin", "is")


def _fig4_claims(panel: str, prefix: str, reading: str) -> tuple[Claim, ...]:
    """The paper's Fig. 4 checks on one panel (one reading of sigma_q^2)."""
    tag = f" [{reading}]"
    return (
        Claim(f"{prefix}_noise_free_best", "Noise-Free has the highest accuracy." + tag,
              tr.beats([("noise_free", s) for s in OTHERS]), panel=panel),
        Claim(f"{prefix}_cdpb_like_gamma_bar", "CDPB's accuracy is comparable to gamma-bar based "
              "(|CDPB-i - gamma-bar| <= 1 pp)." + tag,
              tr.comparable("cdpb_i", "gamma_bar"), panel=panel),
        Claim(f"{prefix}_is_slightly_below", "IS is slightly below CDPB (CDPB-i above IS, by at "
              "most 3 pp)." + tag, tr.beats([("cdpb_i", "is")], tr.is_within_3pp), panel=panel),
        Claim(f"{prefix}_hmin_lowest", "h_min has the lowest accuracy (below every other, the "
              "next lowest >= 2 pp above)." + tag,
              tr.beats([(s, "hmin") for s in ("cdpb_i", "cdpb_n", "gamma_bar", "is", "noise_free")],
                     tr.hmin_2pp_below), panel=panel),
        Claim(f"{prefix}_i_beats_n", "CDPB-i beats CDPB-n in accuracy." + tag,
              tr.beats([("cdpb_i", "cdpb_n")]), panel=panel),
    )


def _is_per_coordinate(curve: str, params: dict[str, Any]) -> bool:
    return curve.endswith(PER_COORDINATE)


FIG4 = Experiment(
    paper="cdpb", figure="fig4", config_key="cdpb.fig4",
    title="Fig. 4: test accuracy vs global iteration",
    description=("Every power-balancing strategy trains the same IID federation over the same "
                 "i.i.d. Rayleigh channels (E[h] = h_bar), each at its designed rho. "
                 "Panel fig4 simulates sigma_q^2 under cdpb.fig4.noise_variance (default "
                 "'total': the total power over the d coordinates, as (11), (13) and (19) define "
                 "it); panel fig4_per_coordinate, with the same channel, coin and data draws, "
                 "reads it as Theorem 1 does (the Gaussian mechanism's variance, per "
                 "coordinate), which exceeds the power budget (11) about d-fold (run tables: "
                 "tx_power_ratio = max_k E||x_k||^2 / P). Each run's privacy record is Theorem 1 "
                 "at the per-coordinate variance it simulates. "
                 "The paper uses CIFAR-100 and ResNet-18 (GroupNorm); without CIFAR offline, the "
                 "quick profile substitutes the dataset and model named below."),
    figure_spec=FigureSpec(x="round", y="test_accuracy", xlabel="Global iteration t",
                           ylabel="Test accuracy",
                           curves=lambda c, p: not _is_per_coordinate(c, p)),
    extra_figures=(FigureSpec(x="round", y="test_accuracy", xlabel="Global iteration t",
                              ylabel="Test accuracy", name="fig4_per_coordinate",
                              curves=_is_per_coordinate,
                              title="Fig. 4, σ_q² per coordinate (Theorem 1's reading; "
                                    "exceeds the power budget (11) d-fold)"),),
    label=curve_label, compose=compose_fig4, calibration=median_update_norm,
    claims=_fig4_claims("fig4", "fig4", "sigma_q^2 as in cdpb.fig4.noise_variance")
    + _fig4_claims("fig4_per_coordinate", "fig4pc", "sigma_q^2 per coordinate"))


def _fig8(panel: str, title: str, every: str, claims: tuple[Claim, ...]) -> Experiment:
    return Experiment(
        paper="cdpb", figure=panel, config_key="cdpb.fig8", title=title,
        description=("CDPB-i and CDPB-n while the mean channel gain h_bar ~ U[0.5, 1.5] is "
                     f"redrawn every {every} and the server re-runs Algorithm 3 ("
                     "reconstruction): a round costs 1 time unit, a recomputation kappa |T_s| "
                     "with kappa = 1/|T_i(h_bar = 1)|. The paper uses CIFAR-10 (K = 10); without "
                     "CIFAR offline, the quick profile substitutes the dataset and model named "
                     "below."),
        figure_spec=FigureSpec(x="time_s", y="test_accuracy", time_grid_s=1.0,
                               xlabel="Normalised wall-clock time (round = 1 unit)",
                               ylabel="Test accuracy"),
        extra_figures=(FigureSpec(x="round", y="test_accuracy", xlabel="Global iteration t",
                                  ylabel="Test accuracy", name=f"{panel}_rounds",
                                  title=title + " (vs rounds)"),),
        label=curve_label, compose=compose_fig8(panel), calibration=median_update_norm,
        claims=claims)


FIG8A = _fig8("fig8a", "Fig. 8(a): channel distribution changes every round", "round",
              (Claim("fig8a_n_faster", "With a distribution change every round, CDPB-n "
                     "converges faster in wall-clock time (its recomputation is cheaper).",
                     tr.n_ahead_early),))
FIG8B = _fig8("fig8b", "Fig. 8(b): channel distribution changes every 10 rounds", "10 rounds",
              (Claim("fig8b_i_preferable", "With a change every 10 rounds, CDPB-i is "
                     "preferable (higher final accuracy).", tr.beats([("cdpb_i", "cdpb_n")])),))

EXPERIMENTS = (FIG4, FIG8A, FIG8B)
