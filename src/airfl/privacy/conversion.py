"""From an RDP curve to (eps, delta)-DP, returning the value and the order that achieved it.

Each public function accepts ``rdp`` of shape ``[K]`` (returns floats) or ``[..., K]``
(returns arrays over the leading axes, e.g. one row per training round). Orders may include
1 (its value is only used by the KL bound of the improved conversions) and inf.

References
----------
[M17]    I. Mironov, "Rényi Differential Privacy", CSF 2017, arXiv:1702.07476 (v3).
[CKS20]  C. Canonne, G. Kamath, T. Steinke, "The Discrete Gaussian for Differential Privacy",
         NeurIPS 2020, arXiv:2004.00010 (v4), Prop. 12.
[BBGHS20] B. Balle, G. Barthe, M. Gaboardi, J. Hsu, T. Sato, "Hypothesis Testing
         Interpretations and Rényi Differential Privacy", AISTATS 2020, arXiv:2001.05990, Eq. (20).
"""

from __future__ import annotations

from typing import Iterable

import numpy as np

#: Orders at or below this are excluded from the improved bounds: they are numerically unstable
#: as alpha -> 1 and never the minimiser in practice (same cut-off as dp_accounting).
MIN_IMPROVED_ORDER = 1.01


def _inputs(orders: Iterable[float], rdp) -> tuple[np.ndarray, np.ndarray]:
    """Orders (>= 1) and RDP values (negatives, i.e. rounding noise, clipped to 0)."""
    alphas = np.asarray(list(orders) if not isinstance(orders, np.ndarray) else orders,
                        dtype=np.float64).reshape(-1)
    values = np.asarray(rdp, dtype=np.float64)
    if values.ndim == 0 or values.shape[-1] != alphas.size or alphas.size == 0:
        raise ValueError(f"rdp must end in one value per order: rdp {values.shape}, "
                         f"{alphas.size} orders")
    if np.isnan(alphas).any() or (alphas < 1).any():
        raise ValueError("orders must all be >= 1")
    if np.isnan(values).any():
        raise ValueError("rdp must not contain NaN")
    return alphas, np.maximum(values, 0.0)


def _best(alphas: np.ndarray, per_order: np.ndarray, floor: float, cap: float):
    """Min over the last axis, clipped to [floor, cap], with the order achieving it.

    NaN (an undefined bound, e.g. 0 * inf at order 1) counts as "no bound" (inf).
    """
    per_order = np.where(np.isnan(per_order), np.inf, per_order)
    k = np.argmin(per_order, axis=-1)
    value = np.clip(np.take_along_axis(per_order, k[..., None], axis=-1)[..., 0], floor, cap)
    order = alphas[k]
    if value.ndim == 0:
        return float(value), float(order)
    return value, order


def _check_delta(delta: float) -> float:
    if not delta >= 0:
        raise ValueError(f"delta must be >= 0, got {delta}")
    return float(delta)


def _eps_for_zero_delta(alphas: np.ndarray, r: np.ndarray):
    """delta = 0 is only reachable when nothing leaked: eps 0 if all rdp == 0, else inf."""
    value = np.where((r == 0).all(axis=-1), 0.0, np.inf)
    order = np.full(value.shape, alphas[0])
    return (float(value), float(order)) if value.ndim == 0 else (value, order)


def eps_from_rdp_classic(orders: Iterable[float], rdp, delta: float):
    """(eps, order): eps = min_a rdp_a + log(1/delta) / (a - 1)   ([M17] Prop. 3).

    An order with rdp 0 (after clipping rounding negatives) gives eps 0: a zero Rényi
    divergence means identical output distributions, e.g. a round that leaked nothing.
    """
    alphas, r = _inputs(orders, rdp)
    delta = _check_delta(delta)
    if delta == 0:
        return _eps_for_zero_delta(alphas, r)
    with np.errstate(divide="ignore", invalid="ignore"):
        per_order = r + np.log(1.0 / delta) / (alphas - 1.0)  # [M17] Prop. 3
    per_order = np.where(np.isinf(alphas), r, per_order)  # limit a -> inf: eps = rdp_inf
    return _best(alphas, np.where(r == 0, 0.0, per_order), 0.0, np.inf)


def eps_from_rdp(orders: Iterable[float], rdp, delta: float):
    """(eps, order) by the improved conversion of [CKS20] Prop. 12 / [BBGHS20] Eq. (20).

    eps_a = rdp_a + log1p(-1/a) - (log(delta) + log(a)) / (a - 1), for a > 1.01;
    eps_a = 0 where the KL bound delta >= sqrt(1 - exp(-rdp_a)) already holds;
    negative rdp (rounding) counts as 0, inf rdp gives inf, the result is clipped at 0.
    Never larger than :func:`eps_from_rdp_classic` on the same orders (for a > 1.01).
    """
    alphas, r = _inputs(orders, rdp)
    delta = _check_delta(delta)
    if delta == 0:
        return _eps_for_zero_delta(alphas, r)
    with np.errstate(divide="ignore", invalid="ignore"):
        per_order = (r + np.log1p(-1.0 / alphas)
                     - (np.log(delta) + np.log(alphas)) / (alphas - 1.0))  # [CKS20] Prop. 12
    per_order = np.where(np.isinf(alphas), r, per_order)  # limit a -> inf: eps = rdp_inf
    per_order = np.where(alphas > MIN_IMPROVED_ORDER, per_order, np.inf)
    kl_enough = delta**2 + np.expm1(-r) > 0  # sqrt(1 - exp(-KL)) <= delta  [CKS20] Prop. 12
    return _best(alphas, np.where(kl_enough, 0.0, per_order), 0.0, np.inf)


def _check_eps(eps: float) -> float:
    if not eps >= 0:
        raise ValueError(f"eps must be >= 0, got {eps}")
    return float(eps)


def _log_delta_pure(r: np.ndarray, eps: float) -> np.ndarray:
    """At order inf, rdp is a pure-DP level: delta = 0 if eps >= rdp, else no bound."""
    return np.where(eps >= r, -np.inf, np.inf)


def delta_from_rdp_classic(orders: Iterable[float], rdp, eps: float):
    """(delta, order): delta = min_a exp((a - 1)(rdp_a - eps))   ([M17] Prop. 3 solved for delta)."""
    alphas, r = _inputs(orders, rdp)
    eps = _check_eps(eps)
    with np.errstate(invalid="ignore"):
        log_delta = (alphas - 1.0) * (r - eps)  # [M17] Prop. 3
    log_delta = np.where(np.isinf(alphas), _log_delta_pure(r, eps), log_delta)
    log_delta, order = _best(alphas, log_delta, -np.inf, 0.0)
    return np.exp(log_delta) if np.ndim(log_delta) else float(np.exp(log_delta)), order


def delta_from_rdp(orders: Iterable[float], rdp, eps: float):
    """(delta, order) by the improved conversion, as dp_accounting's ``compute_delta``.

    log delta_a = (a - 1)(rdp_a - eps + log1p(-1/a)) - log(a) for a > 1.01 ([CKS20] Prop. 12),
    and delta_a <= sqrt(1 - exp(-rdp_a)) at every order (KL bound); min over orders, capped at 1.
    """
    alphas, r = _inputs(orders, rdp)
    eps = _check_eps(eps)
    with np.errstate(divide="ignore", invalid="ignore"):
        log_kl = np.where(r > 0, 0.5 * np.log1p(-np.exp(-r)), -np.inf)  # KL bound
        log_rdp = ((alphas - 1.0) * (r - eps + np.log1p(-1.0 / alphas))
                   - np.log(alphas))  # [CKS20] Prop. 12
    log_rdp = np.where(np.isinf(alphas), _log_delta_pure(r, eps), log_rdp)
    log_rdp = np.where(alphas > MIN_IMPROVED_ORDER, log_rdp, np.inf)
    log_delta, order = _best(alphas, np.minimum(log_kl, log_rdp), -np.inf, 0.0)
    return np.exp(log_delta) if np.ndim(log_delta) else float(np.exp(log_delta)), order
