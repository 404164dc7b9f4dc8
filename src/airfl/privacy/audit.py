"""Empirical privacy auditing: a statistically valid LOWER bound on epsilon from samples of a
mechanism's output on two neighbouring inputs (pure numpy/scipy; no torch).

Method (Jagielski, Ullman, Oprea, "Auditing differentially private machine learning: how
private is private SGD?", NeurIPS 2020; Nasr, Song, Thakurta, Papernot, Carlini, "Adversary
instantiation: lower bounds for differentially private machine learning", IEEE S&P 2021; Nasr,
Hayes, Steinke, Balle, Tramer, Jagielski, Choquette-Choo, Carlini, "Tight auditing of
differentially private machine learning", USENIX Security 2023):

* A threshold test on a scalar statistic s (here: the released update projected on the canary
  direction) says "canary present" iff s > t (or s < t). Any (eps, delta)-DP mechanism forces
  every test to satisfy FPR + e^eps FNR >= 1 - delta and FNR + e^eps FPR >= 1 - delta
  (Kairouz-Oh-Viswanath 2015, Thm. 2.1), so eps >= log((1 - delta - FNR)/FPR) and
  eps >= log((1 - delta - FPR)/FNR).
* The rates are estimated from draws; Clopper-Pearson bounds make the bound valid with
  probability >= 1 - alpha: the UPPER confidence ends of FPR and FNR go into the formula
  (Jagielski et al. 2020, Sec. 4).
* The threshold, direction and formula are chosen on one half of the draws and the rates are
  estimated on the other half, so the choice does not bias the bound (Nasr et al. 2023, Sec. 4:
  picking the best threshold on the same draws would overstate epsilon).
* Gaussian DP (Dong, Roth, Su 2022): for Gaussian statistics the two distributions are
  N(m0, s^2) and N(m1, s^2) and the mechanism is mu-GDP on this pair with mu = |m1 - m0| / s;
  mu-GDP gives (eps, delta(eps)) with delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)
  (Dong-Roth-Su Cor. 2.13), inverted for eps at the mechanism's delta (Nasr et al. 2023, Sec. 5,
  audit in the GDP parametrisation).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
from scipy import optimize, special, stats


def _count(k: int, n: int) -> tuple[int, int]:
    if not (isinstance(n, (int, np.integer)) and n >= 1):
        raise ValueError(f"n must be a positive integer (a number of draws), got {n!r}")
    if not 0 <= k <= n:
        raise ValueError(f"k must lie in [0, n] = [0, {n}], got {k!r}")
    return int(k), int(n)


def clopper_pearson(k: int, n: int, alpha: float = 0.05) -> tuple[float, float]:
    """Two-sided (1 - alpha) Clopper-Pearson interval of a binomial rate from k of n.

    lower = Beta(alpha/2; k, n - k + 1), upper = Beta(1 - alpha/2; k + 1, n - k)
    (Clopper and Pearson 1934; 0 and 1 at the edges k = 0 and k = n)."""
    k, n = _count(k, n)
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must lie in (0, 1), got {alpha!r}")
    lower = 0.0 if k == 0 else float(special.betaincinv(k, n - k + 1, alpha / 2.0))  # CP lower
    upper = 1.0 if k == n else float(special.betaincinv(k + 1, n - k, 1.0 - alpha / 2.0))  # CP
    return lower, upper


def eps_from_rates(fpr: float, fnr: float, delta: float) -> float:
    """The best of eps >= log((1 - delta - FNR)/FPR) and log((1 - delta - FPR)/FNR)
    (Kairouz-Oh-Viswanath 2015 Thm. 2.1, as used by Jagielski et al. 2020 Sec. 4), clipped at 0;
    inf when a rate is 0 and the numerator positive."""
    best = 0.0
    for a, b in ((fnr, fpr), (fpr, fnr)):
        numerator = 1.0 - delta - a
        if numerator <= 0.0:
            continue
        best = max(best, math.inf if b <= 0.0 else math.log(numerator / b))  # KOV15 Thm 2.1
    return best


def _rates(present: np.ndarray, absent: np.ndarray, thresholds: np.ndarray, sign: float
           ) -> tuple[np.ndarray, np.ndarray]:
    """(false positives, false negatives) counts of the test sign * s > sign * t per threshold."""
    p = np.sort(sign * present)
    a = np.sort(sign * absent)
    t = sign * thresholds
    fp = a.size - np.searchsorted(a, t, side="right")     # absent said present
    fn = np.searchsorted(p, t, side="right")               # present said absent
    return fp, fn


@dataclass(frozen=True)
class AuditBound:
    """The outcome of a threshold-test audit (see the module docstring)."""

    eps_lower: float          # valid lower bound at confidence 1 - alpha
    eps_point: float          # the same test's eps at the point estimates of the rates
    eps_upper: float          # at the lower Clopper-Pearson ends (the interval's other side)
    threshold: float
    direction: str            # "greater": present iff s > t; "less": present iff s < t
    fpr: float
    fnr: float
    fpr_interval: tuple[float, float]
    fnr_interval: tuple[float, float]
    draws_select: int         # per neighbour, used to pick the test
    draws_estimate: int       # per neighbour, used to estimate its rates
    alpha: float
    delta: float

    def to_dict(self) -> dict:
        out = asdict(self)
        for key in ("fpr_interval", "fnr_interval"):
            out[key] = list(out[key])
        return out


def _select(present: np.ndarray, absent: np.ndarray, delta: float, candidates: int
            ) -> tuple[float, float]:
    """(threshold, sign) maximising the point-estimate eps on the selection half (quantiles of
    the pooled draws as candidate thresholds)."""
    pooled = np.concatenate([present, absent])
    thresholds = np.unique(np.quantile(pooled, np.linspace(0.0, 1.0, candidates)))
    best = (-1.0, float(thresholds[0]), 1.0)
    for sign in (1.0, -1.0):
        fp, fn = _rates(present, absent, thresholds, sign)
        # a rate of 0 counts as 1/2 of a draw here, so that the pick prefers populated tails
        fpr = np.maximum(fp, 0.5) / absent.size
        fnr = np.maximum(fn, 0.5) / present.size
        for i in range(thresholds.size):
            value = eps_from_rates(float(fpr[i]), float(fnr[i]), delta)
            if value > best[0]:
                best = (value, float(thresholds[i]), sign)
    return best[1], best[2]


def audit_threshold(present, absent, delta: float, alpha: float = 0.05, split: float = 0.5,
                    candidates: int = 512) -> AuditBound:
    """Lower bound on epsilon from draws of the statistic with the canary present / absent.

    The first ``split`` fraction of each sample picks the test (threshold, direction); the rest
    estimates its error rates with Clopper-Pearson (1 - alpha) intervals (module docstring)."""
    present = np.asarray(present, dtype=np.float64).ravel()
    absent = np.asarray(absent, dtype=np.float64).ravel()
    if not 0.0 <= delta < 1.0:
        raise ValueError(f"delta must lie in [0, 1), got {delta!r}")
    if not 0.0 < split < 1.0:
        raise ValueError(f"split must lie in (0, 1), got {split!r}")
    cut_p, cut_a = int(present.size * split), int(absent.size * split)
    if min(cut_p, cut_a, present.size - cut_p, absent.size - cut_a) < 10:
        raise ValueError("too few draws to audit: need at least 20 per neighbour")
    threshold, sign = _select(present[:cut_p], absent[:cut_a], delta, candidates)
    est_p, est_a = present[cut_p:], absent[cut_a:]
    fp, fn = (int(v[0]) for v in _rates(est_p, est_a, np.array([threshold]), sign))
    fpr_ci = clopper_pearson(fp, est_a.size, alpha)
    fnr_ci = clopper_pearson(fn, est_p.size, alpha)
    fpr, fnr = fp / est_a.size, fn / est_p.size
    return AuditBound(
        eps_lower=eps_from_rates(fpr_ci[1], fnr_ci[1], delta),    # Jagielski et al. 2020 Sec. 4
        eps_point=eps_from_rates(fpr, fnr, delta),
        eps_upper=eps_from_rates(fpr_ci[0], fnr_ci[0], delta),
        threshold=threshold, direction="greater" if sign > 0 else "less", fpr=fpr, fnr=fnr,
        fpr_interval=fpr_ci, fnr_interval=fnr_ci, draws_select=min(cut_p, cut_a),
        draws_estimate=min(est_p.size, est_a.size), alpha=alpha, delta=delta)


def gdp_delta(eps: float, mu: float) -> float:
    """delta(eps) of mu-GDP: Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)
    (Dong, Roth, Su 2022, Cor. 2.13), evaluated in logs for large eps."""
    if mu <= 0.0:
        return 0.0
    first = stats.norm.logcdf(-eps / mu + mu / 2.0)
    second = eps + stats.norm.logcdf(-eps / mu - mu / 2.0)
    return float(np.exp(first) * -np.expm1(second - first)) if second < first else 0.0  # DRS Cor 2.13


def gdp_epsilon(mu: float, delta: float) -> float:
    """The smallest eps >= 0 with delta(eps) <= delta for mu-GDP (inverse of :func:`gdp_delta`)."""
    if not 0.0 < delta < 1.0:
        raise ValueError(f"delta must lie in (0, 1), got {delta!r}")
    if not math.isfinite(mu):
        return math.inf
    if gdp_delta(0.0, mu) <= delta:
        return 0.0
    high = 1.0
    while gdp_delta(high, mu) > delta:
        high *= 2.0
    return float(optimize.brentq(lambda e: gdp_delta(e, mu) - delta, 0.0, high, xtol=1e-12))


def empirical_mu(present, absent) -> float:
    """mu = |mean_present - mean_absent| / pooled std: the GDP parameter of the pair if both
    statistics are Gaussian with one variance (Dong-Roth-Su 2022, Def. 2.6; Nasr et al. 2023)."""
    p = np.asarray(present, dtype=np.float64).ravel()
    a = np.asarray(absent, dtype=np.float64).ravel()
    pooled = math.sqrt(0.5 * (p.var(ddof=1) + a.var(ddof=1)))
    return abs(float(p.mean() - a.mean())) / pooled if pooled > 0 else math.inf  # DRS22 Def 2.6


def gaussian_mechanism_epsilon(noise_multiplier: float, delta: float) -> float:
    """Exact eps of the Gaussian mechanism with sensitivity 1 and std z: it is (1/z)-GDP
    (Balle-Wang 2018 Thm. 8 = Dong-Roth-Su Cor. 2.13 at mu = 1/z)."""
    return gdp_epsilon(1.0 / noise_multiplier, delta)
