"""Rényi-DP curves of the Gaussian and Poisson-subsampled Gaussian mechanisms (pure math).

Everything is float64 and evaluated in log space. Orders are RDP orders alpha > 1 (order 1,
the KL divergence, is never needed by the conversions in :mod:`.conversion`); ``inf`` is an
allowed order and costs ``inf`` unless the mechanism leaks nothing.

References
----------
[M17]   I. Mironov, "Rényi Differential Privacy", CSF 2017, arXiv:1702.07476 (v3).
[MTZ19] I. Mironov, K. Talwar, L. Zhang, "Rényi Differential Privacy of the Sampled Gaussian
        Mechanism", arXiv:1908.10530 (2019).
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Iterable, Sequence

import numpy as np

#: The RDP orders of dp_accounting 0.6's ``DEFAULT_RDP_ORDERS``, value for value:
#: 1.1, 1.2, ..., 10.9 (step 0.1, 99 fractional-or-integer orders), the integers 11..63, and
#: 128, 256, 512, 1024 (156 orders). Identical orders make our epsilons directly comparable.
DEFAULT_ORDERS: tuple[float, ...] = tuple(
    [1 + x / 10.0 for x in range(1, 100)] + [float(a) for a in range(11, 64)]
    + [128.0, 256.0, 512.0, 1024.0]
)

#: Cap on the number of terms of the fractional-order series (as dp_accounting); an order
#: whose series has not converged by then is given RDP ``inf``, i.e. excluded from the min.
MAX_FRACTIONAL_TERMS = 1000


def as_orders(orders: Iterable[float]) -> np.ndarray:
    """Validated 1-D float64 array of RDP orders, every one > 1 (inf allowed)."""
    arr = np.asarray(list(orders) if not isinstance(orders, np.ndarray) else orders,
                     dtype=np.float64).reshape(-1)
    if arr.size == 0:
        raise ValueError("orders must not be empty")
    if np.isnan(arr).any() or (arr <= 1).any():
        raise ValueError(f"orders must all be > 1 (inf allowed), got min {np.nanmin(arr)}")
    return arr


def _check_noise(noise_multiplier: float) -> float:
    """Noise multiplier as float, >= 0 (0: no noise, infinite leak; inf: no leak)."""
    sigma = float(noise_multiplier)
    if math.isnan(sigma) or sigma < 0:
        raise ValueError(f"noise_multiplier must be >= 0, got {noise_multiplier}")
    return sigma


def rdp_gaussian(noise_multiplier: float, orders: Iterable[float]) -> np.ndarray:
    """RDP of the Gaussian mechanism with std = noise_multiplier * L2 sensitivity.

    eps(alpha) = alpha / (2 sigma^2)   ([M17] Prop. 7 with sensitivity 1).
    sigma = inf gives 0 at every order (no leak); sigma = 0 gives inf.
    """
    alphas = as_orders(orders)
    sigma = _check_noise(noise_multiplier)
    if math.isinf(sigma):
        return np.zeros_like(alphas)
    with np.errstate(divide="ignore"):
        return alphas / (2.0 * sigma**2)  # [M17] Prop. 7


def _log_comb(n: np.ndarray | float, k: np.ndarray | float) -> np.ndarray:
    """log |binom(n, k)| for real n via log-gamma (the generalised binomial of [MTZ19] Sec. 3.3)."""
    from scipy import special      # on first use: a job of Gaussian events never needs scipy
    return special.gammaln(n + 1) - special.gammaln(k + 1) - special.gammaln(n - k + 1)


def _log_expm1(x: np.ndarray) -> np.ndarray:
    """log(exp(x) - 1) for x > 0 without overflow or cancellation."""
    return np.where(x > 30.0, x + np.log1p(-np.exp(-np.minimum(x, 700.0))),
                    np.log(np.expm1(np.minimum(x, 30.0))))


def _log_a_int(q: float, sigma: float, alpha: int) -> float:
    """log A_alpha for integer alpha >= 2 and 0 < q < 1 ([MTZ19] Sec. 3.3, integer case).

    A_alpha = sum_i binom(alpha, i) q^i (1-q)^(alpha-i) exp((i^2 - i) / (2 sigma^2)),
    a binomial expectation of exp(.). Written as 1 + sum_{i>=2} pmf_i * expm1(.), whose terms
    are all positive, so tiny RDP values (large sigma, small q) keep full relative precision.
    """
    from scipy import special      # imported on first use (see _log_comb)
    i = np.arange(2, alpha + 1, dtype=np.float64)
    log_pmf = _log_comb(float(alpha), i) + i * math.log(q) + (alpha - i) * math.log1p(-q)
    log_excess = special.logsumexp(log_pmf + _log_expm1((i * i - i) / (2.0 * sigma**2)))
    return float(np.logaddexp(0.0, log_excess))  # log(1 + (A_alpha - 1)), [MTZ19] Sec. 3.3


def _frac_series_terms(q: float, sigma: float, alphas: np.ndarray, n: int):
    """Log of the first n terms of the two series of [MTZ19] Sec. 3.3 (rows: orders).

    A_alpha = A_0 + A_1, the integrals over (-inf, z0] and [z0, inf) with
    z0 = sigma^2 log(1/q - 1) + 1/2; term i of A_0 is
    |binom(alpha,i)| q^i (1-q)^(alpha-i) exp((i^2-i)/(2 sigma^2)) Phi((z0 - i)/sigma), and of A_1
    the same with i <-> j = alpha - i in the powers and exponent and Phi((j - z0)/sigma).
    Taking |binom| (as dp_accounting and Opacus do) keeps every term positive: an upper bound.
    """
    from scipy import special      # imported on first use (see _log_comb)
    i = np.arange(n, dtype=np.float64)[None, :]
    a = alphas[:, None]
    j = a - i
    z0 = sigma**2 * math.log(1.0 / q - 1.0) + 0.5
    log_q, log_1mq = math.log(q), math.log1p(-q)
    log_coef = _log_comb(a, i)
    log_s0 = (log_coef + i * log_q + j * log_1mq + (i * i - i) / (2.0 * sigma**2)
              + special.log_ndtr((z0 - i) / sigma))  # [MTZ19] Sec. 3.3, A_0 series
    log_s1 = (log_coef + j * log_q + i * log_1mq + (j * j - j) / (2.0 * sigma**2)
              + special.log_ndtr((j - z0) / sigma))  # [MTZ19] Sec. 3.3, A_1 series
    return log_s0, log_s1


def _first_converged_total(log_s0: np.ndarray, log_s1: np.ndarray) -> np.ndarray:
    """Partial sum log(A_0 + A_1) at the first term where both series have converged.

    Stopping rule of dp_accounting's ``_compute_log_a_frac`` (kept so the two agree to
    rounding): both terms decreasing and each below exp(-30) times the running total.
    Rows that never stop within the given terms are NaN.
    """
    total = np.logaddexp(np.logaddexp.accumulate(log_s0, axis=1),
                         np.logaddexp.accumulate(log_s1, axis=1))
    stop = np.zeros(total.shape, dtype=bool)
    stop[:, 1:] = (log_s0[:, 1:] < log_s0[:, :-1]) & (log_s1[:, 1:] < log_s1[:, :-1])
    stop &= np.maximum(log_s0, log_s1) < total - 30.0
    first = stop.argmax(axis=1)
    picked = total[np.arange(total.shape[0]), first]
    return np.where(stop.any(axis=1), picked, np.nan)


def _log_a_frac(q: float, sigma: float, alphas: np.ndarray) -> np.ndarray:
    """log A_alpha for fractional alphas and 0 < q < 1 ([MTZ19] Sec. 3.3, fractional case).

    Sums more terms only for the orders that need them (64, then 256, then the cap);
    an order that has not converged within ``MAX_FRACTIONAL_TERMS`` terms gets inf.
    """
    out = np.full(alphas.shape, np.nan)
    for n in (64, 256, MAX_FRACTIONAL_TERMS):
        todo = np.isnan(out)
        if not todo.any():
            break
        with np.errstate(over="ignore", invalid="ignore"):
            out[todo] = _first_converged_total(*_frac_series_terms(q, sigma, alphas[todo], n))
    return np.where(np.isnan(out), np.inf, out)


@lru_cache(maxsize=4096)
def _rdp_subsampled_cached(q: float, sigma: float, orders: tuple[float, ...]) -> np.ndarray:
    """RDP vector for 0 < q < 1 and 0 < sigma < inf (cached: schemes repeat the same noise)."""
    alphas = np.array(orders)
    out = np.full(alphas.shape, np.inf)
    is_int = np.isfinite(alphas) & (alphas == np.floor(alphas))
    is_frac = np.isfinite(alphas) & ~is_int
    for k in np.flatnonzero(is_int):
        out[k] = _log_a_int(q, sigma, int(alphas[k])) / (alphas[k] - 1.0)  # [MTZ19] Sec. 3.3
    if is_frac.any():
        out[is_frac] = _log_a_frac(q, sigma, alphas[is_frac]) / (alphas[is_frac] - 1.0)
    out.flags.writeable = False
    return out


def rdp_subsampled_gaussian(q: float, noise_multiplier: float,
                            orders: Iterable[float]) -> np.ndarray:
    """RDP of the Poisson-subsampled Gaussian mechanism (add/remove-one neighbours).

    eps(alpha) = log(A_alpha) / (alpha - 1) with A_alpha of [MTZ19] Sec. 3.3: the exact
    binomial series for integer alpha, the two erfc-weighted series for fractional alpha.
    Special cases: q = 0 or sigma = inf -> 0; q = 1 -> Gaussian ([M17] Prop. 7);
    sigma = 0 or alpha = inf -> inf.
    """
    alphas = as_orders(orders)
    q = float(q)
    sigma = _check_noise(noise_multiplier)
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"sampling_rate must satisfy 0 <= q <= 1, got {q}")
    if q == 0.0 or math.isinf(sigma):
        return np.zeros_like(alphas)
    if q == 1.0:
        return rdp_gaussian(sigma, alphas)
    if sigma == 0.0:
        return np.full(alphas.shape, np.inf)
    return np.array(_rdp_subsampled_cached(q, sigma, tuple(alphas.tolist())))


def compose(rdp_vectors: Sequence[np.ndarray] | np.ndarray,
            counts: Sequence[int] | None = None) -> np.ndarray:
    """RDP of a sequential composition: sum_k counts_k * rdp_k ([M17] Prop. 1).

    A count of 0 contributes nothing even where its curve is inf.
    """
    vectors = np.asarray(rdp_vectors, dtype=np.float64)
    if vectors.ndim != 2:
        raise ValueError(f"rdp_vectors must be a list of equal-length vectors, got {vectors.shape}")
    n = np.ones(vectors.shape[0]) if counts is None else np.asarray(counts, dtype=np.float64)
    if n.shape != (vectors.shape[0],) or (n < 0).any():
        raise ValueError("counts must be one non-negative number per rdp vector")
    with np.errstate(invalid="ignore"):
        scaled = np.where(n[:, None] > 0, n[:, None] * vectors, 0.0)
    return scaled.sum(axis=0)  # [M17] Prop. 1: RDP adds up under composition
