"""LAPA's DDPG agent (ddpg.py, paper Sec. IV-C, eqs. 29-36): it beats the average-power
allocation on problem P1 and is reproducible."""

from __future__ import annotations

import math

import numpy as np

from airfl.papers.lapa import control as ctl
from airfl.papers.lapa.ddpg import DdpgConfig, train_ddpg

from lapa_helpers import K, T, p1_problem


def test_ddpg_beats_average_power_and_is_reproducible():
    prob = p1_problem()
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
