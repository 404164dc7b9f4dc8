"""Dynamic noise control (switching rule, P1) and the DDPG agent against the paper's statements."""

from __future__ import annotations

import numpy as np
import pytest

from airfl.papers.lapa import control as ctl

from lapa_helpers import K, T, p1_problem


def test_switching_never_before_round_three_and_never_when_impossible():
    required = np.full((T, K), 1.0)
    assert ctl.switching_round(np.full(K, 10.0), required) == 2          # eq. (23): t0 = 3
    assert ctl.switching_round(np.full(K, 0.1), required) == T           # never: T_th = T
    decaying = np.linspace(2.0, 0.1, T)[:, None] * np.ones(K)
    t_th = ctl.switching_round(np.full(K, 1.0), decaying)
    assert decaying[t_th].sum() <= K * 1.0 < decaying[t_th - 1].sum()    # first round it holds


def test_more_power_switches_later_and_lowers_the_channel_term():
    """sigma_ch = sigma_n0 / (p ||h||): more power, less channel noise, so the channel term of
    eq. 28 falls and the sum criterion of eq. 23 is met later (T_th grows)."""
    prob = p1_problem()
    low, high = np.full(K, 0.1), np.full(K, 1.0)
    (l_low, t_low), (l_high, t_high) = (ctl.p1_objective(p, **prob) for p in (low, high))
    assert t_high >= t_low
    ch = lambda p: np.sum(prob["weights"] ** 2 * ctl.channel_std(p, prob["channel_norm2"],   # noqa
                                                                 1e-3) ** 2)
    assert ch(high) < ch(low)


def test_contraction_below_one_iff_the_step_condition_of_eq_25():
    g = np.full(4, 0.25)
    for lr in (0.01, 0.5, 3.0):
        a = ctl.contraction(mu=0.1, smooth=10.0, lr=lr, dissimilarity=2.0, weights=g)
        assert (a < 1) == (lr < 2 / (10.0 * 4.0 * np.sum(g ** 2)))


def test_projection_is_feasible():
    rng = np.random.default_rng(1)
    for _ in range(100):
        p = ctl.project_power(rng.uniform(0, 2, 15) ** 3, p0=1.0, p_min=1.5, p_max=15.0)
        assert np.all(p <= 1.0 + 1e-12) and 1.5 - 1e-9 <= p.sum() <= 15.0 + 1e-9
    assert ctl.average_power(p_min=1.5, p_max=15.0, devices=15)[0] == pytest.approx(0.55)
