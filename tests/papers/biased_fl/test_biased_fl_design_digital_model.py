"""Biased FL's relaxed digital design problem (design/digital_model.py): participation, rate,
payload and expected latency (paper (12), (13), (17), (23c)) and the variance zeta^D of Lemma 2."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from airfl.channel.digital import shannon_rate
from airfl.papers.biased_fl.design import digital_model as dm


N0 = 10.0 ** ((-161 - 30) / 10)


# ------------------------------------------------------------------ closed-form quantities


def test_quantities_rate_and_latency():
    lam = np.array([2e-11, 5e-12, 1e-12])
    rho = np.sqrt(lam * np.array([0.5, 1.0, 2.0]))
    nu = np.array([1.2, 2.0, 3.0])
    r = np.array([4, 8, 16])
    q = dm.digital_quantities(rho, nu, r, lam, Es=1e-9, N0=N0, d=100, B=1e6)
    beta = np.exp(-rho ** 2 / lam)
    assert np.allclose(q["beta"], beta) and np.allclose(q["p"], beta / nu)
    assert np.array_equal(q["L"], 64 + 100 * r)
    assert np.allclose(q["R"], np.log2(1 + 1e-9 * rho ** 2 / N0))
    assert q["expected_latency_s"] == pytest.approx(np.sum(beta * (64 + 100 * r) / (1e6 * q["R"])))
    # a device at or above its threshold never has capacity below R (no outage)
    h2 = rho[:, None] ** 2 * np.linspace(1.0, 50.0, 200)[None, :]
    cap = shannon_rate(torch.as_tensor(1e-9 * h2 / N0)).numpy()
    assert np.all(cap >= q["R"][:, None] * (1 - 1e-12))


def test_zeta_digital_matches_lemma2_terms():
    p, beta, r = np.array([0.5, 0.3, 0.2]), np.array([0.9, 0.5, 0.2]), np.array([2, 3, 4])
    G, d = 2.0, 10
    expected = (np.sum(p ** 2 * G ** 2 * (1 / beta - 1)) + np.sum(p ** 2 * 0.1)
                + np.sum(p ** 2 * G ** 2 * d / (beta * (2.0 ** r - 1) ** 2)))
    assert dm.zeta_digital(p, beta, r, G=G, d=d, sigma2=0.1) == pytest.approx(expected)
