"""User-level privacy of AirFL-DP: the paper's converging RDP bound and its (eps, delta) form.

Paper: Liang, Wen, Wu, Xing, Letaief, "Differential Privacy as a Perk: Federated Learning over
Multiple-Access Fading Channels with a Multi-Antenna Base Station"
(shared/papers/dp_perk_airfl.txt), Sec. III, App. B (Proposition III.1) and App. C
(Corollary III.1). 

Pure numpy; no state. Under perfect channel inversion ``s_i = 1/(w^H h_i)`` (the only transceiver
the paper optimises, Sec. IV-B) the per-round quantities of (22) reduce to ``phi_t = 1/q_t^2`` with
``q_t = ||w^(t)||`` and ``kappa^(t) = eta L K/(r n)``, so everything here is a function of the
norms ``q`` [T] and the constants (r, c, sigma^2, delta, and B for a finite domain).

Notation: ``K_rdp`` is the slope of the RDP curve, ``eps'(alpha) = alpha K_rdp`` (21), i.e.
``K_rdp = (2 r c^2/sigma^2) min{sum_t phi_t, Phi}``; ``L_delta = ln(1/delta)``.

Decisions (paper, equation, why):

* ``c_delta`` of (23) is never given. We take the smallest admissible value
  ``c_delta = 2 eps / L_delta`` (App. C requires ``eps' = eps/2 <= c_delta L_delta / 4``), which
  turns (23) into ``eps^2 - 2 K_rdp eps - 4 L_delta K_rdp = 0`` (:func:`eps_paper`).
* Noise convention (our reading of (8)-(10)): the receiver keeps ``Re(w^H n)``, variance
  ``||w||^2 sigma^2 / 2``, while the Gaussian step (57) of the proof uses ``||w||^2 sigma^2``.
  ``convention="paper"`` accounts with ``sigma^2`` as printed (all figures); ``"strict"`` uses the
  variance the simulator really adds (:func:`accounting_sigma2`).
* The proof's constants (sensitivity 2c, Bernoulli(r) subsampling, (1+eta L)^Q) are implemented as
  stated, not "fixed". ``Q`` must be the number of local steps actually run (the epochs mode runs
  600).
* ``accountant="pabi_all_tau"`` keeps the min over every start round tau of (66) instead of the
  paper's tau = T-1 only; ``"paper"`` is the default.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from airfl.privacy.events import GaussianEvent

__all__ = [
    "ACCOUNTANTS", "CONVENTIONS", "NOISE_MODELS", "PrivacyReport", "accounting_sigma2",
    "accumulated_phi", "budget_A", "c_delta_min", "cumulative_phi", "domain_constant",
    "eps_at_order", "eps_optimal", "eps_paper", "gaussian_event", "log_inv_delta", "paper_order",
    "phi_from_gains", "phi_perfect_inversion", "privacy_report", "rdp_budget", "rdp_coefficient",
    "rdp_slope", "simulated_gaussian_event",
]

ACCOUNTANTS = ("paper", "pabi_all_tau")
CONVENTIONS = ("paper", "strict")
NOISE_MODELS = ("complex_real_part", "real_full")


# ------------------------------------------------------------------------------------------
# Validation helpers
# ------------------------------------------------------------------------------------------

def _positive(value: float, name: str) -> float:
    x = float(value)
    if not x > 0 or math.isnan(x):
        raise ValueError(f"{name} must be > 0, got {value!r}")
    return x


def _delta(delta: float) -> float:
    d = float(delta)
    if not 0.0 < d < 1.0:
        raise ValueError(f"delta must satisfy 0 < delta < 1, got {delta!r}")
    return d


def _norms(q: Any, name: str = "q") -> np.ndarray:
    arr = np.asarray(q, dtype=np.float64).reshape(-1)
    if arr.size == 0 or not np.all(arr > 0) or not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be a non-empty array of finite values > 0")
    return arr


def _choice(value: str, allowed: tuple[str, ...], name: str) -> str:
    if value not in allowed:
        raise ValueError(f"{name} must be one of {allowed}, got {value!r}")
    return value


# ------------------------------------------------------------------------------------------
# Per-round quantities (22), (54), (59)
# ------------------------------------------------------------------------------------------

def log_inv_delta(delta: float) -> float:
    """``L_delta = ln(1/delta)`` (the paper writes log; we read the natural log)."""
    return -math.log(_delta(delta))


def phi_perfect_inversion(q: Any) -> np.ndarray:
    """``phi_t = 1/q_t^2``: (22) with ``|w^H h_i s_i| = 1`` for every active device (Sec. IV-B)."""
    return 1.0 / _norms(q) ** 2  # (22) under s_i = 1/(w^H h_i)


def phi_from_gains(w, channels, scalars) -> float:
    """``phi_t = max_i |w^H h_i s_i|^2 / ||w||^2`` for any transceiver (paper eq. 22).

    ``w`` [m], ``channels`` [m, K] (columns h_i), ``scalars`` [K]; torch tensors or numpy arrays.
    """
    w, h, s = (np.asarray(x.detach().cpu() if hasattr(x, "detach") else x) for x in
               (w, channels, scalars))
    gains = (np.conj(w) @ h) * s  # g_i = w^H h_i s_i  (22)
    return float(np.max(np.abs(gains) ** 2) / np.vdot(w, w).real)  # (22)


def accounting_sigma2(sigma2: float, noise_model: str = "complex_real_part",
                      convention: str = "paper") -> float:
    """The sigma^2 the accountant divides by.

    ``paper``: sigma^2 as in (21)-(23). ``strict``: the variance per real coordinate the receiver
    really adds, relative to the proof's ``||w||^2 sigma^2``: sigma^2/2 for ``complex_real_part``
    (Re of CN noise), sigma^2 for ``real_full``.
    """
    s2 = _positive(sigma2, "sigma2")
    _choice(noise_model, NOISE_MODELS, "noise_model")
    if _choice(convention, CONVENTIONS, "dp_noise_convention") == "paper":
        return s2
    return s2 / 2.0 if noise_model == "complex_real_part" else s2  # Re(CN(0, v)) ~ N(0, v/2)


def domain_constant(lr: float, smooth_L: float, local_steps: int, sample_ratio: float,
                    n_devices: int, domain_D: float, clip: float,
                    kappa: float | None = None) -> float:
    """``B = (1 + (1+kappa)^Q sqrt(r) D n / (2 eta c))^2`` (App. D; (22) with perfect inversion).

    ``Phi = B / q_{T-1}^2`` then. ``kappa`` defaults to ``eta L`` (= kappa_max of (59) when
    K = r n devices invert perfectly). ``local_steps`` is Q, the local steps actually run (600 in
    the epochs mode, not 5). ``domain_D = inf`` gives ``B = inf`` (the linear bound only).
    """
    eta = _positive(lr, "lr")
    L = _positive(smooth_L, "smooth_L")
    r = _positive(sample_ratio, "sample_ratio")
    c = _positive(clip, "clip")
    D = _positive(domain_D, "domain_D")
    if int(local_steps) < 1:
        raise ValueError(f"local_steps must be >= 1, got {local_steps!r}")
    if r > 1:
        raise ValueError(f"sample_ratio must be <= 1, got {sample_ratio!r}")
    if math.isinf(D):
        return math.inf
    k = eta * L if kappa is None else float(kappa)
    growth = math.exp(int(local_steps) * math.log1p(k))  # (1 + kappa_max)^Q, overflow-safe
    return (1.0 + growth * math.sqrt(r) * D * n_devices / (2.0 * eta * c)) ** 2  # App. D, B


# ------------------------------------------------------------------------------------------
# Accumulated bound (21)-(22), (66)
# ------------------------------------------------------------------------------------------

def cumulative_phi(phi: Any, B: float = math.inf, accountant: str = "paper") -> np.ndarray:
    """``min{sum_{t<T'} phi_t, Phi(T')}`` for every horizon T' = 1..T (Prop. III.1, (21)).

    ``paper``: Phi(T') = B phi_{T'-1} (the tau = T'-1 case (67)-(68)). ``pabi_all_tau``: the min of
    (66) over every start round 1 <= tau <= T'-1 with beta^(t) = 1 for t > tau, i.e.
    ``B phi_tau + sum_{tau<t<T'} phi_t``. B = inf gives the linear sum (65).
    """
    p = _norms(phi, "phi")
    _choice(accountant, ACCOUNTANTS, "accountant")
    b = float(B)
    if not b >= 1.0:
        raise ValueError(f"B must be >= 1 (B = (1 + ...)^2), got {B!r}")
    linear = np.cumsum(p)  # (65): tau = 0
    if math.isinf(b):
        return linear
    if accountant == "paper":
        return np.minimum(linear, b * p)  # (21): min{sum phi, Phi}, Phi = B phi_{T'-1}  (68)
    # (66): horizon T' = i + 1 takes min over 1 <= tau <= i of B phi_tau + C_i - C_tau
    shifted = b * p - linear
    shifted[0] = math.inf  # tau = 0 has Xi_0 = 0: that case is the linear term itself (64)
    paper = np.minimum(linear, b * p)  # tau = T'-1 taken directly (no cancellation in C - C)
    return np.minimum(paper, linear + np.minimum.accumulate(shifted))


def accumulated_phi(phi: Any, B: float = math.inf, accountant: str = "paper") -> float:
    """``min{sum_t phi_t, Phi}`` after all T rounds (Prop. III.1, (21)); see
    :func:`cumulative_phi`."""
    return float(cumulative_phi(phi, B, accountant)[-1])


def rdp_coefficient(sample_ratio: float, clip: float, sigma2: float) -> float:
    """``2 r c^2 / sigma^2``: the RDP slope per unit of phi (21), (58) with beta = 1."""
    r = _positive(sample_ratio, "sample_ratio")
    c = _positive(clip, "clip")
    return 2.0 * r * c * c / _positive(sigma2, "sigma2")  # (21)


def rdp_slope(q: Any, sample_ratio: float, clip: float, sigma2: float, B: float = math.inf,
              accountant: str = "paper") -> float:
    """``K_rdp = (2 r c^2/sigma^2) min{sum_t phi_t, Phi}``, so that
    ``eps'(alpha) = alpha K_rdp`` (21)."""
    return rdp_coefficient(sample_ratio, clip, sigma2) * accumulated_phi(
        phi_perfect_inversion(q), B, accountant)  # (21)


def gaussian_event(q_t: float, sample_ratio: float, clip: float, sigma2: float) -> GaussianEvent:
    """Round t as the project's Gaussian event with the same RDP curve as the paper's increment.

    Lemma III.3 with beta = 1: ``eps'_t(alpha) = 2 alpha r c^2 phi_t / sigma^2`` (58); a Gaussian
    mechanism of noise multiplier z has ``alpha / (2 z^2)`` ([M17] Prop. 7), so
    ``z = q_t sigma / (2 c sqrt(r))``. The factor r (the paper's joint-convexity amplification (56))
    is absorbed in z, so composing these events in :class:`airfl.privacy.RdpAccountant` reproduces
    the D = inf bound (65) at every order.
    """
    q = _positive(q_t, "q_t")
    z = q * math.sqrt(_positive(sigma2, "sigma2")) / (
        2.0 * _positive(clip, "clip") * math.sqrt(_positive(sample_ratio, "sample_ratio")))
    return GaussianEvent(z)


def simulated_gaussian_event(q_t: float, clip: float, noise_variance: float) -> GaussianEvent:
    """Round t as the simulator runs it : a Gaussian mechanism on the
    clipped sum with replace-one sensitivity 2c (the proof's, (57)) and the per-coordinate noise
    variance the receiver really adds, ``noise_variance`` = q_t^2 sigma^2 / 2 for
    ``complex_real_part`` (:func:`.uplink.effective_noise_variance`), and NO amplification:
    the simulated round aggregates the plan's fixed set I^(t) of K = r n devices (drawn without
    replacement before training), not a Bernoulli(r) sample, so the factor r of (56)
    does not apply. z = sqrt(noise_variance) / (2c), RDP alpha / (2 z^2) ([M17] Prop. 7).
    Against :func:`gaussian_event` (z = q sigma / (2 c sqrt(r))) the ratio of RDP is 2 / r for
    complex_real_part (2.2 at r = 0.9) under the paper convention."""
    z = math.sqrt(_positive(noise_variance, "noise_variance")) / (2.0 * _positive(clip, "clip"))
    return GaussianEvent(z)  # [M17] Prop. 7 with sensitivity 2c (57), no subsampling


# ------------------------------------------------------------------------------------------
# RDP -> (eps, delta): Lemma III.1, Corollary III.1 (23), App. C
# ------------------------------------------------------------------------------------------

def c_delta_min(eps: float, delta: float) -> float:
    """Smallest admissible ``c_delta = 2 eps / L_delta`` (Cor. III.1 with eps' = eps/2)."""
    return 2.0 * _positive(eps, "eps") / log_inv_delta(delta)


def paper_order(eps: float, delta: float) -> float:
    """The order App. C uses: ``alpha = 1 + 2 L_delta / eps``."""
    return 1.0 + 2.0 * log_inv_delta(delta) / _positive(eps, "eps")


def eps_at_order(K_rdp: float, delta: float, order: float) -> float:
    """Lemma III.1 at one order: ``eps = alpha K_rdp + L_delta / (alpha - 1)`` ([M17] Prop. 3)."""
    a = float(order)
    if not a > 1:
        raise ValueError(f"order must be > 1, got {order!r}")
    return a * float(K_rdp) + log_inv_delta(delta) / (a - 1.0)  # Lemma III.1


def eps_paper(K_rdp: float, delta: float) -> float:
    """(23) with ``c_delta = 2 eps / L_delta``: ``eps = K + sqrt(K^2 + 4 L_delta K)``.

    Squaring (23), ``eps^2 = (2 c_delta + 8) L_delta K / 2 = 2 K eps + 4 L_delta K`` (App. C);
    this is Lemma III.1 at ``alpha = 1 + 2 L_delta / eps``.
    """
    k = float(K_rdp)
    if k < 0 or math.isnan(k):
        raise ValueError(f"K_rdp must be >= 0, got {K_rdp!r}")
    L = log_inv_delta(delta)
    return k + math.sqrt(k * k + 4.0 * L * k)  # (23), positive root


def eps_optimal(K_rdp: float, delta: float) -> tuple[float, float]:
    """(eps, order) of Lemma III.1 minimised over alpha: ``K + 2 sqrt(K L_delta)`` at
    ``alpha* = 1 + sqrt(L_delta / K)`` (diagnostic only, never above
    :func:`eps_paper`)."""
    k = float(K_rdp)
    if k < 0 or math.isnan(k):
        raise ValueError(f"K_rdp must be >= 0, got {K_rdp!r}")
    L = log_inv_delta(delta)
    if k == 0.0:
        return 0.0, math.inf
    return k + 2.0 * math.sqrt(k * L), 1.0 + math.sqrt(L / k)


def rdp_budget(eps: float, delta: float) -> float:
    """The largest ``K_rdp`` with ``eps_paper(K_rdp) <= eps``: ``eps^2 / (2 eps + 4 L_delta)``."""
    e = _positive(eps, "eps")
    return e * e / (2.0 * e + 4.0 * log_inv_delta(delta))  # inverse of (23)


def budget_A(eps: float, delta: float, sample_ratio: float, clip: float, sigma2: float) -> float:
    """DP budget on ``sum_t 1/q_t^2`` (34): ``A = eps^2 sigma^2 / ((2 c_delta + 8) L_delta r c^2)``.

    With ``c_delta = 2 eps/L_delta`` this is ``A = sigma^2 K_max / (2 r c^2)``,
    ``K_max = rdp_budget(eps, delta)``.
    """
    r = _positive(sample_ratio, "sample_ratio")
    c = _positive(clip, "clip")
    s2 = _positive(sigma2, "sigma2")
    cd = c_delta_min(eps, delta)
    return eps * eps * s2 / ((2.0 * cd + 8.0) * log_inv_delta(delta) * r * c * c)  # (34)


# ------------------------------------------------------------------------------------------
# A stored report
# ------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class PrivacyReport:
    """Achieved privacy of one allocation ``q`` [T] (Prop. III.1 + Cor. III.1)."""

    rounds: int
    sum_phi: float               # sum_t 1/q_t^2
    accumulated_phi: float       # min{sum_t phi_t, Phi}
    K_rdp: float                 # eps'(alpha) = alpha * K_rdp
    eps_paper: float             # (23) with c_delta = 2 eps / L_delta
    eps_optimal: float           # Lemma III.1 at the optimal order
    order_paper: float
    order_optimal: float
    eps_tilde_paper: float       # eps / sqrt(d)
    eps_tilde_optimal: float
    delta: float
    domain_B: float
    accountant: str
    sigma2_accounted: float

    def to_dict(self) -> dict[str, Any]:
        return {k: ("inf" if isinstance(v, float) and math.isinf(v) else v)
                for k, v in asdict(self).items()}


def privacy_report(q: Any, sample_ratio: float, clip: float, sigma2: float, delta: float,
                   dim: int, B: float = math.inf, accountant: str = "paper") -> PrivacyReport:
    """The (eps, delta) that norms ``q`` achieve under (21)-(23); ``sigma2`` as accounted (the
    noise convention above)."""
    phi = phi_perfect_inversion(q)
    acc = accumulated_phi(phi, B, accountant)
    k = rdp_slope(q, sample_ratio, clip, sigma2, B, accountant)
    e_paper = eps_paper(k, delta)
    e_opt, a_opt = eps_optimal(k, delta)
    root_d = math.sqrt(int(dim))
    return PrivacyReport(
        rounds=int(phi.size), sum_phi=float(phi.sum()), accumulated_phi=acc, K_rdp=k,
        eps_paper=e_paper, eps_optimal=e_opt,
        order_paper=paper_order(e_paper, delta) if e_paper > 0 else math.inf,
        order_optimal=a_opt, eps_tilde_paper=e_paper / root_d, eps_tilde_optimal=e_opt / root_d,
        delta=float(delta), domain_B=float(B), accountant=accountant,
        sigma2_accounted=float(sigma2))
