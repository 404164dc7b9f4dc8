"""LAPA's aggregation weights (paper Sec. III-C): the Wasserstein softmax (eqs. 20-21,
computed by the core's heterogeneity module), SER-threshold device selection (eq. 22), and the
benchmarks FedAvg (Benchmark 1) and BEDA = FedAdp (Benchmark 2, ref. [36]).
"""

from __future__ import annotations

import numpy as np

from airfl.data.heterogeneity import wasserstein_softmax_weights

from .mechanism import gompertz


def selected_devices(snr: np.ndarray, threshold: float | None) -> np.ndarray:
    """gamma_k >= gamma_th (eq. 22); None selects everyone. An empty set keeps the single best
    device (our reading, the paper does not say), so a round always aggregates
    something: `selection_fallback` tells when that happened (the design records it)."""
    if threshold is None:
        return np.ones(snr.size, dtype=bool)
    mask = snr >= threshold
    if not mask.any():
        mask[int(np.argmax(snr))] = True
    return mask


def selection_fallback(snr: np.ndarray, threshold: float | None) -> bool:
    """Whether no device meets gamma_k >= gamma_th (eq. 22), so that `selected_devices` keeps
    the single best device, which then trains alone."""
    return threshold is not None and not bool(np.any(snr >= threshold))


def selection_weights(distances: np.ndarray, sizes: np.ndarray, mask: np.ndarray, *,
                      renormalize: bool) -> np.ndarray:
    """Eq. 22: G_k = 1{gamma_k >= gamma_th} |D_k| e^{1/W_k} / sum_j |D_j| e^{1/W_j}.

    The paper keeps the full-K denominator (weights sum to < 1: an implicit step shrink); with
    `renormalize` the softmax runs over the selected set instead so that sum_k G_k = 1, as eq. 2
    requires (both readings are offered: `lapa.training.renormalize`)."""
    if renormalize:
        return wasserstein_softmax_weights(distances, sizes, mask)
    return wasserstein_softmax_weights(distances, sizes) * mask


def fedadp_weights(sizes: np.ndarray, smoothed_angle: np.ndarray, alpha: float) -> np.ndarray:
    """FedAdp (Wu & Wang; LAPA Benchmark 2): G_k = |D_k| e^{f(theta~_k)} /
    sum_j |D_j| e^{f(theta~_j)} with f the Gompertz map of eq. 15 (alpha = 5)."""
    logits = np.log(np.asarray(sizes, dtype=np.float64)) + gompertz(smoothed_angle, alpha)
    logits -= logits.max()
    weights = np.exp(logits)
    return weights / weights.sum()
