"""Helpers for claims: final values, time-to-reach ratios and paired orderings, computed on stored
figure data."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable, Sequence

import numpy as np
import pandas as pd

from airfl.experiments import ClaimResult


def final_values(frame: pd.DataFrame, metric: str) -> dict[str, float]:
    """Mean over trials of `metric` at each curve's last evaluated round (or grid time)."""
    rows = frame.dropna(subset=[metric])
    key = "round" if "round" in rows else "time_s"
    last = rows[rows[key] == rows.groupby(["curve", "trial"])[key].transform("max")]
    return last.groupby("curve", sort=False)[metric].mean().to_dict()


def final_by_trial(frame: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Each curve's `metric` at its last evaluated round (or grid time), one row per trial and one
    column per curve: the per-trial values a paired comparison needs."""
    rows = frame.dropna(subset=[metric])
    key = "round" if "round" in rows else "time_s"
    last = rows[rows[key] == rows.groupby(["curve", "trial"])[key].transform("max")]
    return last.pivot_table(index="trial", columns="curve", values=metric, aggfunc="mean",
                            sort=False)


NUMERICAL_DTYPE = np.float32
RELATIVE_RESOLUTION = math.sqrt(float(np.finfo(NUMERICAL_DTYPE).eps))     # 2^-11.5 = 3.45e-4
"""The numerical resolution of a compared value, relative to its size (
follow-up; the rule and r were fixed from the arithmetic before any claim was re-run).

Every metric a claim compares comes out of float32 arithmetic: the models' parameters,
activations and losses are float32 (the objective F is a float32 per-sample loss summed per
client, then averaged in float64; accuracies count argmaxes of float32 logits). Each value ends a
run of T rounds whose summation order is an implementation detail (lockstep or one run at a
time, thread count, kernel choice). Reordering a float32 sum of n terms moves it by up to
gamma_{n-1} sum |x_i|, gamma_n = n u / (1 - n u), u = 2^-24 (Higham, Accuracy and Stability of
Numerical Algorithms, 2nd ed., ch. 4); for the longest reduction of a round (the softmax model's
dot products over d = 785 inputs) n u = 4.7e-5 per round, and a trajectory carries such
perturbations from round to round. We take r = sqrt(eps_float32) = 2^-11.5: half of float32's
significand, ~7x the one-round bound as room for the T rounds (the usual attainable accuracy of
an iterative floating-point result). A reordering is the same code path in every trial, so it
moves every trial alike and the paired spread over trials does not see it: a t interval alone
can call pure rounding a significant difference (Biased FL Fig. 3(a) at 60 dB: +2.95e-08 +-
1.46e-08 on gaps of 0.002654 flipped tie -> no when the lockstep changed the order).

Rule: a paired difference whose |mean| is below r * scale, scale = the larger |mean| of the two
curves over the paired trials, is "tie (below numerical resolution)", whatever its interval.
For a sub-optimality gap the rounding is relative to F, not to the gap, so the gap as the scale
is conservative (a smaller floor than the rounding of F). For an accuracy of 90 % the floor is
0.031 pp, below one test image of 2,000 (0.05 pp)."""


@dataclass(frozen=True)
class PairedDifference:
    """The claimed-better curve minus the other, paired by trial, signed so that a positive value
    is the claimed direction. Trials share channel, data and noise draws (common random numbers),
    so the per-trial difference removes what the two curves have in common and a paired test is
    far more powerful than comparing two means with their own spreads. `floor` is the numerical
    resolution of the difference (RELATIVE_RESOLUTION times the curves' scale)."""

    better: str
    worse: str
    mean: float                       # mean over trials of the signed difference
    half_width: float                 # of the two-sided confidence interval of the mean
    trials: int
    level: float
    higher_is_better: bool = True
    floor: float = 0.0                # |mean| below it: a tie below numerical resolution

    @property
    def below_resolution(self) -> bool:
        """The difference is smaller than the arithmetic can resolve (RELATIVE_RESOLUTION)."""
        return abs(self.mean) < self.floor

    @property
    def interval_verdict(self) -> str:
        """'yes' when the whole interval is on the claimed side, 'no' when it is on the other,
        'tie' when it holds 0 (the difference is inside the spread over trials). With one trial
        there is no spread: only an exactly zero difference is a tie."""
        if self.mean == 0.0:
            return "tie"
        if self.mean - self.half_width > 0:
            return "yes"
        return "no" if self.mean + self.half_width < 0 else "tie"

    @property
    def verdict(self) -> str:
        """The interval's verdict, except that a difference below the numerical resolution is a
        tie (RELATIVE_RESOLUTION: rounding, not the schemes)."""
        return "tie" if self.below_resolution else self.interval_verdict

    def describe(self, scale: float = 1.0, unit: str = "") -> str:
        """'better − worse = raw difference ± half-width [verdict]', the raw difference of the
        metric itself (negative when lower is better and the claim holds); where the floor turned
        the interval's yes or no into a tie, the verdict says so and what the interval said."""
        raw = self.mean if self.higher_is_better else -self.mean
        spread = (f" ± {scale * self.half_width:.3g}" if self.trials > 1 else " (1 trial)")
        lower = "" if self.higher_is_better else ", lower is better"
        verdict = self.verdict
        if self.below_resolution and self.interval_verdict != "tie":    # the floor decided it
            verdict = (f"tie (below numerical resolution {scale * self.floor:.3g}; the interval "
                       f"alone: {self.interval_verdict})")
        return (f"{self.better} − {self.worse} = {scale * raw:+.3g}{spread}{unit} "
                f"[{verdict}{lower}]")


def paired_difference(values: pd.DataFrame, better: str, worse: str,
                      higher_is_better: bool = True, level: float = 0.95) -> PairedDifference:
    """Paired t interval of the per-trial difference `better - worse` (sign flipped when lower
    is better); `values` has one row per trial and one column per curve (`final_by_trial`).
    Only trials where both curves have a value are paired. When every trial shows the same
    nonzero difference (zero sample spread: a few trials of a metric measured in steps), the
    measurement's `resolution`, estimated from every value in `values`, stands in for the
    spread. A difference below the numerical resolution (RELATIVE_RESOLUTION times the larger
    |mean| of the two curves) is a tie whatever the interval."""
    from scipy.stats import t as student

    pair = values[[better, worse]].dropna()
    diff = (pair[better] - pair[worse]).to_numpy(dtype=float)
    if not higher_is_better:
        diff = -diff
    n = len(diff)
    if n == 0:
        raise ValueError(f"no trial has both {better!r} and {worse!r}")
    half = 0.0
    if n > 1:
        spread = float(diff.std(ddof=1))
        if spread <= 1e-9 * float(np.max(np.abs(diff))):     # every trial: the same difference
            spread = resolution(values.to_numpy(dtype=float))
        half = float(student.ppf(0.5 + level / 2, n - 1) * spread / math.sqrt(n))
    size = max(abs(float(pair[better].mean())), abs(float(pair[worse].mean())))
    return PairedDifference(better, worse, float(np.mean(diff)), half, n, level,
                            higher_is_better, RELATIVE_RESOLUTION * size)


def resolution(values: np.ndarray) -> float:
    """The finest step between distinct measured values (0 if all are equal). A metric measured
    on a finite test set moves in steps (accuracy on 2,000 images: 0.05 pp), so a few trials can
    show the same difference exactly, a zero sample spread; that zero is the resolution of the
    measurement, not certainty. Continuous metrics (gaps, losses) have a negligible step."""
    distinct = np.unique(values[np.isfinite(values)])
    return float(np.min(np.diff(distinct))) if len(distinct) > 1 else 0.0


def combine_orderings(pairs: Sequence[PairedDifference], scale: float = 1.0, unit: str = "",
                      note: str = "") -> ClaimResult:
    """One ordering claim from its pairwise parts: no when any part is significantly reversed,
    yes when every part is significantly in the claimed direction, a tie otherwise."""
    verdicts = {p.verdict for p in pairs}
    level = pairs[0].level
    numbers = "; ".join(p.describe(scale, unit) for p in pairs) + \
        f" ({100 * level:g} % paired t interval over trials)" + (f"; {note}" if note else "")
    if "no" in verdicts:
        return ClaimResult(False, numbers)
    if verdicts == {"yes"}:
        return ClaimResult(True, numbers)
    return ClaimResult(None, numbers, tie=True)


def paired_order(values: pd.DataFrame, pairs: Iterable[tuple[str, str]],
                 higher_is_better: bool = True, scale: float = 1.0, unit: str = "",
                 note: str = "") -> ClaimResult:
    """The claim 'each first curve beats its second', every pair tested across trials."""
    return combine_orderings([paired_difference(values, a, b, higher_is_better)
                              for a, b in pairs], scale, unit, note)


def paired_trend(values: pd.DataFrame, curves: Sequence[str], higher_is_better: bool = True,
                 scale: float = 1.0, unit: str = "", note: str = "") -> ClaimResult:
    """A monotone trend along `curves` (e.g. accuracy rising with the privacy budget), 'up to
    trial noise': no when any neighbouring pair is significantly reversed, yes when no pair is
    and the two ends differ significantly in the claimed direction, a tie otherwise."""
    steps = [paired_difference(values, b, a, higher_is_better) for a, b in chain(curves)]
    ends = paired_difference(values, curves[-1], curves[0], higher_is_better)
    numbers = (f"ends: {ends.describe(scale, unit)}; reversed steps: "
               + (", ".join(p.describe(scale, unit) for p in steps if p.verdict == "no")
                  or "none")
               + f" ({100 * ends.level:g} % paired t intervals over trials)"
               + (f"; {note}" if note else ""))
    if any(p.verdict == "no" for p in steps) or ends.verdict == "no":
        return ClaimResult(False, numbers)
    return ClaimResult(True, numbers) if ends.verdict == "yes" else \
        ClaimResult(None, numbers, tie=True)


def all_of(results: Sequence[ClaimResult]) -> ClaimResult:
    """A claim made of several checks: no when any is no, yes when all are yes, else a tie."""
    numbers = " | ".join(r.numbers for r in results)
    if any(r.holds is False for r in results):
        return ClaimResult(False, numbers)
    if all(r.holds for r in results):
        return ClaimResult(True, numbers)
    return ClaimResult(None, numbers, tie=True)


def chain(curves: Sequence[str]) -> list[tuple[str, str]]:
    """The pairs of an ordering chain a > b > c: (a, b), (b, c)."""
    return list(zip(curves, curves[1:]))


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
    """Biased FL's speed-up: speedup_S = t_end / t_prop(value_S(t_end)), t_prop(v) = first time the
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
