"""The claims of LAPA's Figs. 4 and 5, checked on the stored figure CSVs. Final accuracy = mean
test accuracy of the last 5 evaluated rounds per trial;
orderings use the project's paired comparison over trials against the declared margin
(`MARGIN`; `airfl.core.claims`: holds, contradicted, equivalent, inconclusive); the paper's point
differences are soft targets: same sign and within a factor of 2, reported with our numbers
beside them.
"""

from __future__ import annotations

import pandas as pd

from airfl.core.claims import (ACCURACY_MARGIN, LOSS_MARGIN, all_of, chain, named,
                               paired_difference, paired_noninferior, paired_order, paired_trend,
                               value_within)
from airfl.core.experiments import CONTRADICTED, HOLDS, INCONCLUSIVE, ClaimResult

#: P1's objective (eq. 28) is a deterministic function of the searched power given a trial's
#: channel, so "DDPG solves P1 no worse than a direct search at equal evaluations" is read
#: strictly: any shortfall beyond the numerical resolution counts against DDPG (no margin)
P1_MARGIN = LOSS_MARGIN.because(0.0, "P1's objective is deterministic per trial: 'no worse' "
                                "is read strictly")

ACCURACY = "test_accuracy"
FINAL_WINDOW = 5
#: Fig. 4 differences in points the paper states (Sec. V-B). FMNIST's Config 1 − B2 is
#: printed as 0.800 but the two rows above it imply 0.080: the derived value.
FIG4_PAPER = {"mnist": {("wasserstein", "fedavg"): 2.470, ("beda", "fedavg"): 2.073,
                        ("wasserstein", "beda"): 0.397, ("select_ser0p1", "beda"): 2.367},
              "fashion_mnist": {("wasserstein", "fedavg"): 1.413, ("beda", "fedavg"): 1.333,
                                ("wasserstein", "beda"): 0.080, ("select_ser0p1", "beda"): 1.137}}


#: The equivalence margin of every ordering: LAPA names differences far below the 1 pp default as
#: gains (Sec. V-B: Config 1 above B2 by 0.397 pp on MNIST, 0.080 pp on Fashion-MNIST), so a
#: difference it would call the same is below that: 0.05 pp, one test image in 2,000.
MARGIN = ACCURACY_MARGIN.because(0.0005, "LAPA Sec. V-B reads 0.080 pp as a gain: 0.05 pp")


def final_accuracy(frame: pd.DataFrame, window: int = FINAL_WINDOW) -> pd.DataFrame:
    """Mean of the last `window` evaluated rounds, one row per trial, one column per curve."""
    rows = frame.dropna(subset=[ACCURACY])
    rank = rows.groupby(["curve", "trial"])["round"].rank(ascending=False, method="first")
    last = rows[rank <= window]
    return last.pivot_table(index="trial", columns="curve", values=ACCURACY, aggfunc="mean",
                            sort=False)


def _points(values: pd.DataFrame) -> str:
    return ", ".join(f"{c} {100 * v:.2f}" for c, v in values.mean().items())


# -- Fig. 4 ------------------------------------------------------------------------------------

def paper_gaps(table: dict[tuple[str, str], float], pairs: list[tuple[str, str]]
               ) -> dict[tuple[str, str], float]:
    """The paper's difference (as a fraction) of each pair: stated, or the difference of two
    stated with a common third curve c; pairs it implies none for are left out. For the trials an inconclusive pair would need (`airfl.core.claims`)."""
    out = {}
    for a, b in pairs:
        if (a, b) in table:
            out[(a, b)] = table[(a, b)] / 100
            continue
        for (x, y), value in table.items():
            if x == a and (b, y) in table:                 # a - b = (a - c) - (b - c)
                out[(a, b)] = (value - table[(b, y)]) / 100
                break
            if y == b and (x, a) in table:                 # a - b = (c - b) - (c - a)
                out[(a, b)] = (value - table[(x, a)]) / 100
                break
    return out


def fig4_ordering(frame: pd.DataFrame, dataset: str | None = None) -> ClaimResult:
    """Config 2(1e-1) > Config 1 > B2 > B1 (Sec. V-B, Fig. 4, both datasets); with `dataset`, an
    inconclusive pair says how many trials would detect the paper's own difference."""
    values = final_accuracy(frame)
    fallback = fallback_note(frame)
    pairs = chain(["select_ser0p1", "wasserstein", "beda", "fedavg"])
    gaps = paper_gaps(FIG4_PAPER[dataset], pairs) if dataset else None
    return paired_order(values, pairs, MARGIN, scale=100, unit=" pp",
                        note=f"final acc (%): {_points(values)}"
                        + (f"; {fallback}" if fallback else ""), paper_gaps=gaps)


def fallback_note(frame: pd.DataFrame) -> str:
    """The SER-selection curves and trials in which no device met the threshold (eq. 22), so
    that the single best device trained alone; '' when none."""
    found = fallback_trials(frame)
    return "; ".join(f"{c}: no device meets the SER threshold in trial(s) "
                     f"{', '.join(map(str, t))}, the best device trains alone"
                     for c, t in found.items())


def fig4_ser_order(frame: pd.DataFrame) -> ClaimResult:
    """Stricter SER thresholds exclude more devices and lose accuracy: 1e-1 > 1e-2 > 1e-3;
    the trials where a threshold left no device (the best one trains alone) are named."""
    values = final_accuracy(frame)
    curves = [c for c in ("select_ser0p1", "select_ser0p01", "select_ser0p001") if c in values]
    return paired_order(values, chain(curves), MARGIN, scale=100, unit=" pp",
                        note=fallback_note(frame))


def fig4_gaps(dataset: str):
    """The paper's point differences: same sign and within a factor of 2 (soft targets)."""
    return lambda frame: _gaps(frame, FIG4_PAPER[dataset])


def _gaps(frame: pd.DataFrame, table: dict[tuple[str, str], float]) -> ClaimResult:
    """Each paper difference (pp): our per-trial difference's interval inside [paper / 2,
    2 paper] (same sign, within a factor of 2), `value_within`."""
    values = final_accuracy(frame)
    return all_of([value_within(100 * (values[a] - values[b]), min(paper / 2, 2 * paper),
                                max(paper / 2, 2 * paper), f"{a} − {b} (paper {paper:+.3f})",
                                unit=" pp") for (a, b), paper in table.items()])


# -- Fig. 5 ------------------------------------------------------------------------------------

def _levels(frame: pd.DataFrame) -> list[float]:
    nus = frame.loc[frame["curve"].str.startswith("lapa_nu"), "param_nu"].dropna().unique()
    return sorted(float(v) for v in nus)


def _curve(strategy: str, nu: float, frame: pd.DataFrame) -> str:
    rows = frame[(frame["curve"].str.startswith(f"{strategy}_nu")) & (frame["param_nu"] == nu)]
    return str(rows["curve"].iloc[0])


def fig5_nodp_highest(frame: pd.DataFrame) -> ClaimResult:
    """No DP is the highest at every noise level (quick acceptance 1)."""
    values = final_accuracy(frame)
    pairs = [("nodp", _curve(s, nu, frame)) for nu in _levels(frame)
             for s in ("lapa", "uniform", "arb")]
    return paired_order(values, pairs, MARGIN, scale=100, unit=" pp", note=f"final acc (%): "
                        f"{_points(values)}")


def fig5_over_uniform(strategy: str):
    """LAPA (or ARB) above uniform DP at every noise level (Sec. V-C, Fig. 5)."""
    def check(frame: pd.DataFrame) -> ClaimResult:
        values = final_accuracy(frame)
        return paired_order(values, [(_curve(strategy, nu, frame), _curve("uniform", nu, frame))
                                     for nu in _levels(frame)], MARGIN, scale=100, unit=" pp")
    return check


def fig5_lapa_ge_arb(frame: pd.DataFrame) -> ClaimResult:
    """LAPA >= ARB at every noise level (Sec. V-C, Fig. 5; ARB is our reconstruction)."""
    values = final_accuracy(frame)
    return paired_order(values, [(_curve("lapa", nu, frame), _curve("arb", nu, frame))
                                 for nu in _levels(frame)], MARGIN, scale=100, unit=" pp")


def fig5_lapa_closest(frame: pd.DataFrame) -> ClaimResult:
    """LAPA's gap to no DP is <= 1.5 points at nu <= 4 and the smallest of the three DP
    strategies at every nu (Sec. V-C, Fig. 5)."""
    values = final_accuracy(frame)
    parts = []
    for nu in _levels(frame):
        lapa = _curve("lapa", nu, frame)
        others = [(lapa, _curve(s, nu, frame)) for s in ("uniform", "arb")]
        parts.append(paired_order(values, others, MARGIN, scale=100, unit=" pp",
                                  note=f"ν {nu:g}"))
        if nu <= 4:
            parts.append(value_within(100 * (values["nodp"] - values[lapa]), -float("inf"), 1.5,
                                      f"ν {nu:g}: no DP − LAPA", unit=" pp"))
    return all_of(parts)


def fig5_degrades(frame: pd.DataFrame) -> ClaimResult:
    """Every DP strategy degrades as the initial noise level grows (Sec. V-C, Fig. 5)."""
    values = final_accuracy(frame)
    levels = _levels(frame)[::-1]                       # decreasing noise: accuracy rises
    return all_of([named(s, paired_trend(values, [_curve(s, nu, frame) for nu in levels], MARGIN,
                                         scale=100, unit=" pp"))
                   for s in ("lapa", "uniform", "arb")])


# -- Fig. 7 ------------------------------------------------------------------------------------

#: Fig. 7 final-accuracy differences in points (Sec. V-D): Config 5 over its average-power
#: setting and over ARB's average-power setting, MNIST (FMNIST: 0.910 and 2.705).
FIG7_PAPER = {"mnist": {("config5", "lapa_avgp"): 1.465, ("config5", "arb_avgp"): 5.872},
              "fashion_mnist": {("config5", "lapa_avgp"): 0.910, ("config5", "arb_avgp"): 2.705}}


def fig7_ordering(frame: pd.DataFrame, dataset: str | None = None) -> ClaimResult:
    """Config 5 > LAPA(p_bar) > ARB(p_bar) in final accuracy (Sec. V-D, Fig. 7); with `dataset`,
    the paper's differences for an inconclusive pair."""
    values = final_accuracy(frame)
    pairs = chain(["config5", "lapa_avgp", "arb_avgp"])
    gaps = paper_gaps(FIG7_PAPER[dataset], pairs) if dataset else None
    return paired_order(values, pairs, MARGIN, scale=100, unit=" pp",
                        note=f"final acc (%): {_points(values)}", paper_gaps=gaps)


def fig7_over_arb(frame: pd.DataFrame) -> ClaimResult:
    """Config 5 >= ARB(p_bar) (a check of our own, the weakest form of Fig. 7's ordering)."""
    return paired_order(final_accuracy(frame), [("config5", "arb_avgp")], MARGIN, scale=100,
                        unit=" pp")


def fig7_gaps(dataset: str):
    """The paper's Fig. 7 point differences: same sign and within a factor of 2 (soft)."""
    return lambda frame: _gaps(frame, FIG7_PAPER[dataset])


#: P1's best value per trial (Configuration 5's run records): DDPG's p* and the two direct
#: searches at DDPG's number of objective evaluations (power.EQUAL_EVALS)
P1_SEARCHES = {"ddpg": "p1_value", "line_search": "p1_line_equal_evals",
               "random_search": "p1_random_equal_evals"}


def p1_values(frame: pd.DataFrame) -> pd.DataFrame:
    """P1's best value found per trial (rows) by DDPG and by the line and random searches at
    DDPG's number of evaluations (columns, P1_SEARCHES), read from Configuration 5's rows."""
    rows = frame[frame["curve"] == "config5"]
    last = rows.sort_values("round").groupby("trial")[list(P1_SEARCHES.values())].last()
    return last.rename(columns={v: k for k, v in P1_SEARCHES.items()})


def fig7_ddpg_vs_direct(frame: pd.DataFrame) -> ClaimResult:
    """DDPG's p* is no worse on P1 (eq. 28, lower is better) than a 1-D line search over
    uniform power and than a random search over feasible actions, each given DDPG's own number
    of objective evaluations, paired by trial (Sec. IV-C: DDPG solves P1; the direct searches at
    equal work are our check of how well). The
    per-trial values and T_th predicted vs realised at p* and p_bar stand beside the verdict
    (the check L(p*) <= L(p_bar) it replaces holds by construction: DDPG evaluates p_bar first
    and keeps the best action seen)."""
    values = p1_values(frame)
    per_trial = "; ".join(f"trial {int(t)}: DDPG {r.ddpg:.6g}, line {r.line_search:.6g}, "
                          f"random {r.random_search:.6g}" for t, r in values.iterrows())
    worse = [int(t) for t, r in values.iterrows()
             if r.ddpg > min(r.line_search, r.random_search)]
    rows = frame[frame["curve"].isin(["config5", "lapa_avgp"])]
    t_th = rows.sort_values("round").groupby(["curve", "trial"])[
        ["t_th_predicted", "t_th"]].last()
    rounds = lambda s: [None if v != v else int(v) for v in s]                # noqa: E731
    switching = "; ".join(f"T_th at {'p*' if c == 'config5' else 'p_bar'} predicted "
                          f"{rounds(t_th.loc[c, 't_th_predicted'])} realised "
                          f"{rounds(t_th.loc[c, 't_th'])}"
                          for c in ("config5", "lapa_avgp") if c in t_th.index)
    # "no worse than" a direct search: a non-inferiority test of P1's objective (lower is
    # better), per search, paired by trial, read strictly (P1_MARGIN)
    result = all_of([named(f"DDPG vs {search.replace('_', ' ')}",
                           paired_noninferior(values, "ddpg", search, P1_MARGIN,
                                              higher_is_better=False))
                     for search in ("line_search", "random_search")])
    note = (f"P1 value per trial (DDPG above a direct search in trial(s) {worse or 'none'}): "
            f"{per_trial}; {switching}")
    return ClaimResult.of(result.verdict, f"{result.numbers}; {note}", result.why)


# -- Fig. 6 ------------------------------------------------------------------------------------

FIG6_CURVES = ("nodp", "lapa_nu4", "uniform_nu4", "arb_nu4")


def _panels(frame: pd.DataFrame) -> dict[int, pd.DataFrame]:
    """Final accuracy per Fig. 6 panel, keyed by its number of IID devices (stem
    fig6_iid<n> for MNIST, fig6b_iid<n> for Fashion-MNIST), the four strategies at nu = 4 only."""
    out = {}
    for stem, rows in frame.groupby("figure"):
        rows = rows[rows["curve"].isin(FIG6_CURVES)]
        out[int(str(stem).rsplit("_iid", 1)[1])] = final_accuracy(rows)
    return dict(sorted(out.items()))


def fig6_lapa_best_dp(frame: pd.DataFrame) -> ClaimResult:
    """In every panel LAPA > Benchmark 3 and LAPA > Benchmark 4 at the end (Sec. V-C, Fig. 6)."""
    return all_of([named(f"{n} IID", paired_order(v, [("lapa_nu4", "uniform_nu4"),
                                                     ("lapa_nu4", "arb_nu4")], MARGIN,
                                                    scale=100, unit=" pp"))
                   for n, v in _panels(frame).items()])


def _gap_table(frame: pd.DataFrame, a: str, b: str | tuple[str, ...]) -> pd.DataFrame:
    """Per trial (rows) and panel (columns iid<n>): a minus b (b: the best of several)."""
    cols = {}
    for n, v in _panels(frame).items():
        other = v[list(b)].max(axis=1) if isinstance(b, tuple) else v[b]
        cols[f"iid{n}"] = v[a] - other
    return pd.DataFrame(cols)


def fig6_gap_shrinks(frame: pd.DataFrame) -> ClaimResult:
    """The no-DP - LAPA gap shrinks as IID devices are added (0 -> 3 -> 5 -> 7 -> 9; the 15 + 0
    panel is reported; Sec. V-C, Fig. 6)."""
    gaps = _gap_table(frame, "nodp", "lapa_nu4")
    ordered = [c for c in gaps.columns if c != "iid15"]
    result = paired_trend(gaps, ordered, MARGIN, higher_is_better=False, scale=100, unit=" pp")
    means = ", ".join(f"{c} {100 * gaps[c].mean():.2f}" for c in gaps.columns)
    return ClaimResult.of(result.verdict, f"no DP − LAPA (pp, mean): {means}; {result.numbers}",
                          result.why)


def fig6_all_iid(frame: pd.DataFrame) -> ClaimResult:
    """With all devices IID, LAPA's early accuracy slightly above no DP's, its final slightly
    below (Sec. V-C, Fig. 6; soft: reported, not an acceptance check)."""
    rows = frame[frame["figure"].str.endswith("_iid15") & frame["curve"].isin(["nodp", "lapa_nu4"])]
    if rows.empty:
        return ClaimResult(None, "no 15 + 0 panel")
    rounds = sorted(rows["round"].unique())
    early = rows[rows["round"].isin(rounds[:max(1, len(rounds) // 3)])]
    early = early.groupby("curve")[ACCURACY].mean()
    final = final_accuracy(rows).mean()
    return ClaimResult(None, f"first third of rounds: LAPA {100 * early['lapa_nu4']:.2f} vs no "
                       f"DP {100 * early['nodp']:.2f} %; final: LAPA {100 * final['lapa_nu4']:.2f}"
                       f" vs no DP {100 * final['nodp']:.2f} % (report only)")


def fig6_robust(frame: pd.DataFrame) -> ClaimResult:
    """LAPA's margin over the better of B3/B4 does not shrink as IID devices decrease and is
    largest at 0 + 15 or 3 + 12 (Sec. V-C, Fig. 6)."""
    margin = _gap_table(frame, "lapa_nu4", ("uniform_nu4", "arb_nu4"))
    ordered = [c for c in margin.columns if c != "iid15"][::-1]          # fewer IID devices
    mean = margin.mean()
    largest = mean[ordered].idxmax()
    trend = paired_trend(margin, ordered, MARGIN, scale=100, unit=" pp")
    numbers = ("LAPA − best of B3/B4 (pp, mean): "
               + ", ".join(f"{c} {100 * mean[c]:.2f}" for c in margin.columns)
               + f"; largest at {largest}; {trend.numbers}")
    if trend.verdict == CONTRADICTED:             # the margin shrinks significantly somewhere
        return ClaimResult.of(CONTRADICTED, numbers, trend.why)
    if len(margin) < 2:
        return ClaimResult.of(INCONCLUSIVE, numbers, "one trial, no spread over trials")
    if largest not in ("iid0", "iid3"):           # is it significantly above both of them?
        above = [paired_difference(margin, largest, c, MARGIN) for c in ("iid0", "iid3")
                 if c in margin]
        decided = all(d.verdict == HOLDS for d in above)
        return ClaimResult.of(CONTRADICTED if decided else INCONCLUSIVE, numbers,
                              f"largest mean margin at {largest}: "
                              + "; ".join(d.describe(100, " pp") for d in above))
    # "does not shrink": the trend holds, or its ends are the same
    verdict = HOLDS if trend.verdict in (HOLDS, "equivalent") else trend.verdict
    return ClaimResult.of(verdict, numbers, trend.why)


# -- summary table -------------------------------------------------------------------------------

SUMMARY_COLUMNS = ("selected", "eps_total", "eps_effective_total_max", "t_th", "ser_fallback",
                   "arb_as_uniform")


def summary_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Final accuracy (mean ± sd over trials, last 5 rounds) per figure and curve, with eps^T,
    the realised max_k eps_k^{tot,eff}, T_th and the number of excluded devices."""
    rows = []
    for (stem, curve), part in frame.groupby(["figure", "curve"], sort=False):
        acc = final_accuracy(part)[curve]
        last = part.sort_values("round").groupby("trial").tail(1)
        mean = lambda c: float(last[c].mean()) if c in last and last[c].notna().any() \
            else float("nan")                                                     # noqa: E731
        rows.append({"figure": stem, "curve": curve, "label": part["label"].iloc[0],
                     "final_acc_mean": float(acc.mean()),
                     "final_acc_sd": float(acc.std(ddof=1)) if len(acc) > 1 else 0.0,
                     "eps_total": mean("eps_total"),
                     "eps_eff_total_max": float(last["eps_effective_total_max"].max())
                     if "eps_effective_total_max" in last else float("nan"),
                     "t_th": mean("t_th"), "excluded": 15 - mean("selected"),
                     "ser_fallback_trials": fallback_trials(part).get(curve, []),
                     "arb_rounds_as_uniform": _rounds_as_uniform(part)})
    return pd.DataFrame(rows)


def fallback_trials(frame: pd.DataFrame) -> dict[str, list[int]]:
    """Per SER-selection curve, the trials in which no device met its threshold (eq. 22), so
    that the single best device trained alone (the run records' `ser_fallback`)."""
    if "ser_fallback" not in frame:
        return {}
    flagged = frame[frame["ser_fallback"].fillna(0).astype(bool)]
    return {str(c): sorted(int(t) for t in rows["trial"].unique())
            for c, rows in flagged.groupby("curve")}


def _rounds_as_uniform(part: pd.DataFrame) -> str:
    """ARB's rounds that spent uniform DP's split, per trial ('' for other curves)."""
    if "arb_as_uniform" not in part or part["arb_as_uniform"].isna().all():
        return ""
    counts = part.groupby("trial").agg(same=("arb_as_uniform", "sum"), rounds=("round", "nunique"))
    return ", ".join(f"{int(r.same)}/{int(r.rounds)}" for r in counts.itertuples())


def summary(frame: pd.DataFrame) -> ClaimResult:
    """Our summary table as a report (no claim: n/a), led by how the trials split the
    data (the figure CSVs' `partition_per`)."""
    table = summary_table(frame)
    parts = []
    if "partition_per" in frame:
        settings = ", ".join(sorted(frame["partition_per"].dropna().astype(str).unique()))
        parts.append(f"data split per {settings} (partition_per)")
    for r in table.itertuples():
        extra = "".join(f", {k} {v:.4g}" for k, v in (("ε^T", r.eps_total),
                                                    ("max ε_eff,tot", r.eps_eff_total_max),
                                                    ("T_th", r.t_th), ("excluded", r.excluded))
                        if v == v and not (k == "excluded" and v == 0))
        if r.ser_fallback_trials:
            extra += f", no device meets the SER threshold in trials {r.ser_fallback_trials}"
        if r.arb_rounds_as_uniform:
            extra += f", rounds equal to uniform DP per trial {r.arb_rounds_as_uniform}"
        parts.append(f"{r.figure}/{r.curve}: {100 * r.final_acc_mean:.2f} ± "
                     f"{100 * r.final_acc_sd:.2f} %{extra}")
    return ClaimResult(None, "; ".join(parts))
