"""Shared fixture of the LAPA tests (not collected by pytest; the test files import it by module
name, since tests/ is not a package): a small instance of the power-control problem P1."""

from __future__ import annotations

import numpy as np

#: K devices over T rounds.
K, T = 5, 40


def p1_problem():
    """Problem P1's data (Sec. IV): channel norms, weights, sensitivities and a per-round privacy
    budget eps[t, k] that grows over the rounds, drawn from a fixed seed."""
    rng = np.random.default_rng(0)
    eps = np.linspace(1.0, 3.0, T)[:, None] * rng.uniform(0.5, 1.5, K)[None, :] * 1e-2
    return dict(channel_norm2=rng.uniform(0.5, 2.0, K) * 1e3, weights=np.full(K, 1 / K),
                sensitivity=np.full(K, 1e-3), eps=eps, contraction_a=0.99, noise_w=1e-3,
                delta=1e-5)
