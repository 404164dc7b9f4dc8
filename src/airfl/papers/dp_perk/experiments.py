"""DP as a perk's figures: the analytic ones (Fig. 2, the perk thresholds, the q_t / pi_t
allocations, the Fig. 6 forecast and the privacy table; params.yaml `dp_perk.analytic`, full scale
in both profiles) and the training figures 3(a,b), 4(a,b), 5, 6 (`dp_perk.training`), with the
claims of spec §8 (its Errata applied) checked on the stored figure data.

Claims whose reference numbers are the authors' paper-scale results (spec §8 "authors' code
reference", +-0.02 in the epochs mode) apply only to runs of the paper's model; elsewhere they
report n/a rather than a verdict.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np
import pandas as pd

from airfl.claims import (all_of, chain, final_by_trial, final_values, paired_order,
                          paired_trend)
from airfl.experiments import (AnalyticFigure, Claim, ClaimResult, Experiment, FigureSpec, Panel)
from airfl.papers.dp_perk import analytic_figures as af
from airfl.papers.dp_perk import schemes  # noqa: F401  (registers the scheme kind)
from airfl.papers.dp_perk.training import compose
from airfl.styles import register_styles

NAMES = {"vanilla": "Vanilla FL", "fl_clip": "FL w/ clipping", "airfl_mimo": "AirFL-MIMO",
         "airfl_dp": "AirFL-DP"}
register_styles({"Vanilla FL": ("#000000", "o"), "FL w/ clipping": ("#7f7f7f", "s"),
                 "AirFL-MIMO": ("#1f77b4", "^"), "AirFL-DP": ("#d62728", "*"),
                 "AirFL-MIMO, optimised phases": ("#17becf", "v"),
                 "AirFL-DP, optimised phases": ("#ff7f0e", "P")})
PAPER_MODEL = "fedavg_cnn"
ACCURACY = "test_accuracy"


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


# -- claim helpers --------------------------------------------------------------------------------

def _dp_by_eps(frame: pd.DataFrame, metric: str = ACCURACY) -> pd.Series:
    """Final metric of AirFL-DP per eps_tilde (mean over trials), sorted by eps_tilde."""
    finals = final_values(frame, metric)
    eps = frame.dropna(subset=["param_eps_tilde"]).groupby("curve")["param_eps_tilde"].first()
    return pd.Series({float(eps[c]): v for c, v in finals.items() if c in eps}).sort_index()


def _fmt(series: pd.Series, scale: float = 100.0, digits: int = 4) -> str:
    return ", ".join(f"{k:g}: {scale * v:.{digits}g}" for k, v in series.items())


def _is_paper_model(frame: pd.DataFrame) -> bool:
    return "model" in frame and bool((frame["model"] == PAPER_MODEL).all())


def _dp_curves(frame: pd.DataFrame) -> list[str]:
    """AirFL-DP's curves in increasing order of eps_tilde."""
    eps = frame.dropna(subset=["param_eps_tilde"]).groupby("curve")["param_eps_tilde"].first()
    return list(eps.sort_values().index)


def _last_rounds_by_trial(frame: pd.DataFrame, metric: str, rounds: int = 10) -> pd.DataFrame:
    """Per trial and curve, the mean of `metric` over the last `rounds` evaluated rounds."""
    last = frame[frame["round"] > frame["round"].max() - rounds].dropna(subset=[metric])
    return last.pivot_table(index="trial", columns="curve", values=metric, aggfunc="mean")


def _tradeoff(frame: pd.DataFrame) -> ClaimResult:
    """Spec 8, Fig. 3 claim 1: accuracy rises and training loss falls with eps_tilde, on the final
    values and on the last-10-round means, up to trial noise (a paired trend over trials)."""
    dp = _dp_curves(frame)
    checks = [
        paired_trend(final_by_trial(frame, ACCURACY), dp, scale=100, unit=" pp",
                     note="final acc"),
        paired_trend(final_by_trial(frame, "train_loss"), dp, higher_is_better=False,
                     note="final train loss"),
        paired_trend(_last_rounds_by_trial(frame, ACCURACY), dp, scale=100, unit=" pp",
                     note="last-10-round acc"),
        paired_trend(_last_rounds_by_trial(frame, "train_loss"), dp, higher_is_better=False,
                     note="last-10-round train loss")]
    return all_of(checks)


def _gap_shrinks(frame: pd.DataFrame) -> ClaimResult:
    """Relaxing eps_tilde above the middle of the grid shrinks MIMO - DP, i.e. the DP curve above
    beats the middle one (the MIMO term is common to both gaps)."""
    dp = _dp_curves(frame)
    middle, above = dp[len(dp) // 2], dp[len(dp) // 2 + 1]
    acc = final_values(frame, ACCURACY)
    gaps = {c: 100 * (acc["airfl_mimo"] - acc[c]) for c in (middle, above)}
    return paired_order(final_by_trial(frame, ACCURACY), [(above, middle)], scale=100,
                        unit=" pp", note=f"AirFL-MIMO - AirFL-DP: {gaps[middle]:.3g} pp at "
                        f"{middle}, {gaps[above]:.3g} pp at {above}")


def _mimo_like_clip(frame: pd.DataFrame) -> ClaimResult:
    acc = final_values(frame, ACCURACY)
    diff = 100 * abs(acc["airfl_mimo"] - acc["fl_clip"])
    return ClaimResult(diff <= 1.0, f"|AirFL-MIMO - FL w/ clipping| = {diff:.3g} pp "
                       f"({100 * acc['airfl_mimo']:.4g} vs {100 * acc['fl_clip']:.4g} %)")


def _ordering(frame: pd.DataFrame) -> ClaimResult:
    """Spec 8, Fig. 3 claim 4: Vanilla >= clip >= MIMO >= AirFL-DP (its best eps_tilde), each
    link tested across trials."""
    best_dp = max(_dp_curves(frame), key=final_values(frame, ACCURACY).get)
    return paired_order(final_by_trial(frame, ACCURACY),
                        chain(["vanilla", "fl_clip", "airfl_mimo", best_dp]),
                        scale=100, unit=" pp")


def _ends(min_gap: float):
    """Largest eps_tilde within 3 pp of AirFL-MIMO, smallest at least `min_gap` pp below it
    (spec 10.3 check 2 with Errata 2)."""
    def evaluate(frame: pd.DataFrame) -> ClaimResult:
        acc, mimo = _dp_by_eps(frame), final_values(frame, ACCURACY)["airfl_mimo"]
        low, high = 100 * (mimo - acc.iloc[0]), 100 * (mimo - acc.iloc[-1])
        return ClaimResult(high <= 3.0 and low >= min_gap,
                           f"MIMO - DP: {low:.3g} pp at ε̃ = {acc.index[0]:g} (>= {min_gap:g}), "
                           f"{high:.3g} pp at ε̃ = {acc.index[-1]:g} (<= 3)")
    return evaluate


def _authors(reference: dict[str, float], pick: Callable[[pd.DataFrame], dict[str, float]]):
    """The authors' final accuracies (spec §8, +-0.02), for runs of the paper's model only."""
    def evaluate(frame: pd.DataFrame) -> ClaimResult:
        ours = pick(frame)
        pairs = {k: (ours.get(k, math.nan), v) for k, v in reference.items()}
        text = "; ".join(f"{k}: {a:.3f} vs {b:.3f}" for k, (a, b) in pairs.items())
        if not _is_paper_model(frame):
            return ClaimResult(None, f"not the paper's model ({frame['model'].iloc[0]}): {text}")
        return ClaimResult(all(abs(a - b) <= 0.02 for a, b in pairs.values()), text)
    return evaluate


def _fig3_reference(frame: pd.DataFrame) -> dict[str, float]:
    acc = final_values(frame, ACCURACY)
    dp = _dp_by_eps(frame)
    return {"vanilla": acc.get("vanilla", math.nan), "fl_clip": acc.get("fl_clip", math.nan),
            "airfl_mimo": acc.get("airfl_mimo", math.nan),
            **{f"dp {e:g}": float(dp.get(e, math.nan)) for e in (0.1, 0.13)}}


def _fig5_reference(frame: pd.DataFrame) -> dict[str, float]:
    return {f"{e:g}": float(v) for e, v in _dp_by_eps(frame).items()}


FIG5_AUTHORS = {0.01: 0.155, 0.0175: 0.558, 0.025: 0.664, 0.0375: 0.753, 0.05: 0.796,
                0.0625: 0.820, 0.075: 0.836, 0.0875: 0.847, 0.1: 0.855, 0.13: 0.866, 0.16: 0.873,
                0.19: 0.877, 0.22: 0.879, 0.25: 0.881, 0.28: 0.882}


def _below_iid(frame: pd.DataFrame) -> ClaimResult:
    """Spec 10.3 check 4: non-i.i.d. below i.i.d. for Vanilla FL and AirFL-DP at the default
    (middle of the Fig. 3 grid) eps_tilde, tested across trials. The two experiments draw
    their own channels and data, so the pairs by trial index are independent: the paired
    interval is still valid, only less powerful than under common random numbers."""
    parts = {stem: rows for stem, rows in frame.groupby("figure")}
    iid, non = parts["fig3a"], parts["fig4a"]
    dp = _dp_curves(non)
    middle = dp[len(dp) // 2]
    values = pd.concat([final_by_trial(iid, ACCURACY)[["vanilla", middle]].add_prefix("iid "),
                        final_by_trial(non, ACCURACY)[["vanilla", middle]].add_prefix("non-iid ")],
                       axis=1)
    return paired_order(values, [(f"iid {c}", f"non-iid {c}") for c in ("vanilla", middle)],
                        scale=100, unit=" pp")


# -- Fig. 6 ---------------------------------------------------------------------------------------

METRICS = (ACCURACY, "test_loss", "train_loss")


def _fig6_rows(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per (method, trial, P) of the over-the-air runs, with the trial's threshold."""
    rows = frame.dropna(subset=["param_snr_wc_db"]).copy()
    rows["method"] = rows["style_key"]
    thresholds = rows.dropna(subset=["snr_threshold_db"]).groupby("trial")[
        ["snr_threshold_db", "snr_full_db"]].first()
    return rows.drop(columns=["snr_threshold_db", "snr_full_db"]).join(thresholds, on="trial")


def _split(rows: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    dp = rows[rows["method"].str.startswith("AirFL-DP")].set_index(["trial", "param_snr_wc_db"])
    mimo = rows[rows["method"].str.startswith("AirFL-MIMO")].set_index(
        ["trial", "param_snr_wc_db"])
    return dp, mimo


def _identical_below(frame: pd.DataFrame) -> ClaimResult:
    """Errata 1: for P <= P_thr (per trial) AirFL-DP and AirFL-MIMO runs are identical (final
    test accuracy, test loss and training loss equal to the CSV's 10 digits)."""
    dp, mimo = _split(_fig6_rows(frame))
    below = dp[dp.index.get_level_values(1) <= dp["snr_threshold_db"]].index
    same = [bool((dp.loc[i, list(METRICS)] == mimo.loc[i, list(METRICS)]).all()) for i in below]
    return ClaimResult(len(below) > 0 and all(same),
                       f"{sum(same)}/{len(below)} (trial, P) points below P_thr identical "
                       f"(thresholds {dp['snr_threshold_db'].min():.2f}.."
                       f"{dp['snr_threshold_db'].max():.2f} dB)")


def _flat_above_full(frame: pd.DataFrame) -> ClaimResult:
    """Errata 1: for P >= P_full AirFL-DP runs are identical across P within a trial."""
    dp, _ = _split(_fig6_rows(frame))
    above = dp[dp.index.get_level_values(1) >= dp["snr_full_db"]]
    groups = [rows[list(METRICS)].drop_duplicates() for _, rows in above.groupby(level=0)]
    return ClaimResult(len(above) > 0 and all(len(g) == 1 for g in groups),
                       f"{len(above)} (trial, P) points above P_full in {len(groups)} trials; "
                       f"distinct final values per trial: {[len(g) for g in groups]} "
                       f"(P_full at {dp['snr_full_db'].min():.2f}..{dp['snr_full_db'].max():.2f}"
                       " dB)")


def _dp_below_mimo_above(frame: pd.DataFrame) -> ClaimResult:
    """Above the threshold AirFL-DP is (slightly) worse than AirFL-MIMO, at every P where every
    trial is above its P_thr; each P tested across trials, paired by trial."""
    dp, mimo = _split(_fig6_rows(frame))
    above = dp[dp.index.get_level_values(1) > dp["snr_threshold_db"]]
    trials = dp.index.get_level_values(0).nunique()
    snrs = [s for s, rows in above.groupby(level=1) if len(rows) == trials]
    if not snrs:
        return ClaimResult(False, "no SNR above every trial's perk threshold")
    parts = [paired_order(pd.DataFrame({"AirFL-MIMO": mimo.xs(s, level=1)[ACCURACY],
                                        "AirFL-DP": dp.xs(s, level=1)[ACCURACY]}),
                          [("AirFL-MIMO", "AirFL-DP")], scale=100, unit=" pp",
                          note=f"SNR_wc {s:.1f} dB") for s in snrs]
    return all_of(parts)


def _mimo_rises(frame: pd.DataFrame) -> ClaimResult:
    """AirFL-MIMO's final accuracy keeps increasing with SNR, up to trial noise (paired trend
    over the SNR grid)."""
    _, mimo = _split(_fig6_rows(frame))
    by_snr = mimo[ACCURACY].unstack(level=1).sort_index(axis=1)
    by_snr.columns = [f"{s:.1f} dB" for s in by_snr.columns]
    return paired_trend(by_snr, list(by_snr.columns), scale=100, unit=" pp")


FIG6_AUTHORS = {2e-10: (0.836, 0.839), 7e-10: (0.855, 0.879), 2e-9: (0.855, 0.888),
                7e-9: (0.855, 0.889), 2e-7: (0.855, 0.891)}


def _fig6_reference(frame: pd.DataFrame) -> dict[str, float]:
    rows = _fig6_rows(frame)
    out = {}
    for power, (dp_ref, mimo_ref) in FIG6_AUTHORS.items():
        at = rows[np.isclose(rows["param_power_w"], power, rtol=1e-9, atol=0.0)]
        for method, ref in (("AirFL-DP", dp_ref), ("AirFL-MIMO", mimo_ref)):
            out[f"{method} {power:g} W"] = float(at[at["method"] == method][ACCURACY]
                                                 .mean())
    return out


def _fig6_claims(panel: str, authors: bool) -> tuple[Claim, ...]:
    words = "" if panel == "fig6" else " (optimised phases)"
    claims = (
        Claim(f"{panel}_identical_below", "Below the perk threshold AirFL-DP is identical to "
              f"AirFL-MIMO (same q_t, common random numbers){words}.", _identical_below, panel),
        Claim(f"{panel}_flat_above_full", "Above full binding P_full AirFL-DP no longer "
              f"depends on P (Errata 1){words}.", _flat_above_full, panel),
        Claim(f"{panel}_dp_below_mimo", "Above the threshold AirFL-DP is slightly worse than "
              f"AirFL-MIMO{words}.", _dp_below_mimo_above, panel),
        Claim(f"{panel}_mimo_rises", "AirFL-MIMO keeps improving with SNR towards FL w/ "
              f"clipping{words}.", _mimo_rises, panel),
    )
    if authors:
        reference = {f"{m} {p:g} W": r for p, pair in FIG6_AUTHORS.items()
                     for m, r in zip(("AirFL-DP", "AirFL-MIMO"), pair)}
        claims += (Claim(f"{panel}_authors", "Authors' final accuracies (spec 8, +-0.02, paper "
                         "model only).", _authors(reference, _fig6_reference), panel),)
    return claims


# -- experiments ------------------------------------------------------------------------------

ROUNDS = dict(x="round", xlabel="Communication round t")
ACC = dict(y=ACCURACY, ylabel="Test accuracy")
LOSS = dict(y="train_loss", ylabel="Training loss (cross-entropy)")


def _fig6_spec(name: str, beamformer: str, title: str) -> FigureSpec:
    return FigureSpec(x="param_snr_wc_db", **ACC, final=True, name=name, title=title,
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
    figure_spec=FigureSpec(**ROUNDS, **ACC, curves=_panel("in_fig3")),
    extra_figures=(
        FigureSpec(**ROUNDS, **LOSS, name="fig3b", curves=_panel("in_fig3"),
                   title="Fig. 3(b): training loss vs round, i.i.d."),
        FigureSpec(x="param_eps_tilde", **ACC, final=True, name="fig5", curves=_panel("in_fig5"),
                   label=_method_label, xlabel="Privacy budget ε̃ = ε/√d",
                   title="Fig. 5: final test accuracy vs privacy budget (benchmarks dashed)"),
        _fig6_spec("fig6", "zf", "Fig. 6: final test accuracy vs worst-case SNR (ZF, u = 1)"),
        _fig6_spec("fig6_zf_opt", "zf_opt",
                   "Fig. 6 with a phase-optimising beamformer (spec 5.3 correction)"),
    ),
    label=curve_label, compose=compose("iid"),
    shared_keys=("dp_perk.analytic",), curve_key=lambda curve: "dp_perk.training",
    claims=(
        Claim("fig3_tradeoff", "Stricter privacy (smaller ε̃) gives lower test accuracy and "
              "higher training loss (final and last-10-round means, monotone up to trial noise).",
              _tradeoff),
        Claim("fig3_gap_shrinks", "Relaxing ε̃ above the default shrinks the gap between "
              "AirFL-DP and AirFL-MIMO.", _gap_shrinks),
        Claim("fig3_mimo_like_clip", "AirFL-MIMO is highly comparable to noiseless FL w/ "
              "clipping (within 1 pp, spec 10.3 check 3).", _mimo_like_clip),
        Claim("fig3_ordering", "Vanilla FL >= FL w/ clipping >= AirFL-MIMO >= AirFL-DP.",
              _ordering),
        Claim("fig3_grid_ends", "The largest ε̃ is within 3 pp of AirFL-MIMO, the smallest at "
              "least 5 pp below (spec 10.3 check 2, Errata 2).", _ends(5.0)),
        Claim("fig3_authors", "Authors' final accuracies (Vanilla 0.895, clip 0.891, MIMO "
              "0.891, DP 0.855 at ε̃ = 0.1, 0.866 at 0.13; +-0.02, paper model only).",
              _authors({"vanilla": 0.895, "fl_clip": 0.891, "airfl_mimo": 0.891,
                        "dp 0.1": 0.855, "dp 0.13": 0.866}, _fig3_reference)),
        Claim("fig5_monotone", "AirFL-DP accuracy increases with ε̃ (monotone up to trial "
              "noise).", lambda f: paired_trend(final_by_trial(f, ACCURACY), _dp_curves(f),
                                                 scale=100, unit=" pp",
                                                 note=f"final acc (%) {_fmt(_dp_by_eps(f))}"),
              "fig5"),
        Claim("fig5_ends", "AirFL-DP approaches the benchmarks at large ε̃ (within 3 pp of "
              "AirFL-MIMO) and drops at the smallest (>= 10 pp below; spec 10.3, Errata 2).",
              _ends(10.0), "fig5"),
        Claim("fig5_authors", "Authors' Fig. 5 accuracies per ε̃ (+-0.02, paper model only).",
              _authors({f"{e:g}": v for e, v in FIG5_AUTHORS.items()}, _fig5_reference),
              "fig5"),
        *_fig6_claims("fig6", authors=True),
        *_fig6_claims("fig6_zf_opt", authors=False),
    ))

NONIID = Experiment(
    paper="dp_perk", figure="fig4a", config_key="dp_perk.training",
    title="Fig. 4(a): test accuracy vs round, non-i.i.d. (2 classes per device)",
    description=("The methods of Fig. 3 on a label-skewed split: every device holds two equal "
                 "shards of two different classes."),
    figure_spec=FigureSpec(**ROUNDS, **ACC, curves=_panel("in_fig3")),
    extra_figures=(FigureSpec(**ROUNDS, **LOSS, name="fig4b", curves=_panel("in_fig3"),
                              title="Fig. 4(b): training loss vs round, non-i.i.d."),),
    label=curve_label, compose=compose("noniid"),
    shared_keys=("dp_perk.analytic",), curve_key=lambda curve: "dp_perk.training",
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
    return af._fig2_claims(_wide(frame), frame.attrs["params"])


VARIANTS = {"default": {}, "edge_all": {"distance_mode": "edge", "zf_columns": "all"},
            "edge_active": {"distance_mode": "edge"}}


def _thresholds(block: dict[str, Any]) -> pd.DataFrame:
    """Perk threshold and full-binding SNR vs eps_tilde per beamformer; the authors' labelling
    (all devices at r_max, ZF on all n columns) and a common-Lambda variant for the combiner
    gain (spec 5.3, 5.4)."""
    p = _params(block)
    parts = []
    for variant, overrides in VARIANTS.items():
        q = p if variant != "edge_all" else {**p, "beamformers": ["zf"]}
        parts.append(af.threshold_frame(q, **overrides).assign(variant=variant))
    wide = pd.concat(parts, ignore_index=True)
    scheme = wide["beamformer"].map({"zf": "ZF (u = 1)", "zf_opt": "ZF, optimised phases"}) \
        + np.where(wide["variant"] == "default", "", ", " + wide["variant"])
    return _tidy(wide, "eps_tilde", scheme, ("snr_threshold_db", "snr_full_db"), p,
                 "perk_threshold")


def _thresholds_check(frame: pd.DataFrame) -> list:
    wide, params = _wide(frame), frame.attrs["params"]
    part = {v: wide[wide["variant"] == v] for v in VARIANTS}
    return [*af._threshold_claims(part["default"], part["edge_all"], params),
            af._gain_claim(part["edge_active"], params), *af._quick_claims(params)]


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
              "fully binding (P_full, Errata 1), per beamformer, mean over trials.",
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
              _forecast, lambda f: af._fig6_claims(_wide(f), f.attrs["params"])),
    _analytic("privacy", "Achieved privacy of AirFL-DP (paper vs optimal conversion)",
              "eps~ achieved by the allocation for each target (spec 8 diagnostic table).",
              "Target ε̃", (Panel("eps_tilde_dp_paper", "ε̃, paper's conversion (23)"),
                           Panel("eps_tilde_dp_optimal", "ε̃, optimal conversion")),
              _privacy, lambda f: af._privacy_claims(_wide(f))),
)
