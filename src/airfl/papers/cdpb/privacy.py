"""Per-round RDP of CDPB and its baselines, composition over rounds, conversion to (eps, delta).

Paper: Theorem 1 (§III-B) and its proof (App. A, (34)-(38)); Remark 1 (composition); the
baselines' participation probabilities of §V.

Bounds (pick with ``bound``; every figure uses ``paper_thm1``):

* ``paper_thm1``: Theorem 1 exactly as printed,
  eps_r = ln 2 / (alpha-1) + alpha/(alpha-1) ln(1 + p exp((alpha-1) W^2 / sigma_q^2)).
* ``wang_thm9``: the tighter Lemma 3 / (34) (Wang-Balle-Kasiviswanathan 2019, Thm. 9) that
  Theorem 1 loosens.
* ``no_amplification``: the Gaussian mechanism before subsampling, alpha W^2 / sigma_q^2 (App. A).
* ``dimension_corrected``: our correction. Decision: Theorem 1 divides the
  gradient bound W^2 by the TOTAL received noise power, ignoring that the noise per coordinate is
  sigma_q^2 / d and that the gradient arrives scaled by sqrt(rho); it is dimensionally wrong. The
  corrected mechanism is the Poisson-subsampled Gaussian (add/remove one client, rate p,
  sensitivity sqrt(rho) W, per-coordinate std sqrt(sigma_q^2 / d)), i.e. noise multiplier
  z = sqrt(sigma_q^2 / (d rho W^2)); its RDP at integer alpha is the exact binomial series of
  Mironov-Talwar-Zhang 2019 §3.3, implemented here independently of airfl.privacy (and tested
  against it and dp_accounting). Diagnostic only: orders of magnitude larger than Theorem 1.

Integer orders only (Lemma 3 requires integer alpha).
"""

from __future__ import annotations

import math
import numbers
from typing import Any, Callable, Sequence

import numpy as np
from scipy import special

from airfl.papers.cdpb.channel_stats import expected_round, participation_probability
from airfl.papers.cdpb.setting import RDP_BOUNDS, CdpbSetting, check_tau, mechanism
from airfl.privacy import (ComposedEvent, Event, GaussianEvent, RdpCurveEvent,
                           SubsampledGaussianEvent, eps_from_rdp, eps_from_rdp_classic)

#: Integer RDP orders for conversions (the paper's bound is only defined at integer alpha).
INTEGER_ORDERS: tuple[int, ...] = tuple(range(2, 65)) + (128, 256)

#: conversion name -> airfl.privacy function returning (eps, order). The paper reports RDP only
#: and never converts; "classic" is the standard eps + ln(1/delta)/(alpha-1) (Mironov 2017
#: Prop. 3), "optimal" the improved conversion minimised over orders.
CONVERSIONS: dict[str, Callable] = {"classic": eps_from_rdp_classic, "optimal": eps_from_rdp}


def _alpha(alpha: Any) -> int:
    if isinstance(alpha, bool) or alpha != int(alpha) or int(alpha) < 2:
        raise ValueError(f"alpha must be an integer >= 2 (Lemma 3), got {alpha!r}")
    return int(alpha)


def _inputs(p: Any, sigma_q2: Any) -> tuple[np.ndarray, np.ndarray]:
    p_arr = np.asarray(p, dtype=np.float64)
    s2 = np.asarray(sigma_q2, dtype=np.float64)
    if np.any(~(p_arr >= 0.0) | ~(p_arr <= 1.0)):
        raise ValueError(f"p must lie in [0, 1] (a participation probability), got {p!r}")
    if np.any(~(s2 >= 0.0)):
        raise ValueError(f"sigma_q2 must be >= 0 (a noise power), got {sigma_q2!r}")
    return p_arr, s2


def _ratio(W: float, sigma_q2: np.ndarray) -> np.ndarray:
    """W^2 / sigma_q^2 (inf at zero noise: no privacy)."""
    with np.errstate(divide="ignore"):
        return W**2 / sigma_q2


def rdp_paper_thm1(p: Any, sigma_q2: Any, alpha: int, W: float = 1.0) -> np.ndarray:
    """Theorem 1 per round: ln2/(alpha-1) + alpha/(alpha-1) ln(1 + p e^{(alpha-1) W^2/sigma_q^2}).

    Evaluated as logaddexp(log p + (alpha-1) W^2/sigma_q^2, 0). Note:
    the bound is >= ln 2 / (alpha-1) even at p = 0.
    """
    a = _alpha(alpha)
    p, s2 = _inputs(p, sigma_q2)
    with np.errstate(divide="ignore"):
        log_term = np.logaddexp(np.log(p) + (a - 1) * _ratio(W, s2), 0.0)
    return math.log(2.0) / (a - 1) + a / (a - 1) * log_term  # Theorem 1, (37)


def _log_expm1(x: np.ndarray) -> np.ndarray:
    """log(e^x - 1) for x >= 0 without overflow (-inf at x = 0)."""
    with np.errstate(divide="ignore", over="ignore"):
        return np.where(x > 30.0, x + np.log1p(-np.exp(-x)), np.log(np.expm1(np.minimum(x, 30.0))))


def rdp_wang_thm9(p: Any, sigma_q2: Any, alpha: int, W: float = 1.0) -> np.ndarray:
    """Lemma 3 / (34): 1/(alpha-1) ln(1 + p^2 C(alpha,2) min{4(E_2 - 1), 2 E_2}
    + sum_{j=3}^{alpha} p^j C(alpha,j) 2 E_{(j-1)j}),  E_m = exp(m W^2 / sigma_q^2)."""
    a = _alpha(alpha)
    p, s2 = _inputs(p, sigma_q2)
    x = _ratio(W, s2)
    p, x = np.broadcast_arrays(p, x)
    with np.errstate(divide="ignore"):
        log_p = np.log(p)
        log_min = np.minimum(math.log(4.0) + _log_expm1(2.0 * x), math.log(2.0) + 2.0 * x)
        terms = [np.zeros_like(x), 2.0 * log_p + math.log(math.comb(a, 2)) + log_min]  # (34)
        terms += [j * log_p + math.log(2.0 * math.comb(a, j)) + (j - 1) * j * x
                  for j in range(3, a + 1)]  # (34), E_{(j-1)j}
    return special.logsumexp(np.stack(terms), axis=0) / (a - 1)


def rdp_no_amplification(sigma_q2: Any, alpha: int, W: float = 1.0) -> np.ndarray:
    """Gaussian mechanism with Delta^2 = 2 W^2 and no subsampling: alpha W^2 / sigma_q^2 (App. A,
    Remark 2)."""
    a = _alpha(alpha)
    _, s2 = _inputs(0.0, sigma_q2)
    return a * _ratio(W, s2)  # Remark 2 with Delta^2 = 2 W^2


def corrected_noise_multiplier(sigma_q2: Any, rho: Any, d: int, W: float = 1.0) -> np.ndarray:
    """z = sqrt(sigma_q^2 / d) / (sqrt(rho) W): per-coordinate noise std over the add/remove
    sensitivity sqrt(rho) W of the received signal y."""
    _, s2 = _inputs(0.0, sigma_q2)
    return np.sqrt(s2 / (d * np.asarray(rho, dtype=np.float64) * W**2))


def rdp_dimension_corrected(p: Any, sigma_q2: Any, alpha: int, rho: Any, d: int,
                            W: float = 1.0) -> np.ndarray:
    """Poisson-subsampled Gaussian at integer alpha (Mironov-Talwar-Zhang 2019, §3.3):
    eps = ln A / (alpha-1),  A = sum_i C(alpha,i) (1-p)^(alpha-i) p^i exp((i^2 - i) / (2 z^2)),
    with z from :func:`corrected_noise_multiplier`. p = 1 gives alpha / (2 z^2) (no amplification).
    """
    a = _alpha(alpha)
    p, _ = _inputs(p, sigma_q2)
    z2 = corrected_noise_multiplier(sigma_q2, rho, d, W) ** 2
    p, z2 = np.broadcast_arrays(p, z2)
    with np.errstate(divide="ignore"):
        terms = [math.log(math.comb(a, i)) + special.xlogy(a - i, 1.0 - p) + special.xlogy(i, p)
                 + (i * i - i) / (2.0 * z2) for i in range(a + 1)]  # MTZ19 §3.3, integer alpha
    return special.logsumexp(np.stack(terms), axis=0) / (a - 1)


def rdp_round(p: Any, sigma_q2: Any, alpha: int, bound: str = "paper_thm1", W: float = 1.0,
              rho: Any = None, d: int | None = None) -> np.ndarray:
    """Per-round RDP eps_r(alpha; p, sigma_q^2) under the chosen bound (module docstring)."""
    if bound == "paper_thm1":
        return rdp_paper_thm1(p, sigma_q2, alpha, W)
    if bound == "wang_thm9":
        return rdp_wang_thm9(p, sigma_q2, alpha, W)
    if bound == "no_amplification":
        return rdp_no_amplification(sigma_q2, alpha, W)
    if bound == "dimension_corrected":
        if rho is None or d is None:
            raise ValueError("bound 'dimension_corrected' needs rho and the model dimension d")
        return rdp_dimension_corrected(p, sigma_q2, alpha, rho, d, W)
    raise ValueError(f"bound must be one of {RDP_BOUNDS}, got {bound!r}")


def privacy_inputs(s: CdpbSetting, strategy: str, rho: Any,
                   beta: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(p, sigma_q^2) that enter Theorem 1's bound for each strategy of §V.

    * CDPB (i, n, mixed) and gamma_bar: p = p(rho), the expected sigma_q^2 of the variant.
    * Noise-Free: p = p(rho), sigma_q^2 = sigma_z^2 (no artificial noise).
    * h_min: p = 1. Every client transmits every round, so there is no participation
      uncertainty to amplify privacy (paper §V, Fig. 5 discussion).
    * IS: p = q_IS. Decision: the paper says the IS server receives CSI and so
      "can identify the participants"; read literally that is p = 1 (no amplification), which
      would make IS identical to h_min in privacy and contradict the paper's Fig. 5 ordering
      (IS better than h_min). What the server learns from CSI is which clients passed the channel
      threshold; the independent Bernoulli(q_IS) sampling coin stays hidden, so the amplification
      left is that of sampling with rate q_IS. With q_IS in about (0.525, 0.985) this reproduces
      the ordering CDPB-i < CDPB-n < gamma_bar < IS < h_min of Fig. 5.
    """
    kind, beta = mechanism(strategy, beta)
    _, sigma_q2 = expected_round(s, strategy, rho, beta)
    if kind == "hmin":
        return np.ones_like(sigma_q2), sigma_q2
    if kind == "is":
        return np.full_like(sigma_q2, s.q_IS), sigma_q2
    return participation_probability(s, rho), sigma_q2


#: Readings of sigma_q^2 in the simulation (params `noise_variance`, aggregation.RoundDesign).
NOISE_VARIANCES = ("total", "per_coordinate")


def mechanism_variance(sigma_q2: Any, noise_variance: str, d: int) -> np.ndarray:
    """Per-coordinate variance of the Gaussian noise the server's estimate carries, for a received
    noise parameter sigma_q^2 simulated under one reading:

    * ``total``: (11) budgets a[||g||^2 + d sigma_r^2] <= P and (13)/(17) define sigma_q^2 =
      d sum rho sigma_r^2 + ..., the total power over the d coordinates: sigma_q^2 / d each.
    * ``per_coordinate``: Theorem 1 (App. A) treats sigma_q^2 as the variance of the Gaussian
      mechanism, i.e. of every coordinate: sigma_q^2 each (and (11)'s budget is exceeded d-fold).

    Theorem 1 evaluated at this variance is the RDP of the noise actually simulated."""
    if noise_variance not in NOISE_VARIANCES:
        raise ValueError(f"noise_variance must be one of {NOISE_VARIANCES}, got "
                         f"{noise_variance!r}")
    if not (isinstance(d, numbers.Integral) and d >= 1):
        raise ValueError(f"d must be a positive integer (the model dimension), got {d!r}")
    s2 = np.asarray(sigma_q2, dtype=np.float64)
    return s2 / d if noise_variance == "total" else s2  # (13)/(17) total vs Theorem 1's variance


def strategy_rdp_round(s: CdpbSetting, strategy: str, rho: Any, beta: float | None = None,
                       alpha: int | None = None, noise_variance: str | None = None,
                       d: int | None = None) -> np.ndarray:
    """eps_r of one round of a strategy at rho, with the setting's bound and order.

    noise_variance None: the paper's analytic reading (Theorem 1 with sigma_q^2 as the
    mechanism's variance; figures 2-9). Given with the model dimension d: the RDP of the noise a
    training run simulates under that reading (:func:`mechanism_variance`); the
    dimension-corrected bound then takes the per-coordinate variance directly (d = 1)."""
    p, sigma_q2 = privacy_inputs(s, strategy, rho, beta)
    order = s.alpha if alpha is None else alpha
    if noise_variance is None:
        return rdp_round(p, sigma_q2, order, s.rdp_bound, s.W, rho=rho, d=s.model_dim)
    if d is None:
        raise ValueError("noise_variance needs the model dimension d")
    variance = mechanism_variance(sigma_q2, noise_variance, d)
    return rdp_round(p, variance, order, s.rdp_bound, s.W, rho=rho, d=1)


def rdp_total(eps_round: Any, tau: Any) -> np.ndarray:
    """eps(alpha, tau) = tau eps_r: composition of tau identical rounds (Remark 1, Theorem 1)."""
    return check_tau(tau) * np.asarray(eps_round, dtype=np.float64)  # Remark 1


def cumulative_rdp(eps_per_round: Sequence[float] | np.ndarray) -> np.ndarray:
    """Cumulative RDP after each round for per-round values that differ (the per-round
    values of a training run's realised rounds): RDP adds up under composition (Remark 1)."""
    values = np.asarray(eps_per_round, dtype=np.float64)
    if values.ndim == 0 or np.any(~(values >= 0.0)):
        raise ValueError("eps_per_round must be a sequence of non-negative RDP values")
    return np.cumsum(values, axis=0)  # Remark 1


def strategy_rdp_orders(s: CdpbSetting, strategy: str, rho: float,
                        orders: Sequence[int] = INTEGER_ORDERS,
                        beta: float | None = None, noise_variance: str | None = None,
                        d: int | None = None) -> np.ndarray:
    """Per-round RDP of a strategy at a scalar rho over several integer orders ([len(orders)])."""
    return np.array([float(strategy_rdp_round(s, strategy, rho, beta, alpha=a,
                                              noise_variance=noise_variance, d=d))
                     for a in orders])


def to_dp(orders: Sequence[float], rdp: Any, delta: float = 1e-5,
          conversion: str = "classic") -> tuple[float, float]:
    """(eps, order) of (eps, delta)-DP from an RDP curve; labelled "not in paper".

    ``classic`` with orders = (alpha,) is exactly eps_RDP + ln(1/delta)/(alpha-1) (Mironov 2017
    Prop. 3).
    """
    if conversion not in CONVERSIONS:
        raise ValueError(f"conversion must be one of {sorted(CONVERSIONS)}, got {conversion!r}")
    return CONVERSIONS[conversion](orders, rdp, delta)


def privacy_event(s: CdpbSetting, strategy: str, rho: float, beta: float | None = None,
                  rounds: int = 1, orders: Sequence[int] = INTEGER_ORDERS,
                  noise_variance: str | None = None, d: int | None = None) -> Event:
    """An airfl.privacy event for ``rounds`` rounds of a strategy, for the privacy stage.

    dimension_corrected is a true subsampled Gaussian (a core event the core accountant computes
    exactly); the paper-style bounds become an RDP curve at the integer ``orders``. A training
    run passes its noise_variance reading and model dimension d, so the event accounts the
    noise it simulates (:func:`mechanism_variance`); None keeps the analytic reading.
    """
    n = int(check_tau(rounds))
    if s.rdp_bound == "dimension_corrected":
        p, sigma_q2 = privacy_inputs(s, strategy, rho, beta)
        z = float(corrected_noise_multiplier(sigma_q2, rho, s.model_dim, s.W)) \
            if noise_variance is None else \
            float(corrected_noise_multiplier(mechanism_variance(sigma_q2, noise_variance, d),
                                             rho, 1, s.W))
        p = float(p)
        event: Event = GaussianEvent(z) if p == 1.0 else SubsampledGaussianEvent(p, z)
    else:
        event = RdpCurveEvent(tuple(float(a) for a in orders),
                              tuple(strategy_rdp_orders(s, strategy, rho, orders, beta,
                                                        noise_variance, d)))
    return event if n == 1 else ComposedEvent((event,), (n,))


def simulated_privacy_event(s: CdpbSetting, strategy: str, rho: float, beta: float | None,
                            noise_variance: str, d: int) -> Event:
    """One round of the mechanism a training run simulates, accounted exactly: the Poisson-
    subsampled Gaussian (the dimension-corrected form, checked against dp-accounting) at the
    per-coordinate variance the run adds under `noise_variance` (:func:`mechanism_variance`).
    The paper's Theorem 1 at sigma_q^2 (:func:`privacy_event` with no reading) is what the paper
    claims; this is what the simulation supports (quick Fig. 4, CDPB-i after
    30 rounds, eps 16.5 claimed vs 2,690 simulated under the total reading)."""
    _, sigma_q2 = privacy_inputs(s, strategy, rho, beta)
    if not np.all(mechanism_variance(sigma_q2, noise_variance, d) > 0):   # no noise at all
        return RdpCurveEvent((2.0,), (math.inf,))                         # no guarantee
    exact = s.replace(rdp_bound="dimension_corrected", model_dim=int(d))
    return privacy_event(exact, strategy, rho, beta, noise_variance=noise_variance, d=d)
