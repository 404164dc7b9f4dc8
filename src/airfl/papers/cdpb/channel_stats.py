"""Expected per-round channel statistics as functions of rho: participation probability p(rho),
expected number of aggregated clients K_t(rho), expected received noise power sigma_q^2(rho).

Paper eqs. (52)-(60) (App. C), (13)-(17) and the baselines of §V. Channel model: the power gain
is h ~ Exponential(mean h_bar), i.i.d. over clients and rounds, so Pr(h >= x) = exp(-x / h_bar).
Decision (paper §II-B vs App. C/D): the paper uses two incompatible Rayleigh
parametrisations; every formula here is written with h_bar = E[h], which reproduces App. C's
closed forms with 2 sigma_k^2 = h_bar.

All functions are vectorised over rho (numpy broadcasting) and return float64 arrays (0-d for a
scalar rho). These "expected" quantities feed every analytic formula and optimisation;
the training simulation (aggregation.py) uses the realised per-round ones.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from airfl.papers.cdpb.setting import CdpbSetting, check_beta, mechanism


def participation_probability(s: CdpbSetting, rho: Any) -> np.ndarray:
    """p(rho) = Pr(h >= h_th) = exp(-rho W^2 / (P h_bar)), h_th = rho W^2 / P ((7), (52)-(53))."""
    return np.exp(-s.check_rho(rho) * s.W**2 / (s.P * s.h_bar))  # (53), 2 sigma_k^2 = h_bar


def expected_reliable(s: CdpbSetting, rho: Any) -> np.ndarray:
    """K_t(rho) = K p(rho), the expected number of reliable clients ((53))."""
    return s.K * participation_probability(s, rho)  # (53)


def noise_power_idle(s: CdpbSetting, rho: Any) -> np.ndarray:
    """CDPB-i: sigma_q^2 = K P h_bar p + sigma_z^2 ((60) plus the receiver noise of (17)).

    A reliable client's received artificial noise is P h - rho W^2 ((58));
    E[(P h - rho W^2) 1{h >= h_th}] = P h_bar p.
    """
    return s.K * s.P * s.h_bar * participation_probability(s, rho) + s.sigma_z2  # (60), (17)


def noise_power_noisy(s: CdpbSetting, rho: Any) -> np.ndarray:
    """CDPB-n: sigma_q^2 = K (P h_bar - rho W^2 p) + sigma_z^2 ((56) plus the sigma_z^2 of (13)).

    Noisy unreliable clients add E[P h 1{h < h_th}] each, so every client contributes
    P h_bar in expectation minus the rho W^2 spent on the gradient when reliable.
    """
    rho = s.check_rho(rho)
    p = participation_probability(s, rho)
    return s.K * (s.P * s.h_bar - rho * s.W**2 * p) + s.sigma_z2  # (56), (13)


def noise_power_mixed(s: CdpbSetting, rho: Any, beta: float) -> np.ndarray:
    """CDPB-mixed(beta): sigma_q^2_i + beta K (P h_bar - (rho W^2 + P h_bar) p).

    Derived (the paper gives no formula for Fig. 9): an unreliable client sends full-power noise
    with probability beta, adding beta P E[h 1{h < x}] = beta P (h_bar - (x + h_bar) e^{-x/h_bar})
    with x = h_th = rho W^2 / P. beta = 0 gives (60), beta = 1 gives (56) (tested).
    """
    rho = s.check_rho(rho)
    p = participation_probability(s, rho)
    extra = s.K * (s.P * s.h_bar - (rho * s.W**2 + s.P * s.h_bar) * p)  # (13)-(17), expected
    return noise_power_idle(s, rho) + check_beta(beta) * extra


def expected_noise_power(s: CdpbSetting, rho: Any, beta: float) -> np.ndarray:
    """sigma_q^2(rho) of CDPB with portion beta: (60) at beta = 0, (56) at beta = 1, else mixed."""
    beta = check_beta(beta)
    if beta == 0.0:
        return noise_power_idle(s, rho)
    if beta == 1.0:
        return noise_power_noisy(s, rho)
    return noise_power_mixed(s, rho, beta)


def hmin_rho(s: CdpbSetting) -> float:
    """rho of the h_min baseline in its default "expected" mode: P E[min_k h_k] / W^2 = P h_bar /
    (K W^2) (our reconstruction; the paper's rho = P h_min / W^2 with realised h_min makes
    E[1/min h] infinite)."""
    return s.P * s.h_bar / (s.K * s.W**2)


def expected_round(s: CdpbSetting, strategy: str, rho: Any,
                   beta: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(K_t, sigma_q^2) in expectation for any strategy ((13)-(17), (52)-(60), the baselines of §V).

    * cdpb_i / cdpb_n / gamma_bar: (K p, (60) / (56) / by beta); cdpb_mixed: (K p, the derived
      mixed formula, also at beta = 0 or 1, so that Fig. 9 can check it against (60) and (56)).
    * hmin: every client transmits, K_t = K; sigma_q^2 = (K-1) P h_bar + sigma_z^2
      (exact for the realised-h_min mode, since E[min h] = h_bar / K; the expected mode's
      max(P h - rho W^2, 0) differs by O(P h_bar / K)). rho only sets the shape of the output.
    * is: a client participates iff its Bernoulli(q_IS) coin and its channel pass:
      K_t = K q_IS p, sigma_q^2 = q_IS K P h_bar p + sigma_z^2.
    * noise_free: truncation as CDPB-i without artificial noise: K_t = K p, sigma_q^2 = sigma_z^2.
    """
    kind, beta = mechanism(strategy, beta)
    rho = s.check_rho(rho)
    p = participation_probability(s, rho)
    if strategy == "cdpb_mixed":  # the derived formula at every beta (Fig. 9 checks its ends)
        return s.K * p, noise_power_mixed(s, rho, beta)
    if kind == "cdpb":
        return s.K * p, expected_noise_power(s, rho, beta)
    if kind == "hmin":
        ones = np.ones_like(rho)
        return s.K * ones, ((s.K - 1) * s.P * s.h_bar + s.sigma_z2) * ones
    if kind == "is":
        return s.K * s.q_IS * p, s.q_IS * s.K * s.P * s.h_bar * p + s.sigma_z2
    return s.K * p, np.full_like(rho, s.sigma_z2)  # noise_free (§V): receiver noise only
