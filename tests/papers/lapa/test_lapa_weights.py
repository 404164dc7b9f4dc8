"""LAPA's aggregation weights (weights.py, paper Sec. III-C): SER-threshold selection and the
Wasserstein and FedAdp weights."""

from __future__ import annotations

import numpy as np
import pytest

from airfl.papers.lapa.radio import (bpsk_snr_threshold)
from airfl.papers.lapa.weights import fedadp_weights, selected_devices, selection_weights


def test_selection_and_weights():
    snr = np.array([0.5, 1.0, 3.0, 6.0])
    assert selected_devices(snr, bpsk_snr_threshold(1e-1)).tolist() == [False, True, True, True]
    assert selected_devices(snr, 100.0).tolist() == [False, False, False, True]  # keep the best
    w, sizes = np.array([0.1, 0.3, 2.0, 3.0]), np.array([100, 200, 300, 400])
    mask = np.array([True, True, False, True])
    renorm = selection_weights(w, sizes, mask, renormalize=True)
    literal = selection_weights(w, sizes, mask, renormalize=False)
    assert renorm.sum() == pytest.approx(1.0) and literal.sum() < 1.0     # eq. 22 vs A7
    np.testing.assert_allclose(renorm, literal / literal.sum())
    assert renorm[0] > renorm[1] > renorm[3]                 # smaller W, larger weight (eq. 21)
    fedadp = fedadp_weights(sizes, np.array([0.2, 0.2, 1.5, 1.5]), 5.0)
    assert fedadp.sum() == pytest.approx(1.0) and fedadp[1] > fedadp[2]
