"""Convergence bound gamma (Theorem 2 and its App.-C approximation) and the utility
G(rho, tau) = lam1 gamma + lam2 eps of (24), for any strategy.

Paper: Theorem 2 (23), Lemma 5 (49), App. C (51a); utility (24).

Decisions:
* 4 M^2 G everywhere: (27) prints 4 M G^2, but Theorem 2, (51a), (61) and a_i of (29) use
  4 M^2 G.
* The optimisation and every figure use the App.-C approximation
  gamma ~ 6 / (mu tau) * Phi(rho), Phi = 4 M^2 G / K_t + sigma_q^2 / (K_t^2 rho): drop the
  initial-distance term, S_tau ~ tau^3 / 3, tau + a ~ tau. The paper sets mu = 1
  there; mu is kept (default 1) so the two forms share their constants.
* The exact bound (``gamma_exact``) needs the undefined b of "a > max{8bM, ...}";
  read b as the number of local steps L and take a = max(8 L M, (sqrt2 + 1) M) + 1; Lemma 5's
  tau + 2a vs Theorem 2's tau + a: Theorem 2's is used. Not used for any figure.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from airfl.papers.cdpb.channel_stats import expected_round
from airfl.papers.cdpb.privacy import rdp_total, strategy_rdp_round
from airfl.papers.cdpb.setting import CdpbSetting, check_tau, mechanism


def phi(s: CdpbSetting, rho: Any, k_t: Any, sigma_q2: Any) -> np.ndarray:
    """Phi = 4 M^2 G / K_t + sigma_q^2 / (K_t^2 rho): the bracket of (23) and (51a)."""
    k_t = np.asarray(k_t, dtype=np.float64)
    return 4.0 * s.M**2 * s.G / k_t + sigma_q2 / (k_t**2 * s.check_rho(rho))  # (23), (51a)


def gamma_approx(s: CdpbSetting, phi_value: Any, tau: Any) -> np.ndarray:
    """gamma ~ 6 / (mu tau) * Phi (App. C, first display; the paper has mu = 1)."""
    return 6.0 / (s.mu * check_tau(tau)) * np.asarray(phi_value, dtype=np.float64)  # App. C


def step_offset(s: CdpbSetting, local_steps: int) -> float:
    """a of eta_t = 4 / (mu (a + t)): a > max{8 b M, (sqrt2 + 1) M} with b read as L, plus 1.
    """
    if local_steps < 1:
        raise ValueError(f"local_steps must be >= 1, got {local_steps}")
    return max(8.0 * local_steps * s.M, (math.sqrt(2.0) + 1.0) * s.M) + 1.0


def s_tau(a: float, tau: Any) -> np.ndarray:
    """S_tau = sum_{t=0}^{tau-1} (a + t)^2 (Theorem 2), summed term by term."""
    taus = check_tau(tau)
    return np.array([np.sum((a + np.arange(int(t), dtype=np.float64)) ** 2)
                     for t in taus.ravel()]).reshape(taus.shape)  # Theorem 2, beta_t = (a+t)^2


def gamma_exact(s: CdpbSetting, phi_value: Any, tau: Any, local_steps: int,
                init_dist2: float = 1.0) -> np.ndarray:
    """Theorem 2 (23): mu a^3 / (4 S_tau) E||theta_0 - theta*||^2 + 2 tau (tau + a) / (mu S_tau)
    * Phi (E||theta_0 - theta*||^2 = 1 by default). Not used for any figure."""
    a = step_offset(s, local_steps)
    taus = check_tau(tau).astype(np.float64)
    st = s_tau(a, tau)
    return (s.mu * a**3 / (4.0 * st) * init_dist2
            + 2.0 * taus * (taus + a) / (s.mu * st) * np.asarray(phi_value))  # (23)


@dataclass(frozen=True)
class Objective:
    """gamma, eps and G = lam1 gamma + lam2 eps of one strategy as functions of (rho, tau), with
    the expected K_t, sigma_q^2 and p of (52)-(60) (the inputs of every analytic figure).

    Vectorised: rho and tau broadcast against each other.
    """

    setting: CdpbSetting
    strategy: str = "cdpb_i"
    beta: float | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "beta", mechanism(self.strategy, self.beta)[1])

    def phi(self, rho: Any) -> np.ndarray:
        k_t, sigma_q2 = expected_round(self.setting, self.strategy, rho, self.beta)
        return phi(self.setting, rho, k_t, sigma_q2)

    def gamma(self, rho: Any, tau: Any) -> np.ndarray:
        return gamma_approx(self.setting, self.phi(rho), tau)

    def eps_round(self, rho: Any) -> np.ndarray:
        return strategy_rdp_round(self.setting, self.strategy, rho, self.beta)

    def eps(self, rho: Any, tau: Any) -> np.ndarray:
        return rdp_total(self.eps_round(rho), tau)

    def utility(self, rho: Any, tau: Any) -> np.ndarray:
        """G(rho, tau) = lam1 gamma + lam2 eps ((24)); smaller is better."""
        s = self.setting
        return s.lam1 * self.gamma(rho, tau) + s.lam2 * self.eps(rho, tau)  # (24)
