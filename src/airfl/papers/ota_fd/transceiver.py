"""Knowledge sharing over the air: the per-round transceiver of OTA-FD (Hu, Yan, Zhang,
arXiv:2508.06557, Appendices B-C).

One round, one class k: WD i sends x_i = P1_i sqrt(K) q_i^k + P2_i n_i (n ~ N(0, I_K)), the PS
receives y = sum_i |h_i| x_i + z (z ~ N(0, sigma_n^2 I_K)) and estimates r^k = y / lambda^k.
The signal model is reconstructed [R]: the real-valued equivalent after
phase compensation by conj(h) in P1 (our reading), which matches every appendix formula. All
arrays are float64 numpy; `class_counts` is B_i^k [M, K].
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

SENSITIVITY_MODES = ("paper", "per_class")
AN_MODES = ("none", "full_power")
# diameter^2 / 2 of the set the shared vectors live in: 1 for the simplex of Lemma 1 (two soft
# labels are <= sqrt(2) apart), 2 for the unit l2 ball (FL updates clipped to C, then / C)
SIMPLEX_SPREAD = 1.0
BALL_SPREAD = 2.0


def whole_update_counts(num_devices: int) -> np.ndarray:
    """The divisor D_i = 1 [M, 1] of the FL benchmark's sensitivity, to pass as `class_counts`
    to :func:`privacy_coefficients`, :func:`sensitivity` and :func:`realised_eps` (with
    `BALL_SPREAD`): the accounted sensitivity is 2C, not 2C/B_i.

    Our reading ([R]: Appendix E states the FL benchmark's budgets but not its DP mechanism):
    the code clips each WD's whole local update to C (core `clip_by_norm`, no per-sample
    clipping), so replacing one of WD i's B_i samples can move the clipped update anywhere in the
    ball, by up to its diameter 2C. Lemma 1's division by B_i ((A17)) holds for an average of
    bounded per-sample terms (the soft labels), not for a clipped update, so the noise design
    (lambda_DP of Prop. 1 via rho_i) and the accounting use 2C. Prop. 1's aggregation weights
    stay B_i/B (`class_counts` B_i in :func:`prop1_design`)."""
    return np.ones((int(num_devices), 1))


def privacy_coefficients(*, eps: np.ndarray, delta: np.ndarray, class_counts: np.ndarray,
                         sensitivity_mode: str = "paper", spread: float = SIMPLEX_SPREAD
                         ) -> np.ndarray:
    """rho_i^k [M, K] = spread ln(1/delta_i) / (eps_i^2 D_i^k^2).

    `paper`: D_i^k = B_i (Lemma 1 (A17) divides the sensitivity by B_i; rho_i of Theorem 2 is our
    reconstruction [D/R] from (A17)-(A19)); `per_class`: D_i^k = B_i^k (q_i^k
    averages B_i^k samples, so one sample moves it by up to sqrt(2)/B_i^k). `spread` = diameter^2 / 2:
    1 for Lemma 1's simplex (diameter sqrt(2)); the OTA-FL benchmark shares updates clipped to
    the unit ball (diameter 2): 2, with D_i = 1 (`whole_update_counts`: sensitivity 2C [R])."""
    if sensitivity_mode not in SENSITIVITY_MODES:
        raise ValueError(f"sensitivity_mode must be one of {SENSITIVITY_MODES}, got "
                         f"{sensitivity_mode!r}")
    counts = np.asarray(class_counts, dtype=np.float64)
    denom = counts.sum(axis=1, keepdims=True) * np.ones_like(counts) \
        if sensitivity_mode == "paper" else counts
    eps = np.asarray(eps, dtype=np.float64).reshape(-1, 1)
    delta = np.asarray(delta, dtype=np.float64).reshape(-1, 1)
    with np.errstate(divide="ignore"):
        return np.where(denom > 0, spread * np.log(1.0 / delta) / (eps ** 2 * denom ** 2),
                        0.0)                                     # (A17)-(A19)


def sensitivity(*, h_abs: np.ndarray, p1: np.ndarray, class_counts: np.ndarray, K: int,
                sensitivity_mode: str = "paper", spread: float = SIMPLEX_SPREAD
                ) -> np.ndarray:
    """Delta_i^k [M, K] = sqrt(2K) |h_i P1_i^k| / B_i (Lemma 1, (A17); simplex diameter sqrt(2)),
    or / B_i^k with `per_class` (q_i^k averages B_i^k samples); diameter sqrt(2 spread) (FL
    benchmark: 2; with `whole_update_counts`, 2 sqrt(D) |h_i P1_i|: 2C in the update's units)."""
    counts = np.asarray(class_counts, dtype=np.float64)
    denom = counts.sum(axis=1, keepdims=True) if sensitivity_mode == "paper" else counts
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.sqrt(2.0 * spread * K) * np.abs(h_abs[:, None] * p1) / denom     # (A17)
    return np.where(counts > 0, out, 0.0)


def dp_slack(*, h_abs: np.ndarray, p1: np.ndarray, p2: np.ndarray, sigma_n2: float,
             rho: np.ndarray, T: int, K: int) -> np.ndarray:
    """Theorem 2 (A19) per class [K]: sum_j |h_j P2_j^k|^2 + sigma_n^2 - max_i 4 T K |h_i P1_i^k|^2
    rho_i^k (>= 0: the round's noise gives every WD its (eps_i, delta_i) over T rounds)."""
    received = (np.abs(h_abs[:, None] * p2) ** 2).sum(axis=0) + sigma_n2
    needed = (4.0 * T * K * np.abs(h_abs[:, None] * p1) ** 2 * rho).max(axis=0)
    return received - needed


def dp_ok(*, rtol: float = 1e-9, **kwargs) -> np.ndarray:
    """Theorem 2 holds for every class (up to float rounding, relative to sigma_n^2)."""
    return dp_slack(**kwargs) >= -rtol * kwargs["sigma_n2"]


@dataclass(frozen=True)
class Design:
    """Prop. 1's transceiver of one round: P1, P2 [M, K], lambda [K], case [K] (1: receiver noise
    suffices, 2: DP-limited), nu [K] = per-entry noise variance of r^k, weights c [M, K]."""

    p1: np.ndarray
    p2: np.ndarray
    lam: np.ndarray
    case: np.ndarray
    nu: np.ndarray
    weights: np.ndarray


def class_weights(class_counts: np.ndarray) -> np.ndarray:
    """c_i^k = B_i^k / B^k [M, K]: the unbiasedness condition (A21) (Phi_1 = 0)."""
    counts = np.asarray(class_counts, dtype=np.float64)
    return counts / counts.sum(axis=0, keepdims=True)


def power_limit(*, h_abs: np.ndarray, power: np.ndarray, weights: np.ndarray, K: int) -> np.ndarray:
    """lambda_PA^k = min_i sqrt(K) |h_i| sqrt(P_i) / w_i^k [K] ((A27), Psi_1 with P2 = 0): the
    largest receive scaling at which every WD inverts its channel within its power."""
    with np.errstate(divide="ignore"):
        per_device = np.sqrt(K * power)[:, None] * h_abs[:, None] / weights
    return np.where(weights > 0, per_device, np.inf).min(axis=0)


def dp_level(*, weights: np.ndarray, rho: np.ndarray, T: int) -> np.ndarray:
    """4 T max_i (w_i^k)^2 rho_i^k [K]: the per-entry noise variance of r^k that Theorem 2 needs
    (Prop. 1 Case II; with P2 = 0, lambda_DP = sqrt(sigma_n^2 / this))."""
    return 4.0 * T * (weights ** 2 * rho).max(axis=0)


def prop1_design(*, h_abs: np.ndarray, power: np.ndarray, class_counts: np.ndarray,
                 rho: np.ndarray | None, sigma_n2: float, T: int, K: int,
                 weights: np.ndarray | None = None, an_mode: str = "none") -> Design:
    """Proposition 1 (Appendix C, (A20)-(A28)): P1_i^k = w_i^k lambda^k conj(h_i)/(sqrt(K)|h_i|^2)
    with w = B_i^k/B^k (zero bias), lambda^k = min(lambda_PA, lambda_DP), P2 = 0 (`an_mode: none`,
    the minimum-energy member of the optimal family; Appendix C leaves the member open).

    `an_mode: full_power`: in Case II the member with artificial noise from the WD with the
    most power slack and lambda as large as that WD's power allows ([D]): same nu.
    `rho=None`: no DP constraint (OTA FD without DP, lambda = lambda_PA). `weights`: other
    aggregation weights (e.g. uniform 1/M, step 2's ablation); default B_i^k/B^k."""
    if an_mode not in AN_MODES:
        raise ValueError(f"an_mode must be one of {AN_MODES}, got {an_mode!r}")
    w = class_weights(class_counts) if weights is None else np.asarray(weights, dtype=np.float64)
    power = np.broadcast_to(np.asarray(power, dtype=np.float64), h_abs.shape)
    lam_pa = power_limit(h_abs=h_abs, power=power, weights=w, K=K)
    level = np.zeros(w.shape[1]) if rho is None else dp_level(weights=w, rho=rho, T=T)
    with np.errstate(divide="ignore"):
        lam_dp = np.where(level > 0, np.sqrt(sigma_n2 / level), np.inf)
    case = np.where(lam_pa <= lam_dp, 1, 2)
    lam = np.minimum(lam_pa, lam_dp)
    p2 = np.zeros_like(w)
    if an_mode == "full_power":
        lam, p2 = _full_power_member(h_abs, power, w, level, lam, lam_pa, case, sigma_n2, K)
    p1 = w * lam[None, :] / (np.sqrt(K) * h_abs[:, None])
    noise = sigma_n2 + (np.abs(h_abs[:, None] * p2) ** 2).sum(axis=0)
    return Design(p1=p1, p2=p2, lam=lam, case=case, nu=noise / lam ** 2, weights=w)


def _full_power_member(h_abs, power, w, level, lam, lam_pa, case, sigma_n2, K):
    """Case II with AN: WD j adds |h_j P2_j|^2 = lambda^2 c - sigma_n^2 (c = dp_level), its power
    |P1_j|^2 + |P2_j|^2 <= P_j gives lambda_j^2 (c + w_j^2/K) <= |h_j|^2 P_j + sigma_n^2; the
    largest lambda_j (capped at lambda_PA, the other WDs' limit) is taken. nu = c as for P2 = 0."""
    lam, p2 = lam.copy(), np.zeros_like(w)
    for k in np.flatnonzero(case == 2):
        lam_j = np.sqrt((h_abs ** 2 * power + sigma_n2) / (level[k] + w[:, k] ** 2 / K))
        j = int(np.argmax(lam_j))
        lam[k] = min(lam_pa[k], lam_j[j])
        p2[j, k] = np.sqrt(max(lam[k] ** 2 * level[k] - sigma_n2, 0.0)) / h_abs[j]
    return lam, p2


def receive(*, soft_labels: np.ndarray, h_abs: np.ndarray, design: Design, sigma_n2: float,
            noise: np.ndarray, artificial: np.ndarray) -> np.ndarray:
    """Signal-level OTA aggregation: r^k = (sum_i |h_i| (P1_i^k sqrt(K) q_i^k +
    P2_i^k n_i^k) + z^k) / lambda^k, for soft labels q [M, K, K] (device, class, entry), unit
    normal draws `noise` [K, K] (receiver) and `artificial` [M, K, K]. Returns r [K, K]."""
    K = soft_labels.shape[1]
    sent = design.p1[:, :, None] * np.sqrt(K) * soft_labels + design.p2[:, :, None] * artificial
    y = (h_abs[:, None, None] * sent).sum(axis=0) + np.sqrt(sigma_n2) * noise
    return y / design.lam[:, None]


def receive_fl(*, unit_updates, h_abs: np.ndarray, design: Design, sigma_n2: float, noise,
               dim: int):
    """The FL benchmark's over-the-air aggregation ([R]: Prop. 1 with one "class" of `dim`
    entries, weights B_i/B): WD i sends P1_i sqrt(D) u_i for its update u_i in the unit ball
    (clipped to C, then / C), the PS receives sum_i |h_i| P1_i sqrt(D) u_i + sigma_n z and
    de-scales by lambda: r = sum_i c_i u_i + (sigma_n / lambda) z with c_i = |h_i| P1_i sqrt(D) /
    lambda = B_i/B ((A21), computed from P1). `unit_updates` [M, E] and unit normal `noise` [E]
    (numpy, or torch tensors of one dtype and device: the model's updates)."""
    gain = h_abs * design.p1[:, 0] * np.sqrt(dim) / design.lam[0]
    if hasattr(unit_updates, "new_tensor"):                      # a torch tensor
        gain = unit_updates.new_tensor(gain)
    return gain @ unit_updates + (np.sqrt(sigma_n2) / float(design.lam[0])) * noise


def receive_equivalent(*, soft_labels: np.ndarray, design: Design, noise: np.ndarray
                       ) -> np.ndarray:
    """The nu-level form (exact in distribution when P2 = 0): r^k = sum_i c_i^k q_i^k
    + sqrt(nu^k) xi, xi ~ N(0, I_K)."""
    mean = (design.weights[:, :, None] * soft_labels).sum(axis=0)
    return mean + np.sqrt(design.nu)[:, None] * noise


def realised_eps(*, h_abs: np.ndarray, design: Design, class_counts: np.ndarray, sigma_n2: float,
                 delta: np.ndarray, T: int, K: int, sensitivity_mode: str = "paper",
                 spread: float = SIMPLEX_SPREAD) -> np.ndarray:
    """eps_i of one round by the paper's formula (Wei et al. Thm 1 as in (A18)):
    max_k Delta_i^k sqrt(2 T ln(1/delta_i)) / s^k, s^k = sqrt(sigma_n^2 + sum_j |h_j P2_j^k|^2)
    [M]. The run's eps_i is its maximum over rounds (<= eps_i target for the proposed scheme)."""
    delta_ = sensitivity(h_abs=h_abs, p1=design.p1, class_counts=class_counts, K=K,
                         sensitivity_mode=sensitivity_mode, spread=spread)
    s = np.sqrt(sigma_n2 + (np.abs(h_abs[:, None] * design.p2) ** 2).sum(axis=0))
    factor = np.sqrt(2.0 * T * np.log(1.0 / np.asarray(delta, dtype=np.float64)))
    return (delta_ / s[None, :]).max(axis=1) * np.broadcast_to(factor, h_abs.shape)


def local_dp_std(*, eps: np.ndarray, delta: np.ndarray, class_counts: np.ndarray, T: int,
                 sensitivity_mode: str = "paper") -> np.ndarray:
    """sigma_i^k [M, K] of the digital-FD benchmark with local DP (`fd_digital_ldp`, [R]):
    each WD perturbs its own q_i^k with the Gaussian std of Theorem 2's source (Wei et al. [2],
    as in (A18)) for the sensitivity sqrt(2)/B_i (Lemma 1 without channel scaling; / B_i^k with
    `per_class`): sigma = Delta sqrt(2 T ln(1/delta)) / eps = sqrt(4 T rho)."""
    rho = privacy_coefficients(eps=eps, delta=delta, class_counts=class_counts,
                               sensitivity_mode=sensitivity_mode)
    return np.sqrt(4.0 * T * rho)


def receive_digital(*, soft_labels: np.ndarray, class_counts: np.ndarray, std: np.ndarray,
                    noise: np.ndarray) -> np.ndarray:
    """Digital FD with local DP over orthogonal error-free links ([R]): r^k = sum_i (B_i^k/B^k)
    (q_i^k + sigma_i^k n_i^k), noise [M, K, K] unit normal. Per-entry variance sum_i c_i^2
    sigma_i^2, at least OTA's Case II level max_i c_i^2 4 T rho_i (the shared-noise benefit)."""
    w = class_weights(class_counts)
    return (w[:, :, None] * (soft_labels + std[:, :, None] * noise)).sum(axis=0)
