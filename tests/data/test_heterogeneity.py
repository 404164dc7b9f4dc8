"""Tests of airfl.data.heterogeneity: LAPA eq. 20 (Wasserstein) and eq. 21 (softmax weights)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import linprog

from airfl.data import (
    Partition,
    data_size_weights,
    label_histograms,
    label_pmfs,
    mixed,
    wasserstein_softmax_weights,
    wasserstein_to_global,
)


def _w1_cdf(p: np.ndarray, q: np.ndarray) -> float:
    """W1 on the points 0..C-1 as sum_c |CDF_p(c) - CDF_q(c)|."""
    return float(np.abs(np.cumsum(p) - np.cumsum(q))[:-1].sum())


def _w1_lp(p: np.ndarray, q: np.ndarray) -> float:
    """W1 as the optimal-transport linear program with cost |i - j|."""
    c = p.size
    cost = np.abs(np.subtract.outer(np.arange(c), np.arange(c))).ravel().astype(float)
    a_rows = np.kron(np.eye(c), np.ones((1, c)))          # sum_j T_ij = p_i
    a_cols = np.kron(np.ones((1, c)), np.eye(c))          # sum_i T_ij = q_j
    res = linprog(cost, A_eq=np.vstack([a_rows, a_cols]), b_eq=np.concatenate([p, q]),
                  bounds=(0, None), method="highs")
    assert res.status == 0
    return float(res.fun)


def test_wasserstein_three_ways_agree():
    rng = np.random.default_rng(0)
    hist = rng.integers(0, 50, size=(8, 10))
    hist[0] = [100, 0, 0, 0, 0, 0, 0, 0, 0, 0]          # one-class device
    hist[1] = [0, 0, 0, 0, 30, 30, 0, 0, 0, 0]          # two-class device
    w = wasserstein_to_global(hist)
    pmfs = label_pmfs(hist)
    global_pmf = hist.sum(axis=0) / hist.sum()
    for k in range(hist.shape[0]):
        assert w[k] == pytest.approx(_w1_cdf(pmfs[k], global_pmf), abs=1e-12)
        assert w[k] == pytest.approx(_w1_lp(pmfs[k], global_pmf), abs=1e-7)


def test_wasserstein_known_values():
    # Devices 0 and 1 together are uniform, so the global PMF is uniform over 0..9; a device
    # holding only class 0 must move its mass by 4.5 on average; an IID device by 0.
    hist = np.array([[10] + [0] * 9] + [[0] + [10] * 9] + [[10] * 10] * 3)
    w = wasserstein_to_global(hist)
    glob = hist.sum(axis=0) / hist.sum()
    assert np.allclose(glob, 0.1)
    assert w[0] == pytest.approx(4.5) and w[2] == pytest.approx(0.0, abs=1e-12)
    assert w[1] == pytest.approx(_w1_cdf(label_pmfs(hist)[1], glob))


def test_label_histograms_match_partition():
    labels = np.array([0, 1, 1, 2, 2, 2, 0, 1])
    part = Partition(indices=[np.array([0, 1, 2]), np.array([3, 4, 5, 6]), np.array([7])])
    hist = label_histograms(labels, part, 3)
    assert hist.tolist() == [[1, 2, 0], [1, 0, 3], [0, 1, 0]] and hist.dtype == np.int64
    assert np.array_equal(label_histograms(labels, part.indices, 3), hist)
    with pytest.raises(ValueError, match="outside"):
        label_histograms(labels, part, 2)
    with pytest.raises(ValueError, match="no samples"):
        wasserstein_to_global([[1, 2], [0, 0]])


def test_partition_histograms_agree(tmp_path):
    labels = np.random.default_rng(1).integers(0, 10, size=20000)
    p = mixed(labels, 5, 10, (300, 900), 2, np.random.default_rng(2))
    assert np.array_equal(label_histograms(labels, p, 10), p.labels_per_device)


def test_softmax_weights_eq21():
    w = np.array([0.2, 0.5, 2.0, 3.5])
    sizes = np.array([1000, 2000, 1500, 800])
    g = wasserstein_softmax_weights(w, sizes)
    direct = sizes * np.exp(1 / w)
    assert g.sum() == pytest.approx(1.0) and np.allclose(g, direct / direct.sum())


def test_softmax_weights_zero_distance_does_not_overflow():
    w = np.array([0.0, 1e-9, 0.3, 2.0])
    sizes = np.array([100, 300, 1000, 1000])
    with np.errstate(all="raise"):
        g = wasserstein_softmax_weights(w, sizes)
    assert np.all(np.isfinite(g)) and g.sum() == pytest.approx(1.0)
    # Both W below the 1e-6 floor tie at logit 1e6 and split by size; the rest get ~0.
    assert g[:2] == pytest.approx([0.25, 0.75]) and g[2:].max() < 1e-300


def test_softmax_weights_mask():
    w = np.array([0.1, 0.5, 2.0, 3.0])
    sizes = np.array([500, 0, 700, 900])                # a masked-out device may be empty
    mask = np.array([False, False, True, True])
    g = wasserstein_softmax_weights(w, sizes, mask)
    assert g[0] == 0.0 and g[1] == 0.0 and g.sum() == pytest.approx(1.0)
    sub = wasserstein_softmax_weights(w[2:], sizes[2:])
    assert np.allclose(g[2:], sub)
    with pytest.raises(ValueError, match="no device"):
        wasserstein_softmax_weights(w, sizes, np.zeros(4, dtype=bool))
    with pytest.raises(ValueError, match="positive sizes"):
        wasserstein_softmax_weights(w, sizes, np.array([True, True, False, False]))


def test_data_size_weights():
    g = data_size_weights([100, 300, 600])
    assert g.tolist() == pytest.approx([0.1, 0.3, 0.6])
    gm = data_size_weights([100, 300, 600], mask=[True, False, True])
    assert gm.tolist() == pytest.approx([1 / 7, 0.0, 6 / 7])
    with pytest.raises(ValueError):
        data_size_weights([100, -1])
