"""Helpers for claims: final values and time-to-reach ratios, computed on stored figure data."""

from __future__ import annotations

import math

import pandas as pd


def final_values(frame: pd.DataFrame, metric: str) -> dict[str, float]:
    """Mean over trials of `metric` at each curve's last evaluated round (or grid time)."""
    rows = frame.dropna(subset=[metric])
    key = "round" if "round" in rows else "time_s"
    last = rows[rows[key] == rows.groupby(["curve", "trial"])[key].transform("max")]
    return last.groupby("curve", sort=False)[metric].mean().to_dict()


def mean_curve(frame: pd.DataFrame, curve: str, metric: str) -> pd.Series:
    """The mean over trials of one curve, indexed by time (s)."""
    rows = frame[frame["curve"] == curve].dropna(subset=[metric])
    return rows.groupby("time_s")[metric].mean().sort_index()


def first_time(curve: pd.Series, target: float, lower_is_better: bool) -> float:
    """First time the mean curve reaches `target` (<= for a gap, >= for an accuracy); inf if never."""
    reached = curve <= target if lower_is_better else curve >= target
    return float(curve.index[reached.to_numpy()][0]) if reached.any() else math.inf


def speedups(frame: pd.DataFrame, proposed: str, others: list[str], metric: str,
             lower_is_better: bool) -> dict[str, float]:
    """Biased FL spec 8: speedup_S = t_end / t_prop(value_S(t_end)), t_prop(v) = first time the
    proposed mean curve reaches v. A value > 1 means the proposed scheme got there faster."""
    ours = mean_curve(frame, proposed, metric)
    out = {}
    for other in others:
        theirs = mean_curve(frame, other, metric)
        t_end = float(theirs.index.max())
        reached = first_time(ours, float(theirs.iloc[-1]), lower_is_better)
        out[other] = t_end / reached if reached > 0 else math.inf
    return out


def fmt(values: dict[str, float], digits: int = 4) -> str:
    return ", ".join(f"{k} {v:.{digits}g}" for k, v in values.items())
