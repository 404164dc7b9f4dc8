"""The checks of CDPB's training-figure claims (Fig. 4: the power-balancing strategies' final
accuracies, Sec. V; Figs. 8(a,b): CDPB-n against CDPB-i when the channel distribution changes) on
the stored figure data. Final accuracies are compared per trial, paired by trial (the strategies
share channels, coins and data), against the accuracy margin (`airfl.core.claims`); the claims
themselves, in the paper's words, are declared with their figures in
:mod:`airfl.papers.cdpb.experiments`."""

from __future__ import annotations

import math

import pandas as pd

from airfl.core.claims import (ACCURACY_MARGIN, all_of, final_by_trial, final_values, fmt,
                               mean_curve, paired_equivalence, paired_order, value_within)
from airfl.core.experiments import ClaimResult
from airfl.papers.cdpb.run_blocks import PER_COORDINATE


def final_accuracy(frame: pd.DataFrame) -> dict[str, float]:
    """Final mean test accuracy (%) per strategy (a reading's suffix dropped from curve ids)."""
    return {k.removesuffix(PER_COORDINATE): 100.0 * v
            for k, v in final_values(frame, "test_accuracy").items()}


def per_trial(frame: pd.DataFrame) -> pd.DataFrame:
    """Final accuracy per trial (rows) and strategy (columns, a reading's suffix dropped)."""
    values = final_by_trial(frame, "test_accuracy")
    values.columns = [c.removesuffix(PER_COORDINATE) for c in values.columns]
    return values


def comparable(a: str, b: str):
    """a's final accuracy comparable to b's, |a - b| <= 1 pp: the paired interval inside
    ±1 pp (the accuracy default margin)."""
    def evaluate(frame: pd.DataFrame) -> ClaimResult:
        return paired_equivalence(per_trial(frame), a, b, ACCURACY_MARGIN, scale=100,
                                  unit=" pp", note=fmt(final_accuracy(frame), 4) + " (%)")
    return evaluate


def beats(pairs: list[tuple[str, str]], size=None):
    """The paper's Fig. 4 orderings on the final accuracy, each pair tested across trials (paired
    by trial: the strategies share channels and data). `size`: the quantitative part of our reading
    (IS at most 3 pp below, h_min at least 2 pp below the next lowest), a test on the per-trial
    final accuracies (`value_within`)."""
    def evaluate(frame: pd.DataFrame) -> ClaimResult:
        values = per_trial(frame)
        order = paired_order(values, pairs, ACCURACY_MARGIN, scale=100, unit=" pp")
        return order if size is None else all_of([order, size(values)])
    return evaluate


def is_within_3pp(values: pd.DataFrame) -> ClaimResult:
    return value_within(100 * (values["cdpb_i"] - values["is"]), -math.inf, 3.0,
                        "CDPB-i - IS", unit=" pp")


def hmin_2pp_below(values: pd.DataFrame) -> ClaimResult:
    others = values.drop(columns="hmin").min(axis=1)       # per trial, the next lowest
    return value_within(100 * (others - values["hmin"]), 2.0, math.inf, "next lowest - h_min",
                        unit=" pp")


def n_ahead_early(frame: pd.DataFrame) -> ClaimResult:
    """Fig. 8(a): CDPB-n ahead of CDPB-i over the first half of the time axis
    (each trial's accuracy averaged over the first half of the common time grid, then CDPB-n vs
    CDPB-i tested across trials, paired by trial)."""
    curves = {c: mean_curve(frame, c, "test_accuracy") for c in ("cdpb_i", "cdpb_n")}
    half = min(float(c.index.max()) for c in curves.values()) / 2
    early = {c: float(100 * v[v.index <= half].mean()) for c, v in curves.items()}
    rows = frame[frame["curve"].isin(curves) & (frame["time_s"] <= half)]
    per_trial = rows.pivot_table(index="trial", columns="curve", values="test_accuracy",
                                 aggfunc="mean")
    return paired_order(per_trial, [("cdpb_n", "cdpb_i")], ACCURACY_MARGIN, scale=100,
                        unit=" pp",
                        note=f"mean accuracy over time <= {half:g}: " + fmt(early, 4) + " (%)")
