"""Label heterogeneity of a partition and the aggregation weights derived from it.

LAPA (Sun et al., arXiv:2505.19823, §III-C) measures each device's label skew by the 1-D
Wasserstein distance between its label PMF and the global label PMF (eq. 20) and weights the
aggregation by a softmax of ``ln|D_k| + 1/W_k`` (eq. 21). FedAvg weights by data size.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from airfl.runtime.lazy import lazy_import

from .partition import Partition

stats = lazy_import("scipy.stats")   # ~0.3 s; only the partition stage needs it

__all__ = [
    "W_FLOOR",
    "data_size_weights",
    "label_histograms",
    "label_pmfs",
    "wasserstein_softmax_weights",
    "wasserstein_to_global",
]

#: Floor on W_k in LAPA eq. 21 (our choice): 1/W is capped at 1e6, so W = 0 cannot overflow.
W_FLOOR = 1e-6


def label_histograms(labels: Any, partition: Partition | Sequence[np.ndarray],
                     num_classes: int) -> np.ndarray:
    """Label counts per device, ``[N, C]`` int64 (the one-time upload LAPA's weights need)."""
    lab = np.asarray(labels)
    indices = partition.indices if isinstance(partition, Partition) else list(partition)
    hist = np.zeros((len(indices), int(num_classes)), dtype=np.int64)
    for m, ix in enumerate(indices):
        y = lab[np.asarray(ix, dtype=np.int64)]
        if y.size and (y.min() < 0 or y.max() >= num_classes):
            raise ValueError(f"device {m} has labels outside [0, {num_classes})")
        hist[m] = np.bincount(y, minlength=num_classes)
    return hist


def _check_histograms(histograms: Any) -> np.ndarray:
    h = np.asarray(histograms, dtype=np.float64)
    if h.ndim != 2 or h.shape[1] < 1:
        raise ValueError(f"histograms must be [N, C], got shape {h.shape}")
    if not np.all(np.isfinite(h)) or np.any(h < 0):
        raise ValueError("histograms must be finite and non-negative")
    empty = np.flatnonzero(h.sum(axis=1) == 0)
    if empty.size:
        raise ValueError(f"devices {empty.tolist()} hold no samples: their label PMF is undefined")
    return h


def label_pmfs(histograms: Any) -> np.ndarray:
    """Row-normalised label histograms (each device's empirical label PMF), ``[N, C]``."""
    h = _check_histograms(histograms)
    return h / h.sum(axis=1, keepdims=True)


def wasserstein_to_global(histograms: Any) -> np.ndarray:
    """W1 distance between each device's label PMF and the global label PMF, ``[N]``.

    LAPA eq. 20 with the labels 0..C-1 as points on the real line (ground cost |i - j|; our
    reading, the paper names no ground cost): ``scipy.stats.wasserstein_distance(arange(C),
    arange(C), pmf_k, pmf_G)``, equal to sum_c |CDF_k(c) - CDF_G(c)|. The global PMF is that of the
    union of all devices' data (weighted by count), not a balanced prior.
    """
    h = _check_histograms(histograms)
    support = np.arange(h.shape[1], dtype=np.float64)
    global_pmf = h.sum(axis=0) / h.sum()
    pmfs = h / h.sum(axis=1, keepdims=True)
    return np.array([stats.wasserstein_distance(support, support, p, global_pmf) for p in pmfs])


def _participants(n: int, mask: Any) -> np.ndarray:
    if mask is None:
        return np.ones(n, dtype=bool)
    m = np.asarray(mask, dtype=bool)
    if m.shape != (n,):
        raise ValueError(f"mask must have shape ({n},), got {m.shape}")
    if not m.any():
        raise ValueError("mask selects no device: weights are undefined")
    return m


def _check_sizes(sizes: Any, n: int | None = None) -> np.ndarray:
    s = np.asarray(sizes, dtype=np.float64)
    if s.ndim != 1 or (n is not None and s.shape != (n,)):
        raise ValueError(f"sizes must be a vector of length {n}, got shape {s.shape}")
    if not np.all(np.isfinite(s)) or np.any(s < 0):
        raise ValueError("sizes must be finite and non-negative")
    return s


def wasserstein_softmax_weights(distances: Any, sizes: Any, mask: Any = None) -> np.ndarray:
    """LAPA eq. 21: G_k = |D_k| e^{1/W_k} / sum_j |D_j| e^{1/W_j} over participating devices.

    Computed in log space: logit_k = ln|D_k| + 1/max(W_k, 1e-6), softmax
    over the devices with ``mask`` True (all by default; a SINR-selected set renormalises over
    that set, eq. 22); devices outside the mask get weight 0. e^{1/W} itself would overflow
    float64 for W < 0.0014.
    """
    w = np.asarray(distances, dtype=np.float64)
    if w.ndim != 1:
        raise ValueError(f"distances must be a vector, got shape {w.shape}")
    if not np.all(np.isfinite(w)) or np.any(w < 0):
        raise ValueError("distances must be finite and non-negative")
    s = _check_sizes(sizes, w.size)
    m = _participants(w.size, mask)
    if np.any(s[m] <= 0):
        raise ValueError("participating devices must have positive sizes")
    logits = np.log(s[m]) + 1.0 / np.maximum(w[m], W_FLOOR)
    logits -= logits.max()
    with np.errstate(under="ignore"):          # weights far below 1e-308 are exactly 0
        e = np.exp(logits)
    out = np.zeros(w.size)
    out[m] = e / e.sum()
    return out


def data_size_weights(sizes: Any, mask: Any = None) -> np.ndarray:
    """FedAvg weights G_k = |D_k| / sum_j |D_j| (McMahan et al. 2017; LAPA Benchmark 1, §4.4).

    With ``mask``, normalised over the participating devices; the others get 0.
    """
    s = _check_sizes(sizes)
    m = _participants(s.size, mask)
    total = s[m].sum()
    if total <= 0:
        raise ValueError("participating devices hold no samples")
    out = np.zeros(s.size)
    out[m] = s[m] / total
    return out
