"""Theorem 1's convergence bound (Appendix A), evaluated on a
stored run: E ||grad F_i(theta_hat_{i,T})||^2 <= Omega_i(T, {P_t}) + 8 gamma L_2 S, with

  Omega_i = 3 f_{i,max} / (eta_0 sqrt(T))                                   (initial gap)
          + sum_t A_2 (Phi_{1,i,t}^2 + Phi_{2,i,t}) / T^{3/2}                (noise and bias)
          + sum_t A_1 (L_1 eta_t + 1) ||grad F_i(theta_{i,t})|| Phi_{1,i,t} / (eta_t T^{3/2})
  A_1 = 6 gamma eta_0 L_2,  A_2 = 6 eta_0 gamma^2 L_2^2 L_1,  eta_t = eta_0 / sqrt(t + 1),
  Phi_{1,i,t} = sum_k (B_i^k/B_i) || sum_j (B_j^k/B^k - c_{j,t}^k) q_{j,t}^k ||_2,
  Phi_{2,i,t} = sum_k (B_i^k/B_i) K nu_t^k,
  nu_t^k = (sigma_n^2 + sum_j |h_j P2_j^k|^2) / lambda_k^2.

The per-round inputs are what the run measured (`schemes.OtaFdScheme` records Phi_1 and Phi_2 from
the round's design and soft labels; `training.run_fd_trial` the gradient norms and losses).
Reconstructed [R], none stated in the appendix: L_1 and L_2 are the X6 constants
(`ota_fd.analysis`); ||grad F_i(theta_{i,t})|| is the pre-clip norm of WD i's first local
mini-batch gradient of round t (with the received targets, not the full-data gradient at the
ideal targets of (A1)); f_{i,max} is the largest such mini-batch loss of WD i over the run (our
reading of f_{i,max}); S is the clipping norm clip_S.
"""

from __future__ import annotations

import numpy as np

from airfl.papers.ota_fd.rounds import TheoryConstants


def phi1(*, share: np.ndarray, ideal: np.ndarray, realised: np.ndarray,
         soft_labels: np.ndarray) -> np.ndarray:
    """Phi_{1,i} [M] of one round (Theorem 1, the bias term): share = B_i^k/B_i [M, K],
    ideal = B_j^k/B^k and realised = c_j^k [M, K] aggregation weights, soft_labels q [M, K, K]."""
    bias = ((ideal - realised)[:, :, None] * soft_labels).sum(axis=0)     # [K, K]
    return share @ np.linalg.norm(bias, axis=1)                           # sum_k share_ik ||.||


def phi2(*, share: np.ndarray, nu: np.ndarray, K: int) -> np.ndarray:
    """Phi_{2,i} [M] of one round (Theorem 1, the noise term): sum_k (B_i^k/B_i) K nu^k, nu [K]
    the per-entry noise variance of the received soft label r^k (Prop. 1's design)."""
    return K * (share @ np.asarray(nu, dtype=np.float64))


def omega_terms(*, T: int, consts: TheoryConstants, fmax: np.ndarray, phi1: np.ndarray,
                phi2: np.ndarray, gradnorm: np.ndarray) -> dict[str, np.ndarray]:
    """Theorem 1's three terms of Omega_i [M] each (fmax [M]; phi1, phi2, gradnorm [T, M], row t
    = round t = 0..T-1 with eta_t = eta_0 / sqrt(t + 1))."""
    eta = consts.eta0 / np.sqrt(np.arange(1, T + 1, dtype=np.float64))[:, None]   # [T, 1]
    scale = float(T) ** 1.5
    return {
        "init": 3.0 * np.asarray(fmax, dtype=np.float64) / (consts.eta0 * np.sqrt(T)),
        "noise": consts.A2 * (phi1 ** 2 + phi2).sum(axis=0) / scale,
        "bias": (consts.A1 * (consts.L1 * eta + 1.0) * gradnorm * phi1 / eta).sum(axis=0) / scale,
    }


def omega(**kwargs) -> np.ndarray:
    """Omega_i(T, {P_t}) [M] (Theorem 1); the arguments of `omega_terms`."""
    return sum(omega_terms(**kwargs).values())


def theorem1_bound(*, gamma: float, L2: float, S: float, **kwargs) -> np.ndarray:
    """Omega_i + 8 gamma L_2 S [M]: Theorem 1's bound on E ||grad F_i(theta_hat_{i,T})||^2 (the
    constant floor comes from the drift of the distillation targets between rounds)."""
    return omega(**kwargs) + 8.0 * gamma * L2 * S
