"""The optimal number of FD rounds: Proposition 2 (Appendix D, (A29)-(A30)) and our reading of
(P3.1)-(P3.2).

With Prop. 1 plugged in, sum_i Omega_i(T) = a/sqrt(T) + A_2 sum_i sum_k (B_i^k/B_i) K nu^k(T)
/ sqrt(T), nu^k(T) = max(sigma_n^2/lambda_PA^2, 4 T max_j (w_j^k)^2 rho_j) (the exact piecewise
objective, [D] from Theorem 1 and Prop. 1 for a fixed channel). Above T_0 it is a/sqrt(T) +
b sqrt(T) with minimiser a/b (the appendix's T*); below T_0 it still falls as T grows, so the
minimiser is max(T_0, a/b) (our reading: (P3.2) is the problem for T > T_0 only). Under fading the channel enters at a stated quantile of
min_i |h_i|^2 P_i, never through its mean (E[1/min |h|^2] is infinite under Rayleigh fading).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from airfl.papers.ota_fd.transceiver import class_weights, dp_level


@dataclass(frozen=True)
class TheoryConstants:
    """Theorem 1's constants (none stated in the appendix: parameters [R])."""

    eta0: float
    gamma: float
    L1: float
    L2: float

    @property
    def A1(self) -> float:
        """A_1 = 6 gamma eta_0 L_2 (Theorem 1)."""
        return 6.0 * self.gamma * self.eta0 * self.L2

    @property
    def A2(self) -> float:
        """A_2 = 6 eta_0 gamma^2 L_2^2 L_1 (Theorem 1)."""
        return 6.0 * self.eta0 * self.gamma ** 2 * self.L2 ** 2 * self.L1


def coefficients(*, fmax: np.ndarray, consts: TheoryConstants, class_counts: np.ndarray,
                 rho: np.ndarray, K: int) -> tuple[float, float]:
    """(a, b) of (P3.2) ((A30)): a = 3 sum_i f_i,max / eta_0, b = A_2 sum_i sum_k 4 K (B_i^k/B_i)
    max_j (B_j^k)^2 rho_j / (B^k)^2 (rho [M, K]: per-class coefficients allowed)."""
    counts = np.asarray(class_counts, dtype=np.float64)
    share = counts / counts.sum(axis=1, keepdims=True)                     # B_i^k / B_i
    per_class = 4.0 * K * (class_weights(counts) ** 2 * rho).max(axis=0)   # [K]
    a = 3.0 * float(np.sum(fmax)) / consts.eta0
    b = consts.A2 * float((share * per_class[None, :]).sum())
    return a, b


def threshold_T0(*, sigma_n2: float, channel_power: float, rho: np.ndarray, K: int) -> float:
    """T_0 = sigma_n^2 / (4 K min_i(|h_i|^2 P_i) max_i rho_i) (Appendix D); `channel_power` is
    min_i |h_i|^2 P_i at the chosen quantile (our reading)."""
    return sigma_n2 / (4.0 * K * channel_power * float(np.max(rho)))


def objective(T: np.ndarray, *, fmax: np.ndarray, consts: TheoryConstants,
              class_counts: np.ndarray, rho: np.ndarray, sigma_n2: float, channel_power: float,
              K: int) -> np.ndarray:
    """Exact piecewise sum_i Omega_i(T) [len(T)] at a fixed channel where every WD has
    |h_i|^2 P_i = channel_power (the quantile channel; [R] for the fading case)."""
    T = np.asarray(T, dtype=np.float64)
    counts = np.asarray(class_counts, dtype=np.float64)
    w = class_weights(counts)
    share = counts / counts.sum(axis=1, keepdims=True)
    lam_pa2 = (K * channel_power / np.where(w > 0, w, np.nan) ** 2)
    lam_pa2 = np.nanmin(lam_pa2, axis=0)                                   # [K]
    receiver = sigma_n2 / lam_pa2                                          # [K]
    dp = dp_level(weights=w, rho=rho, T=1)                                 # [K], times T
    nu = np.maximum(receiver[None, :], T[:, None] * dp[None, :])           # [len(T), K]
    noise = consts.A2 * K * (nu * share.sum(axis=0)[None, :]).sum(axis=1)
    a = 3.0 * float(np.sum(fmax)) / consts.eta0
    return (a + noise) / np.sqrt(T)


@dataclass(frozen=True)
class RoundChoice:
    a: float
    b: float
    T_hat: float          # a / b (the appendix's T*)
    T0: float
    T_closed: int         # round(max(T_0, a/b))
    T_argmin: int         # argmin of the exact objective over 1..T_max


def optimal_rounds(*, fmax: np.ndarray, consts: TheoryConstants, class_counts: np.ndarray,
                   rho: np.ndarray, sigma_n2: float, channel_power: float, K: int,
                   T_max: int) -> RoundChoice:
    """Prop. 2 as we read (P3.1)-(P3.2): both the closed form max(T_0, a/b) and the numeric argmin of the
    exact objective on 1..T_max (both are reported)."""
    a, b = coefficients(fmax=fmax, consts=consts, class_counts=class_counts, rho=rho, K=K)
    T0 = threshold_T0(sigma_n2=sigma_n2, channel_power=channel_power, rho=rho, K=K)
    grid = np.arange(1, T_max + 1)
    values = objective(grid, fmax=fmax, consts=consts, class_counts=class_counts, rho=rho,
                       sigma_n2=sigma_n2, channel_power=channel_power, K=K)
    closed = int(min(max(round(max(T0, a / b)), 1), T_max))
    return RoundChoice(a, b, a / b, T0, closed, int(grid[np.argmin(values)]))


def fading_quantile(*, num_devices: int, power: float, mean_gain: float, quantile: float) -> float:
    """The `quantile` of min_i |h_i|^2 P_i under i.i.d. Rayleigh fading (|h|^2 ~ Exp(mean_gain)):
    the minimum of M exponentials is Exp(mean_gain / M), so F^-1(q) = -ln(1 - q) mean_gain / M
    (times P). Used for T_0 instead of the mean (E[1/min |h|^2] is infinite).

    q = 1 is the top of the support, +inf, returned as such rather than through log1p(-1) (which
    gives the same inf with a RuntimeWarning: param_deps' perturbation of the configured 0.5 is
    0.5 x 1.5 + 0.25 = 1, so every `airfl dvc-yaml` printed it); q outside [0, 1] stops."""
    if not 0.0 <= quantile <= 1.0:
        raise ValueError(f"fading_quantile must lie in [0, 1], got {quantile!r}")
    if quantile == 1.0:
        return float("inf")                             # F^-1(1) of Exp(mean_gain / M)
    return -np.log1p(-quantile) * mean_gain / num_devices * power    # F^-1(q) = -ln(1-q) mean/M
