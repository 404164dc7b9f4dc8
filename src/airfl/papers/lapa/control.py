"""Dynamic noise control (paper Sec. IV): the switching round T_th (eq. 23),
the convergence bound of Theorem 1 (eq. 24) as problem P1's objective (eq. 28), the power
feasibility set (eqs. 5, 28c) and the two baselines DDPG is checked against.

Power is handled as p_k^2 in W throughout. The budget trajectory eps[t, k] (rounds 1..T) is a
frozen pilot trajectory (our surrogate), so one evaluation of the objective is O(T K).
"""

from __future__ import annotations

import math

import numpy as np

#: Our reading: the switching condition is tested only from round t0 = 3 (the first round with
#: a PID error and personalised shares); rounds 1-2 always carry artificial noise.
FIRST_SWITCH_ROUND = 3


def channel_std(power2, channel_norm2, noise_w: float) -> np.ndarray:
    """sigma_ch,k = sigma_n0 / (p_k ||h_k||) per gradient entry (Sec. II-B)."""
    return math.sqrt(noise_w) / np.sqrt(np.asarray(power2) * np.asarray(channel_norm2))


def switching_round(sigma_ch: np.ndarray, required: np.ndarray, *,
                    first_round: int = FIRST_SWITCH_ROUND, per_device: bool = False) -> int:
    """T_th (eq. 23 in online form): before round t >= t0, switch when
    sum_k sigma_ch,k >= sum_k sigma_req,k^[t] (or, with `per_device`, for every k); then
    T_th = t - 1 and no artificial noise is added from round t on. T if it never holds.
    `required` is sigma_req [T, K] = c Delta s_k / eps_k^[t]."""
    rounds = required.shape[0]
    for t in range(first_round, rounds + 1):
        need = required[t - 1]
        if (np.all(sigma_ch >= need) if per_device else sigma_ch.sum() >= need.sum()):
            return t - 1
    return rounds


def contraction(*, mu: float, smooth: float, lr: float, dissimilarity: float,
                weights: np.ndarray) -> float:
    """A = 1 + mu L lam^2 delta^2 sum_k G_k^2 - 2 lam mu (eq. 24); A < 1 iff
    lam < 2 / (L delta^2 sum_k G_k^2) (eqs. 25-27)."""
    return 1.0 + mu * smooth * lr ** 2 * dissimilarity ** 2 * float(np.sum(weights ** 2)) \
        - 2.0 * lr * mu


def p1_objective(power2: np.ndarray, *, channel_norm2: np.ndarray, weights: np.ndarray,
                 sensitivity: np.ndarray, eps: np.ndarray, contraction_a: float,
                 noise_w: float, delta: float, first_round: int = FIRST_SWITCH_ROUND,
                 reversed_weights: bool = False) -> tuple[float, int]:
    """(L(p), T_th(p)) of P1 (eq. 28) with the common factor L lam^2 / 2 and the p-free A^T
    term dropped, as the paper does:

    L = (1 - A^T)/(1 - A) sum_k G_k^2 sigma_n0^2 / (||h_k||^2 p_k^2)
        + sum_{m=1}^{T_th} A^{m-1} sum_k 2 G_k^2 Delta s_k^2 ln(1.25/delta) / (eps_k^[m])^2,

    m = 1..T_th with weight A^{m-1} (eps^[0] is undefined); `reversed_weights`
    is the ablation A^{T-m}."""
    rounds = eps.shape[0]
    c2 = 2.0 * math.log(1.25 / delta)
    with np.errstate(divide="ignore"):
        required = math.sqrt(c2) * sensitivity / eps                        # [T, K]
    sigma_ch = channel_std(power2, channel_norm2, noise_w)
    t_th = switching_round(sigma_ch, required, first_round=first_round)
    a = contraction_a
    geometric = rounds if abs(1.0 - a) < 1e-15 else (1.0 - a ** rounds) / (1.0 - a)
    channel_term = geometric * float(np.sum(weights ** 2 * sigma_ch ** 2))
    m = np.arange(1, t_th + 1)
    decay = a ** (rounds - m) if reversed_weights else a ** (m - 1)
    artificial = float(np.sum(decay[:, None] * weights ** 2 * c2 * sensitivity ** 2
                              / eps[:t_th] ** 2)) if t_th else 0.0
    return channel_term + artificial, t_th


def average_power(*, p_min: float, p_max: float, devices: int) -> np.ndarray:
    """p_bar_k^2 = (P_min + P_max) / (2K) for every device (our reading of the average power)."""
    return np.full(devices, (p_min + p_max) / (2.0 * devices))


def project_power(power2: np.ndarray, *, p0: float, p_min: float, p_max: float,
                  iterations: int = 10) -> np.ndarray:
    """Onto P_min <= sum_k p_k^2 <= P_max with p_k^2 <= P_0 (eqs. 5, 28c): scale down
    to P_max, or scale up to P_min and clip at P_0, repeated at most `iterations` times."""
    p = np.minimum(np.asarray(power2, dtype=np.float64), p0)
    for _ in range(iterations):
        total = p.sum()
        if total > p_max:
            p = p * (p_max / total)
        elif total < p_min:
            p = np.minimum(p * (p_min / total), p0)
        else:
            break
    return p


def action_to_power(action: np.ndarray, *, p0: float, floor_fraction: float) -> np.ndarray:
    """a in [0, 1]^K -> p_k^2 = P_floor + a_k (P_0 - P_floor), P_floor = floor_fraction P_0
    (eq. 30)."""
    floor = floor_fraction * p0
    return floor + np.clip(action, 0.0, 1.0) * (p0 - floor)


def line_search(objective, *, p0: float, p_min: float, p_max: float, devices: int,
                points: int = 50) -> tuple[np.ndarray, float]:
    """Best uniform power over `points` values in [P_min/K, P_0] (a sanity check of DDPG)."""
    best, best_value = None, math.inf
    for level in np.linspace(p_min / devices, p0, points):
        power = project_power(np.full(devices, level), p0=p0, p_min=p_min, p_max=p_max)
        value = objective(power)
        if value < best_value:
            best, best_value = power, value
    return best, best_value


def random_search(objective, *, p0: float, p_min: float, p_max: float, devices: int,
                  samples: int, floor_fraction: float, generator: np.random.Generator
                  ) -> tuple[np.ndarray, float]:
    """Best of `samples` uniform random feasible actions (a sanity check of DDPG)."""
    best, best_value = None, math.inf
    for action in generator.random((samples, devices)):
        power = project_power(action_to_power(action, p0=p0, floor_fraction=floor_fraction),
                              p0=p0, p_min=p_min, p_max=p_max)
        value = objective(power)
        if value < best_value:
            best, best_value = power, value
    return best, best_value
