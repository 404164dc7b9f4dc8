"""DP as a perk's figures: the analytic ones (Fig. 2, the perk thresholds, the q_t / pi_t
allocations, the Fig. 6 forecast and the privacy table; params.yaml `dp_perk.analytic`, full scale
in both profiles) and the training figures 3(a,b), 4(a,b), 5, 6 (`dp_perk.training`), with the
paper's claims (and our readings of them, said in each claim) checked on the stored figure data.

The claim checks of the training figures are in :mod:`airfl.papers.dp_perk.claims.training`,
those of the analytic ones in :mod:`airfl.papers.dp_perk.claims.analytic`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from airfl.core.claims import ACCURACY_MARGIN, final_by_trial, paired_trend
from airfl.core.experiments import AnalyticFigure, Claim, Experiment, FigureSpec, Panel
from airfl.papers.dp_perk.claims import analytic as ac
from airfl.papers.dp_perk import analytic_figures as af
from airfl.papers.dp_perk import schemes  # noqa: F401  (registers the scheme kind)
from airfl.papers.dp_perk.run_blocks import compose
from airfl.papers.dp_perk.claims.training import (
    ACCURACY,
    FIG5_AUTHORS,
    _authors,
    _below_iid,
    _dp_by_eps,
    _dp_curves,
    _ends,
    _fig3_reference,
    _fig5_reference,
    _fig6_claims,
    _fmt,
    _gap_shrinks,
    _mimo_like_clip,
    _ordering,
    _tradeoff,
)
from airfl.figures.styles import register_styles

NAMES = {"vanilla": "Vanilla FL", "fl_clip": "FL w/ clipping", "airfl_mimo": "AirFL-MIMO",
         "airfl_dp": "AirFL-DP"}
register_styles({"Vanilla FL": ("#000000", "o"), "FL w/ clipping": ("#7f7f7f", "s"),
                 "AirFL-MIMO": ("#1f77b4", "^"), "AirFL-DP": ("#d62728", "*"),
                 "AirFL-MIMO, optimised phases": ("#17becf", "v"),
                 "AirFL-DP, optimised phases": ("#ff7f0e", "P"),
                 "Ours": ("#d62728", "*")},    # Fig. 2: the paper's converging bound
                proposed=("AirFL-DP", "AirFL-DP, optimised phases", "Ours"))


# -- labels and curve selections --------------------------------------------------------------

def _method_label(curve: str, params: dict[str, Any]) -> str:
    name = NAMES[params["method"]]
    return name if params.get("beamformer", "zf") == "zf" else f"{name}, optimised phases"


def curve_label(curve: str, params: dict[str, Any]) -> str:
    """Legend of a curve vs rounds: AirFL-DP curves carry their budget."""
    if params["method"] == "airfl_dp" and params.get("in_fig3"):
        return f"AirFL-DP, ε̃ = {params['eps_tilde']:g}"
    return _method_label(curve, params)


def _panel(tag: str):
    """The curves a panel draws (tags set by training._curves)."""
    return lambda curve, params: bool(params.get(tag, False))


def _fig6_curves(beamformer: str):
    def pick(curve: str, params: dict[str, Any]) -> bool:
        if params["method"] in ("vanilla", "fl_clip"):         # horizontal references
            return beamformer == "zf"
        return params["in_fig6"] and params["beamformer"] == beamformer
    return pick


# which panels draw a curve, and its Fig. 6 x value: set by training._curves, read by no stage
# before the figure (a new Fig. 3 budget re-tags curves without rerunning them)
PANEL_KEYS = ("in_fig3", "in_fig5", "in_fig6", "snr_wc_db")


# -- experiments ------------------------------------------------------------------------------

FIG3_AUTHORS = {"vanilla": 0.895, "fl_clip": 0.891, "airfl_mimo": 0.891, "dp 0.1": 0.855,
                "dp 0.13": 0.866}
"""The authors' Fig. 3 final accuracies (their results_fig3 summaries, 10 trials)."""

ROUNDS = dict(x="round", xlabel="Communication round t")
ACC = dict(y=ACCURACY, ylabel="Test accuracy")
LOSS = dict(y="train_loss", ylabel="Training loss (cross-entropy)")
# the training loss the claims read besides what the panel draws: Fig. 3/4(a)'s trade-off
# (accuracy and training loss, `_tradeoff`) and Fig. 6's identities (`claims.training.METRICS`)
CLAIMS_READ_LOSS = ("train_loss",)


def _fig6_spec(name: str, beamformer: str, title: str, rounds_back: int = 0,
               columns: tuple[str, ...] = ()) -> FigureSpec:
    return FigureSpec(x="param_snr_wc_db", **ACC, final=True, name=name, title=title,
                      final_rounds_back=rounds_back, columns=columns,
                      xlabel="Worst-case SNR P Λ_min / σ² (dB)", curves=_fig6_curves(beamformer),
                      label=_method_label,
                      markers=(("snr_threshold_db", "perk threshold P_thr"),
                               ("snr_full_db", "full binding P_full")))


IID = Experiment(
    paper="dp_perk", figure="fig3a", config_key="dp_perk.training",
    title="Fig. 3(a): test accuracy vs round, i.i.d.",
    description=("Vanilla FL, FL with clipping, AirFL-MIMO (receive beamforming without a DP "
                 "constraint) and AirFL-DP at several normalised budgets ε̃ = ε/√d over a "
                 "Rayleigh SIMO uplink to an m-antenna base station (P = 2 mW, δ = 1e-5); "
                 "the only noise is the receiver's (DP as a perk)."),
    figure_spec=FigureSpec(**ROUNDS, **ACC, curves=_panel("in_fig3"), columns=CLAIMS_READ_LOSS),
    extra_figures=(
        FigureSpec(**ROUNDS, **LOSS, name="fig3b", curves=_panel("in_fig3"),
                   title="Fig. 3(b): training loss vs round, i.i.d."),
        FigureSpec(x="param_eps_tilde", **ACC, final=True, name="fig5", curves=_panel("in_fig5"),
                   label=_method_label, xlabel="Privacy budget ε̃ = ε/√d",
                   title="Fig. 5: final test accuracy vs privacy budget (benchmarks dashed)"),
        _fig6_spec("fig6", "zf", "Fig. 6: final test accuracy vs worst-case SNR (ZF, u = 1)",
                   columns=CLAIMS_READ_LOSS),
        _fig6_spec("fig6_zf_opt", "zf_opt",
                   "Fig. 6 with a phase-optimising beamformer", columns=CLAIMS_READ_LOSS),
        # theta^(T-1): the last model the authors' code evaluates, for their reference numbers
        FigureSpec(x="param_eps_tilde", **ACC, final=True, final_rounds_back=1,
                   name="fig5_theta_prev", curves=_panel("in_fig5"), label=_method_label,
                   xlabel="Privacy budget ε̃ = ε/√d",
                   title="Fig. 5 at θ^(T-1), the authors' last evaluated model"),
        _fig6_spec("fig6_theta_prev", "zf", "Fig. 6 at θ^(T-1), the authors' last evaluated "
                   "model (ZF, u = 1)", rounds_back=1),
    ),
    label=curve_label, compose=compose("iid"),
    panel_keys=PANEL_KEYS,
    claims=(
        Claim("fig3_tradeoff", "Stricter privacy (smaller ε̃) gives lower test accuracy and "
              "higher training loss (final and last-10-round means, monotone up to trial noise).",
              _tradeoff),
        Claim("fig3_gap_shrinks", "Relaxing ε̃ above the default shrinks the gap between "
              "AirFL-DP and AirFL-MIMO.", _gap_shrinks),
        Claim("fig3_mimo_like_clip", "AirFL-MIMO is highly comparable to noiseless FL w/ "
              "clipping (within 1 pp).", _mimo_like_clip),
        Claim("fig3_ordering", "Vanilla FL >= FL w/ clipping >= AirFL-MIMO >= AirFL-DP.",
              _ordering),
        Claim("fig3_grid_ends", "The largest ε̃ is within 3 pp of AirFL-MIMO, the smallest at "
              "least 5 pp below.", _ends(5.0)),
        Claim("fig3_authors", "Authors' final accuracies (Vanilla 0.895, clip 0.891, MIMO "
              "0.891, DP 0.855 at ε̃ = 0.1, 0.866 at 0.13; +-0.02, paper model only) at "
              "theta^T, our final model.", _authors(FIG3_AUTHORS, _fig3_reference)),
        Claim("fig3_authors_theta_prev", "The same accuracies at theta^(T-1), the last model "
              "the authors' code evaluates (it evaluates before each round's update).",
              _authors(FIG3_AUTHORS, _fig3_reference, rounds_back=1, model="theta^(T-1)")),
        Claim("fig5_monotone", "AirFL-DP accuracy increases with ε̃ (monotone up to trial "
              "noise).", lambda f: paired_trend(final_by_trial(f, ACCURACY), _dp_curves(f),
                                                 ACCURACY_MARGIN, scale=100, unit=" pp",
                                                 note=f"final acc (%) {_fmt(_dp_by_eps(f))}"),
              "fig5"),
        Claim("fig5_ends", "AirFL-DP approaches the benchmarks at large ε̃ (within 3 pp of "
              "AirFL-MIMO) and drops at the smallest (>= 10 pp below).",
              _ends(10.0), "fig5"),
        Claim("fig5_authors", "Authors' Fig. 5 accuracies per ε̃ (+-0.02, paper model only) "
              "at theta^T, our final model.",
              _authors({f"{e:g}": v for e, v in FIG5_AUTHORS.items()}, _fig5_reference),
              "fig5"),
        Claim("fig5_authors_theta_prev", "The same at theta^(T-1), the last model the authors' "
              "code evaluates (before each round's update).",
              _authors({f"{e:g}": v for e, v in FIG5_AUTHORS.items()}, _fig5_reference,
                       model="theta^(T-1)"), "fig5_theta_prev"),
        *_fig6_claims("fig6", authors=True),
        *_fig6_claims("fig6_zf_opt", authors=False),
    ))

NONIID = Experiment(
    paper="dp_perk", figure="fig4a", config_key="dp_perk.training",
    title="Fig. 4(a): test accuracy vs round, non-i.i.d. (2 classes per device)",
    description=("The methods of Fig. 3 on a label-skewed split: every device holds two equal "
                 "shards of two different classes."),
    figure_spec=FigureSpec(**ROUNDS, **ACC, curves=_panel("in_fig3"), columns=CLAIMS_READ_LOSS),
    extra_figures=(FigureSpec(**ROUNDS, **LOSS, name="fig4b", curves=_panel("in_fig3"),
                              title="Fig. 4(b): training loss vs round, non-i.i.d."),),
    label=curve_label, compose=compose("noniid"),
    panel_keys=PANEL_KEYS,
    claims=(
        Claim("fig4_tradeoff", "The privacy-convergence trade-off of Fig. 3 holds under "
              "non-i.i.d. data.", _tradeoff),
        Claim("fig4_ordering", "Vanilla FL >= FL w/ clipping >= AirFL-MIMO >= AirFL-DP under "
              "non-i.i.d. data.", _ordering),
        Claim("fig4_below_iid", "Accuracy under non-i.i.d. data is lower than i.i.d. (Vanilla "
              "FL and AirFL-DP at the default ε̃).", _below_iid, ("fig3a", "fig4a")),
    ))

EXPERIMENTS = (IID, NONIID)


# -- analytic figures -----------------------------------------------------------------------------

def _params(block: dict[str, Any]) -> dict[str, Any]:
    return {**af.DEFAULTS, **block}


def _tidy(wide: pd.DataFrame, x: str, scheme: pd.Series, metrics: tuple[str, ...],
          params: dict[str, Any], name: str) -> pd.DataFrame:
    """Tidy x/scheme/metric/value rows (what panel_plot draws), each keeping its wide row's
    columns so the claims can be checked on the stored CSV."""
    parts = [wide.assign(x=wide[x], scheme=scheme, metric=m, value=wide[m]) for m in metrics]
    frame = pd.concat(parts, ignore_index=True)
    frame.attrs.update(figure=name, x=x, params=params)
    return frame


def _wide(frame: pd.DataFrame) -> pd.DataFrame:
    return frame[frame["metric"] == frame["metric"].iloc[0]].reset_index(drop=True)


def _fig2(block: dict[str, Any]) -> pd.DataFrame:
    p = _params(block)
    wide = af.fig2_frame(p)
    scheme = np.where(wide["curve"] == "liu_linear", "Liu et al. [18] (linear)",
                      "Ours, D = " + wide["D"].map(lambda d: f"{d:.3g}"))
    return _tidy(wide, "T", pd.Series(scheme), ("rdp", "eps_paper"), p, "fig2")


def _fig2_check(frame: pd.DataFrame) -> list:
    return ac._fig2_claims(_wide(frame), frame.attrs["params"])


VARIANTS = {"default": {}, "edge_all": {"distance_mode": "edge", "zf_columns": "all"},
            "edge_active": {"distance_mode": "edge"}, "authors_setup": dict(ac.AUTHORS_SETUP)}
"""Placements of the perk-threshold figure: ours (per-device distances, ZF on the active
devices), all devices at r_max with ZF over all columns, the same on the active devices (common
Lambda, for the combiner gain), and the authors' code's Fig. 6 setup (one distance per trial
shared by all devices, ZF over all n columns)."""
ZF_ONLY = ("edge_all", "authors_setup")


def _thresholds(block: dict[str, Any]) -> pd.DataFrame:
    """Perk threshold and full-binding SNR vs eps_tilde per beamformer; the authors' labelling
    (all devices at r_max, ZF on all n columns) and a common-Lambda variant for the combiner
    gain."""
    p = _params(block)
    parts = []
    for variant, overrides in VARIANTS.items():
        q = p if variant not in ZF_ONLY else {**p, "beamformers": ["zf"]}
        parts.append(af.threshold_frame(q, **overrides).assign(variant=variant))
    wide = pd.concat(parts, ignore_index=True)
    scheme = wide["beamformer"].map({"zf": "ZF (u = 1)", "zf_opt": "ZF, optimised phases"}) \
        + np.where(wide["variant"] == "default", "", ", " + wide["variant"])
    return _tidy(wide, "eps_tilde", scheme, ("snr_threshold_db", "snr_full_db"), p,
                 "perk_threshold")


def _thresholds_check(frame: pd.DataFrame) -> list:
    wide, params = _wide(frame), frame.attrs["params"]
    part = {v: wide[wide["variant"] == v] for v in VARIANTS}
    return [*ac._threshold_claims(part["default"], part["edge_all"], params),
            ac._gain_claim(part["edge_active"], params),
            *ac._authors_setup_claims(part["authors_setup"], part["default"], params),
            *ac._quick_claims(params)]


def _allocation(block: dict[str, Any]) -> pd.DataFrame:
    p = _params(block)
    wide = af.allocation_frame(p).astype({"raised": bool})
    scheme = "q_t*, ε̃ = " + wide["eps_tilde"].map("{:g}".format) + ", P = " + \
        wide["power_w"].map("{:g} W".format)
    frame = _tidy(wide, "round", scheme, ("q",), p, "allocation")
    pis = wide.drop_duplicates(["power_w", "round"])
    frame = pd.concat([frame, pis.assign(x=pis["round"], scheme="π_t, P = " + pis["power_w"]
                                         .map("{:g} W".format), metric="q", value=pis["pi"])],
                      ignore_index=True)
    frame.attrs.update(figure="allocation", x="round", params=p)
    return frame


def _forecast(block: dict[str, Any]) -> pd.DataFrame:
    p = _params(block)
    wide = af.fig6_frame(p)
    wide = wide.assign(ratio=wide["sum_q2_dp"] / wide["sum_pi2_mimo"])
    return _tidy(wide, "snr_wc_db", pd.Series(["AirFL-DP / AirFL-MIMO"] * len(wide)),
                 ("ratio",), p, "fig6_forecast")


def _privacy(block: dict[str, Any]) -> pd.DataFrame:
    p = _params(block)
    wide = af.privacy_table(p)
    scheme = "P = " + wide["power_w"].map("{:g} W".format)
    return _tidy(wide, "eps_tilde", scheme, ("eps_tilde_dp_paper", "eps_tilde_dp_optimal"), p,
                 "privacy")


def _analytic(name: str, title: str, description: str, xlabel: str, panels: tuple[Panel, ...],
              compute, check=None, logx: bool = False) -> AnalyticFigure:
    return AnalyticFigure(paper="dp_perk", figure=name, config_key="dp_perk.analytic",
                          title=title, description=description, xlabel=xlabel, panels=panels,
                          compute=compute, check=check, logx=logx)


ANALYTIC = (
    _analytic("fig2", "Fig. 2: RDP loss vs number of rounds", "The converging bound (21)-(22) "
              "with phi_t = phi saturates at T* = B; Liu et al.'s linear bound does not.",
              "Total rounds T", (Panel("rdp", "RDP ε'(α)"), Panel("eps_paper", "ε (δ = 1e-5)")),
              _fig2, _fig2_check),
    _analytic("perk_threshold", "Perk threshold vs privacy budget",
              "Worst-case SNR below which DP is free (P_thr, (51)) and above which AirFL-DP is "
              "fully binding (P_full: every round raised, (44)), per beamformer, mean over "
              "trials; variants: all "
              "devices at r_max (edge), and the authors' code's Fig. 6 setup (authors_setup: one "
              "distance per trial shared by all devices, ZF over all 50 columns).",
              "Privacy budget ε̃ = ε/√d",
              (Panel("snr_threshold_db", "P_thr as SNR_wc (dB)"),
               Panel("snr_full_db", "P_full as SNR_wc (dB)")), _thresholds, _thresholds_check,
              logx=True),
    _analytic("allocation", "Water-filling: q_t* and π_t over rounds (trial 0, ZF)",
              "AirFL-DP's combiner norms q_t* = max(π_t, λ) against the (P1) norms π_t.",
              "Round t", (Panel("q", "Combiner norm ‖w‖ (normalised units)", logy=True),),
              _allocation),
    _analytic("fig6_forecast", "Fig. 6 forecast: AirFL-DP's noise budget vs AirFL-MIMO's",
              "sum_t q_t^2 / sum_t pi_t^2 per trial and P (1 = identical runs).",
              "Worst-case SNR (dB)", (Panel("ratio", "Σ q_t² / Σ π_t²", logy=True),),
              _forecast, lambda f: ac._fig6_claims(_wide(f), f.attrs["params"])),
    _analytic("privacy", "Achieved privacy of AirFL-DP (paper vs optimal conversion)",
              "eps~ achieved by the allocation for each target.",
              "Target ε̃", (Panel("eps_tilde_dp_paper", "ε̃, paper's conversion (23)"),
                           Panel("eps_tilde_dp_optimal", "ε̃, optimal conversion")),
              _privacy, lambda f: ac._privacy_claims(_wide(f))),
)
