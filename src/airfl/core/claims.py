"""Helpers for claims: final values, time-to-reach ratios and the verdicts of comparisons over
trials (paired 95 % intervals against a declared equivalence margin), computed on stored figure
data.

Verdicts (`airfl.core.experiments.VERDICTS`) of a comparison "A beats B" from the paired 95 % t
interval of the per-trial difference A - B, signed so that positive is the claimed direction,
and the claim's equivalence margin m (the difference the paper would call "the same", declared
with the claim before any rerun: `Margin`, one default per metric kind):

1. equivalent when the whole interval is below the numerical resolution (RELATIVE_RESOLUTION),
   even if it excludes 0 ("equivalent by resolution": rounding, not the schemes);
2. inconclusive with one trial: one draw of a random quantity has no spread, so its sign is not
   a verdict;
3. equivalent when the whole interval lies inside [-m, +m]: two one-sided tests (TOST), each at
   2.5 %, the same one-sided error as the 95 % interval's holds and contradicted. A difference
   the paper would call the same is not a win even when every trial shows it, so a claim
   "A beats B" that comes out equivalent is not a holds;
4. holds when the interval excludes 0 on the claimed side, contradicted on the other;
5. inconclusive otherwise: the numbers then say the smallest difference these trials could have
   detected (`PairedDifference.detectable`, 80 % power) and, where the paper gives its own gap,
   how many trials would detect it (`PairedDifference.trials_to_detect`).

Claims that A and B are the same (`paired_equivalence`) or that A is not worse than B by more
than m (`paired_noninferior`), and that a value lies in a target range (`value_within`), read
the same interval against their own statement.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from airfl.core.experiments import (CONTRADICTED, EQUIVALENT, HOLDS, INCONCLUSIVE, NOT_APPLICABLE,
                                    ClaimResult)
from airfl.core.resolution import (NUMERICAL_DTYPE, RELATIVE_RESOLUTION,  # noqa: F401
                                   resolution)
from airfl.core.claim_power import (LEVEL, MAX_TRIALS, POWER, most_trials,  # noqa: F401
                                    power_factor, trials_for)


def _last_rows(frame: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Each (figure, curve, trial)'s last evaluated row of `metric`: its last round, or, on a
    time grid, the last grid time (which holds the last round's value). One row per trial, so
    that no trial weighs more than another (a trial whose last round is held over several grid
    points used to count once per point)."""
    rows = frame.dropna(subset=[metric])
    keys = [k for k in ("round", "time_s") if k in rows]
    group = [c for c in ("figure", "curve", "trial") if c in rows]
    last = rows.sort_values(keys, kind="stable").groupby(group, sort=False).tail(1)
    return last.sort_index()


def final_values(frame: pd.DataFrame, metric: str) -> dict[str, float]:
    """Mean over trials of `metric` at each curve's last evaluated round (or grid time), one
    value per trial."""
    return final_by_trial(frame, metric).mean().to_dict()


def final_by_trial(frame: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Each curve's `metric` at its last evaluated round (or grid time), one row per trial and one
    column per curve: the per-trial values a paired comparison needs."""
    return _last_rows(frame, metric).pivot_table(index="trial", columns="curve", values=metric,
                                                 aggfunc="mean", sort=False)


@dataclass(frozen=True)
class Margin:
    """The equivalence margin of a comparison: the difference the paper would call "the same".
    `size` is in the metric's own units (accuracy as a fraction: 0.01 = 1 pp), or, when
    `relative`, a fraction of the larger |mean| of the two compared curves. `basis` says where
    it comes from in a few words (CLAIMS.md prints it beside the interval): a metric kind's
    default, or a claim's override with its reason (`because`)."""

    size: float
    relative: bool
    basis: str

    def __post_init__(self):
        if not (self.size >= 0 and math.isfinite(self.size)):
            raise ValueError(f"Margin.size: {self.size!r}; allowed: a finite number >= 0")
        if not self.basis:
            raise ValueError("Margin.basis: empty; say where the margin comes from")

    def absolute(self, scale: float) -> float:
        """The margin in the metric's units, for compared values of size `scale`."""
        return self.size * abs(scale) if self.relative else self.size

    def because(self, size: float, reason: str) -> "Margin":
        """This kind's margin with another size, for one claim, and why (e.g. the paper's own
        tolerance, or a gap the paper reports as a win that is smaller than the default)."""
        return replace(self, size=size, basis=f"{reason} (overrides the default)")

    def describe(self, scale: float = 1.0, unit: str = "") -> str:
        size = f"{100 * self.size:g} % of the larger value" if self.relative else \
            f"{scale * self.size:.3g}{unit}"
        return f"margin ±{size}: {self.basis}"


ACCURACY_MARGIN = Margin(0.01, False, "accuracy default, 1 pp")
"""1 pp of (test or normalised) accuracy: the papers' accuracy figures are read to about a
point, and the differences they name as gains are a point or more (LAPA's Figs. 4 and 7 name
smaller ones: those claims override it)."""
GAP_MARGIN = Margin(0.05, True, "gap default, 5 % relative")
"""5 % of the larger sub-optimality gap: the gap is drawn on a log axis, where 5 % is about a
fiftieth of a decade, below what a reader of the figure tells apart."""
LOSS_MARGIN = Margin(0.05, True, "loss default, 5 % relative")
"""5 % of the larger loss value, as for a gap."""
EPSILON_MARGIN = Margin(0.05, True, "epsilon default, 5 % relative")
"""5 % of the larger privacy budget epsilon (exp(0.05 eps) ~ 1 + 0.05 eps at eps ~ 1)."""
TIME_MARGIN = Margin(0.05, True, "time default, 5 % relative")
"""5 % of the larger time (to reach a target, or a round's latency)."""


@dataclass(frozen=True)
class PairedDifference:
    """The claimed-better curve minus the other, paired by trial, signed so that a positive value
    is the claimed direction. Trials share channel, data and noise draws (common random numbers),
    so the per-trial difference removes what the two curves have in common and a paired test is
    far more powerful than comparing two means with their own spreads. `floor` is the numerical
    resolution of the difference (RELATIVE_RESOLUTION times the curves' scale), `margin` the
    declared equivalence margin in the metric's units, `spread` the standard deviation of the
    per-trial differences the interval uses, `paper_gap` the paper's own difference where it
    gives one (same sign convention)."""

    better: str
    worse: str
    mean: float                       # mean over trials of the signed difference
    half_width: float                 # of the two-sided confidence interval of the mean
    trials: int
    level: float
    higher_is_better: bool = True
    floor: float = 0.0                # |mean| at most this: equivalent below numerical resolution
    margin: float = 0.0               # the declared equivalence margin, absolute
    declared: Margin | None = None    # the margin as declared (its basis)
    spread: float = 0.0
    paper_gap: float | None = None

    @property
    def below_resolution(self) -> bool:
        """The difference is no larger than the arithmetic can resolve (RELATIVE_RESOLUTION):
        its whole interval lies within ±floor (one trial: the difference itself). A mean near 0
        with a wide spread is not below resolution: the trials differ, rounding does not."""
        return abs(self.mean) + (self.half_width if self.trials > 1 else 0.0) <= self.floor

    @property
    def interval_verdict(self) -> str:
        """The verdict of the interval and the margin alone (module docstring, rules 2-5)."""
        if self.trials < 2:
            return INCONCLUSIVE
        low, high = self.mean - self.half_width, self.mean + self.half_width
        if self.margin > 0 and -self.margin <= low and high <= self.margin:
            return EQUIVALENT
        if low > 0:
            return HOLDS
        return CONTRADICTED if high < 0 else INCONCLUSIVE

    @property
    def verdict(self) -> str:
        """The interval's verdict, except that a difference below the numerical resolution is
        equivalent (RELATIVE_RESOLUTION: rounding, not the schemes)."""
        return EQUIVALENT if self.below_resolution else self.interval_verdict

    def _factor(self, n: int) -> float:
        return power_factor(n, self.level)

    @property
    def trials_to_decide(self) -> float | None:
        """For an inconclusive difference, the trials that would decide it if the observed mean
        and spread were the true ones (`trials_for`): the interval then excludes 0 (holds or
        contradicted) or, with a margin larger than the mean, lies inside ±margin (equivalent),
        whichever comes first. None when decided, or with one trial (spread unknown)."""
        if self.verdict != INCONCLUSIVE or self.trials < 2:
            return None
        sign = trials_for(abs(self.mean), self.spread, self.level)
        same = trials_for(self.margin - abs(self.mean), self.spread, self.level)
        return min(sign, same)

    def result(self, verdict: str, numbers: str, reason: str = "",
               trials_to_decide: float | None = None) -> ClaimResult:
        """A claim's result read from this difference alone, with its trials (and, when
        inconclusive, `trials_to_decide` unless the claim's own reading gives another)."""
        return ClaimResult.of(verdict, numbers, reason, self.trials,
                              self.trials_to_decide if trials_to_decide is None
                              else trials_to_decide)

    @property
    def detectable(self) -> float:
        """The smallest true difference these trials detect with POWER (80 %) at the interval's
        level: (t_{1-a/2} + t_{power}) s / sqrt(n), s the spread of the per-trial differences;
        inf with one trial (no spread)."""
        return math.inf if self.trials < 2 else self._factor(self.trials) * self.spread

    def trials_to_detect(self, gap: float) -> int | None:
        """How many trials detect a true difference `gap` with POWER, at this spread of the
        per-trial differences; None when not within MAX_TRIALS or with no spread known."""
        if self.trials < 2 or gap == 0:
            return None
        if self.spread == 0:
            return 2
        n = 2
        while n <= MAX_TRIALS:
            if self._factor(n) * self.spread <= abs(gap):
                return n
            n = n + 1 if n < 64 else int(n * 1.1)
        return None

    def tag(self, scale: float = 1.0, unit: str = "") -> str:
        """The verdict in words, with what decided it."""
        verdict = self.verdict
        if self.below_resolution:
            alone = self.interval_verdict
            return (f"equivalent: below numerical resolution {scale * self.floor:.3g}{unit}"
                    + (f"; the interval alone: {alone}" if alone != EQUIVALENT and
                       self.trials > 1 else ""))
        if verdict == EQUIVALENT:
            return f"equivalent within ±{scale * self.margin:.3g}{unit}"
        if verdict != INCONCLUSIVE:
            return verdict
        if self.trials < 2:
            return "inconclusive: one trial, no spread over trials"
        text = (f"inconclusive: detectable ≥ {scale * self.detectable:.3g}{unit} at "
                f"{self.trials} trials")
        if self.paper_gap is not None:
            need = self.trials_to_detect(self.paper_gap)
            raw = self.paper_gap if self.higher_is_better else -self.paper_gap
            text += (f"; the paper's {scale * raw:+.3g}{unit} needs "
                     + (f"{need} trials" if need else f"more than {MAX_TRIALS} trials"))
        return text

    def describe(self, scale: float = 1.0, unit: str = "") -> str:
        """'better − worse = raw difference ± half-width [verdict]', the raw difference of the
        metric itself (negative when lower is better and the claim holds), with what decided
        the verdict (`tag`)."""
        raw = self.mean if self.higher_is_better else -self.mean
        spread = (f" ± {scale * self.half_width:.3g}" if self.trials > 1 else " (1 trial)")
        lower = "" if self.higher_is_better else ", lower is better"
        return (f"{self.better} − {self.worse} = {scale * raw:+.3g}{spread}{unit} "
                f"[{self.tag(scale, unit)}{lower}]")


def paired_difference(values: pd.DataFrame, better: str, worse: str, margin: Margin,
                      higher_is_better: bool = True, level: float = LEVEL,
                      paper_gap: float | None = None) -> PairedDifference:
    """Paired t interval of the per-trial difference `better - worse` (sign flipped when lower
    is better); `values` has one row per trial and one column per curve (`final_by_trial`).
    Only trials where both curves have a value are paired. When every trial shows the same
    nonzero difference (zero sample spread: a few trials of a metric measured in steps), the
    measurement's `resolution`, estimated from every value in `values`, stands in for the
    spread. `margin`: the claim's declared equivalence margin; `paper_gap`: the paper's own
    `better - worse` (in the metric's units, raw sign) where it gives one."""
    from scipy.stats import t as student

    if not isinstance(margin, Margin):
        raise TypeError(f"margin: {margin!r}; allowed: an airfl.core.claims.Margin (declare one per "
                        "claim, e.g. ACCURACY_MARGIN)")
    pair = values[[better, worse]].dropna()
    diff = (pair[better] - pair[worse]).to_numpy(dtype=float)
    if not higher_is_better:
        diff = -diff
    n = len(diff)
    if n == 0:
        raise ValueError(f"no trial has both {better!r} and {worse!r}")
    half = spread = 0.0
    if n > 1:
        spread = float(diff.std(ddof=1))
        if spread <= 1e-9 * float(np.max(np.abs(diff))):     # every trial: the same difference
            spread = resolution(values.to_numpy(dtype=float))
        half = float(student.ppf(0.5 + level / 2, n - 1) * spread / math.sqrt(n))
    size = max(abs(float(pair[better].mean())), abs(float(pair[worse].mean())))
    gap = None if paper_gap is None else (paper_gap if higher_is_better else -paper_gap)
    return PairedDifference(better, worse, float(np.mean(diff)), half, n, level,
                            higher_is_better, RELATIVE_RESOLUTION * size, margin.absolute(size),
                            margin, spread, gap)


PRECEDENCE = (CONTRADICTED, EQUIVALENT, INCONCLUSIVE, HOLDS)
"""How parts combine into one claim: any part contradicted contradicts it; otherwise a part
that is equivalent settles that the claim does not hold as stated (more trials would not make it
hold); otherwise a part the trials cannot decide leaves it inconclusive; holds when every part
holds. Parts that do not apply (n/a) are left out; n/a when none applies."""


def combine_verdicts(verdicts: Iterable[str]) -> str:
    """The verdict of a claim made of parts with these verdicts (PRECEDENCE)."""
    found = {v for v in verdicts if v != NOT_APPLICABLE}
    return next((v for v in PRECEDENCE if v in found), NOT_APPLICABLE)


def _reason(parts: Sequence[tuple[str, str]], verdict: str, shown: int = 2) -> str:
    """One line: the (verdict, text) parts that decided `verdict`, the first `shown` of them."""
    deciding = [text for v, text in parts if v == verdict]
    more = len(deciding) - shown
    return "; ".join(deciding[:shown]) + (f" (and {more} more)" if more > 0 else "")


def _suffix(pairs: Sequence[PairedDifference], scale: float, unit: str) -> str:
    level = pairs[0].level
    margins = list(dict.fromkeys(p.declared.describe(scale, unit) for p in pairs
                                 if p.declared is not None))
    return f" ({100 * level:g} % paired t interval over trials; {'; '.join(margins)})"


def combine_orderings(pairs: Sequence[PairedDifference], scale: float = 1.0, unit: str = "",
                      note: str = "") -> ClaimResult:
    """One ordering claim from its pairwise parts (PRECEDENCE), with every part's numbers and
    the parts that decide the verdict as its reason."""
    parts = [(p.verdict, p.describe(scale, unit)) for p in pairs]
    verdict = combine_verdicts(v for v, _ in parts)
    numbers = "; ".join(text for _, text in parts) + _suffix(pairs, scale, unit) + \
        (f"; {note}" if note else "")
    inconclusive = [p.trials_to_decide for p in pairs if p.verdict == INCONCLUSIVE]
    need = None if not inconclusive or None in inconclusive else max(inconclusive)
    return ClaimResult.of(verdict, numbers, _reason(parts, verdict),
                          max(p.trials for p in pairs), need)


def paired_order(values: pd.DataFrame, pairs: Iterable[tuple[str, str]], margin: Margin,
                 higher_is_better: bool = True, scale: float = 1.0, unit: str = "",
                 note: str = "", paper_gaps: Mapping[tuple[str, str], float] | None = None
                 ) -> ClaimResult:
    """The claim 'each first curve beats its second', every pair tested across trials against
    the declared margin; `paper_gaps`: the paper's own differences of some pairs (raw sign, the
    metric's units), for the trials an inconclusive pair would need."""
    gaps = paper_gaps or {}
    return combine_orderings([paired_difference(values, a, b, margin, higher_is_better,
                                                paper_gap=gaps.get((a, b)))
                              for a, b in pairs], scale, unit, note)


def paired_trend(values: pd.DataFrame, curves: Sequence[str], margin: Margin,
                 higher_is_better: bool = True, scale: float = 1.0, unit: str = "",
                 note: str = "") -> ClaimResult:
    """A monotone trend along `curves` (e.g. accuracy rising with the privacy budget), 'up to
    trial noise': contradicted when any neighbouring pair or the two ends are significantly
    reversed; otherwise the verdict of the two ends (holds, equivalent: the ends are the same,
    inconclusive)."""
    steps = [paired_difference(values, b, a, margin, higher_is_better) for a, b in chain(curves)]
    ends = paired_difference(values, curves[-1], curves[0], margin, higher_is_better)
    reversed_ = [p.describe(scale, unit) for p in steps if p.verdict == CONTRADICTED]
    numbers = (f"ends: {ends.describe(scale, unit)}; reversed steps: "
               + (", ".join(reversed_) or "none") + _suffix([ends], scale, unit)
               + (f"; {note}" if note else ""))
    if reversed_ or ends.verdict == CONTRADICTED:
        return ends.result(CONTRADICTED, numbers,
                           "; ".join(reversed_) or f"ends: {ends.describe(scale, unit)}")
    return ends.result(ends.verdict, numbers, f"ends: {ends.describe(scale, unit)}")


def paired_equivalence(values: pd.DataFrame, a: str, b: str, margin: Margin, scale: float = 1.0,
                       unit: str = "", note: str = "") -> ClaimResult:
    """The claim 'a and b are the same': holds when the paired interval of a - b lies inside
    ±margin (two one-sided tests) or the difference is below the numerical resolution,
    contradicted when the whole interval lies beyond the margin on one side, inconclusive
    otherwise (and with one trial)."""
    d = paired_difference(values, a, b, margin)
    low, high = d.mean - d.half_width, d.mean + d.half_width
    if d.verdict == EQUIVALENT:
        verdict = HOLDS
    elif d.trials > 1 and (low > d.margin or high < -d.margin):
        verdict = CONTRADICTED
    else:
        verdict = INCONCLUSIVE
    text = d.describe(scale, unit)
    numbers = text + _suffix([d], scale, unit) + (f"; {note}" if note else "")
    return d.result(verdict, numbers, f"{text}: claimed the same within ±"
                    f"{scale * d.margin:.3g}{unit}",
                    trials_for(abs(d.margin - abs(d.mean)), d.spread, d.level))


def paired_noninferior(values: pd.DataFrame, a: str, b: str, margin: Margin,
                       higher_is_better: bool = True, scale: float = 1.0, unit: str = "",
                       note: str = "") -> ClaimResult:
    """The claim 'a is not worse than b by more than the margin' (e.g. "competitive accuracy"):
    holds when the whole paired interval of a - b lies above -margin (a one-sided test at
    2.5 %) or the difference is below the numerical resolution, contradicted when it lies
    wholly below -margin, inconclusive otherwise (and with one trial)."""
    d = paired_difference(values, a, b, margin, higher_is_better)
    low, high = d.mean - d.half_width, d.mean + d.half_width
    if d.below_resolution or (d.trials > 1 and low > -d.margin):
        verdict = HOLDS
    elif d.trials > 1 and high < -d.margin:
        verdict = CONTRADICTED
    else:
        verdict = INCONCLUSIVE
    text = d.describe(scale, unit).rsplit(" [", 1)[0]
    shown = f"{text} [{verdict}: claimed ≥ −{scale * d.margin:.3g}{unit}]"
    if verdict == INCONCLUSIVE and d.trials < 2:
        shown = f"{text} [inconclusive: one trial, no spread over trials]"
    numbers = shown + _suffix([d], scale, unit) + (f"; {note}" if note else "")
    return d.result(verdict, numbers, shown,
                    trials_for(abs(d.mean + d.margin), d.spread, d.level) if d.trials > 1
                    else None)


def value_within(per_trial: pd.Series | Sequence[float], low: float, high: float, name: str,
                 scale: float = 1.0, unit: str = "", level: float = LEVEL, step: float = 0.0
                 ) -> ClaimResult:
    """The claim 'the value is in [low, high]' for a random quantity measured once per trial:
    holds when the t interval of its mean lies inside the range, contradicted when the interval
    and the range do not meet, inconclusive otherwise (and with one trial: one draw is not a
    verdict). `name` names the value in the numbers. `step`: the measurement's resolution
    (`resolution`), which stands in for the spread when every trial shows the same value (as in
    `paired_difference`: a zero spread of a metric measured in steps is not certainty)."""
    from scipy.stats import t as student

    x = np.asarray(pd.Series(per_trial).dropna(), dtype=float)
    n = len(x)
    if n == 0:
        raise ValueError(f"{name}: no trial has a value")
    mean = float(x.mean())
    spread = float(x.std(ddof=1)) if n > 1 else 0.0
    if n > 1 and spread <= 1e-9 * max(abs(mean), 1e-300):     # every trial: the same value
        spread = step
    half = float(student.ppf(0.5 + level / 2, n - 1) * spread / math.sqrt(n)) \
        if n > 1 else math.inf
    target = f"target [{scale * low:.4g}, {scale * high:.4g}]{unit}"
    if n < 2:
        text = f"{name} {scale * mean:.4g}{unit} (1 trial) [inconclusive: one trial, no spread " \
            f"over trials; {target}]"
        return ClaimResult.of(INCONCLUSIVE, text, text, n)
    lo, hi = mean - half, mean + half
    verdict = HOLDS if low <= lo and hi <= high else \
        CONTRADICTED if hi < low or lo > high else INCONCLUSIVE
    text = (f"{name} {scale * mean:.4g} ± {scale * half:.3g}{unit} over {n} trials "
            f"[{verdict}; {target}] ({100 * level:g} % t interval)")
    return ClaimResult.of(verdict, text, text, n,
                          trials_for(min(abs(mean - low), abs(mean - high)), spread, level))


def named(name: str, result: ClaimResult) -> ClaimResult:
    """A part of a claim (a panel, a noise level, an SNR) with its name before its numbers and
    its reason, so that the combined claim's reason says where it is decided."""
    return ClaimResult.of(result.verdict, f"{name}: {result.numbers}", f"{name}: {result.why}",
                          result.trials, result.trials_to_decide)


def all_of(results: Sequence[ClaimResult]) -> ClaimResult:
    """A claim made of several checks, combined by PRECEDENCE; the reason is the deciding
    checks'."""
    numbers = " | ".join(r.numbers for r in results)
    verdict = combine_verdicts(r.verdict for r in results)
    return ClaimResult.of(verdict, numbers, _reason([(r.verdict, r.why) for r in results],
                                                    verdict), *most_trials(results))


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
