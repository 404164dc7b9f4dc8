"""Dynamic noise control (switching rule, P1) and the DDPG agent against the paper's statements."""

from __future__ import annotations

import math

import numpy as np
import pytest

from airfl.papers.lapa import control as ctl
from airfl.papers.lapa.ddpg import DdpgConfig, train_ddpg

K, T = 5, 40


def _problem():
    rng = np.random.default_rng(0)
    eps = np.linspace(1.0, 3.0, T)[:, None] * rng.uniform(0.5, 1.5, K)[None, :] * 1e-2
    return dict(channel_norm2=rng.uniform(0.5, 2.0, K) * 1e3, weights=np.full(K, 1 / K),
                sensitivity=np.full(K, 1e-3), eps=eps, contraction_a=0.99, noise_w=1e-3,
                delta=1e-5)


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
    prob = _problem()
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


def test_ddpg_beats_average_power_and_is_reproducible():
    prob = _problem()
    bounds = dict(p0=1.0, p_min=0.5, p_max=4.0)

    def power(a):
        return ctl.project_power(ctl.action_to_power(a, p0=1.0, floor_fraction=1e-3), **bounds)

    def evaluate(a):
        return ctl.p1_objective(power(a), **prob)

    p_bar = ctl.average_power(p_min=0.5, p_max=4.0, devices=K)
    start = (p_bar - 1e-3) / (1.0 - 1e-3)                       # the action of p_bar
    reference = evaluate(start)[0]
    config = DdpgConfig(episodes=6, steps=10, hidden=(16, 16), lr_actor=1e-3, lr_critic=1e-3,
                        gamma=0.9, tau=0.01, batch=16, buffer=1000, warmup=20, expl_sigma=0.2,
                        expl_decay=0.95, expl_min=0.02)
    runs = [train_ddpg(evaluate, start=start, rounds=T, reference=reference, config=config,
                       seed=3, generator=np.random.default_rng(3)) for _ in range(2)]
    assert runs[0].best_value <= reference                       # L(p*) <= L(p_bar)
    assert np.array_equal(runs[0].best_action, runs[1].best_action)
    assert np.all(np.diff(runs[0].episode_best) <= 0) and len(runs[0].episode_reward) == 6
    assert math.isfinite(runs[0].best_value)
