"""LAPA's privacy allocation (mechanism.py, paper Sec. III-B, eqs. 10-19) and its benchmarks:
the Gompertz weights, the Gaussian constant and total budget, the round split, the PID error,
the fallbacks after a collapse and ARB's bounded moves."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from airfl.papers.lapa import mechanism as mech


def test_gompertz_values_and_monotonicity():
    # with beta = 5, f(0) ~ 5.00, f(1) ~ 3.16, f(pi/2) ~ 0.28; decreasing (A3)
    assert mech.gompertz(0.0, 5.0) == pytest.approx(5.0, abs=0.01)
    assert mech.gompertz(1.0, 5.0) == pytest.approx(3.16, abs=0.01)
    assert mech.gompertz(math.pi / 2, 5.0) == pytest.approx(0.28, abs=0.01)
    grid = np.linspace(0, math.pi, 50)
    assert np.all(np.diff(mech.gompertz(grid, 5.0)) <= 0)          # saturates at beta near 0
    assert np.all(np.diff(mech.gompertz(grid[grid > 0.6], 5.0)) < 0)


def test_gaussian_constant_and_total_budget():
    c = mech.gaussian_constant(1e-5)
    assert c == pytest.approx(4.8448, abs=1e-4)
    # T = 200, |D| ~ 2200, C = 10, nu = 4 -> eps_T ~ 4.9
    eps = mech.total_budget(nu=4, clip=10, dim=21880, lr=0.01, mean_size=2200, rounds=200,
                            devices=15, delta=1e-5)
    assert eps == pytest.approx(4.9, rel=0.02)
    # round 1's uniform split gives the average device sigma_init = nu C / sqrt(q)
    sens = mech.sensitivity(lr=0.01, clip=10, sizes=[2200])[0]
    assert c * sens / (eps / 200 / 15) == pytest.approx(4 * 10 / math.sqrt(21880))


def test_split_spends_exactly_the_round_budget_and_favours_aligned_devices():
    scores = mech.gompertz(np.array([0.2, 1.0, 1.6, 3.0]), 5.0)
    mask = np.array([True, True, True, False])
    eps = mech.split_budget(0.3, scores, mask)
    assert eps.sum() == pytest.approx(0.3) and eps[3] == 0.0
    assert eps[0] > eps[1] > eps[2]                    # eq. 16 with f decreasing (A3)
    tiny = mech.split_budget(1.0, np.array([5.0, 1e-12]), np.array([True, True]))
    assert tiny[1] >= 1e-3 * 1.0 / 2 * 0.99 and tiny.sum() == pytest.approx(1.0)   # our floor


def test_round_budgets_never_exceed_the_total():
    """sum_t B_t <= eps_T for any error sequence (eq. 12: exp(-e) <= 1)."""
    rng = np.random.default_rng(0)
    total, rounds, spent = 5.0, 30, 0.0
    budget = total / rounds
    for t in range(1, rounds + 1):
        spent += budget
        if t < rounds:
            budget = mech.next_round_budget(error=float(rng.exponential(0.3)), total=total,
                                            spent=spent, rounds=rounds, t=t)
    assert spent <= total + 1e-12


def test_pid_error_of_a_constant_history_is_zero_and_scales_with_change():
    rng = np.random.default_rng(1)
    flat = [torch.ones(10)] * 4
    assert mech.pid_error(flat, kp=0.9, ks=0.1, window=5, reduction="mean_abs",
                          generator=rng) == 0.0
    ramp = [torch.full((10,), float(i)) for i in range(4)]        # change 1 per round
    assert mech.pid_error(ramp, kp=0.9, ks=0.1, window=5, reduction="mean_abs",
                          generator=rng) == pytest.approx(1.0)
    assert mech.pid_error(ramp[:1], kp=0.9, ks=0.1, window=5, reduction="l2",
                          generator=rng) == 0.0


def test_l2_rel_fallback_after_a_collapse():
    """Eq. (10): a mean-abs error that would cut B below 0.2 B_1 flips the run to l2_rel."""
    state = mech.LapaState(total=1.0, rounds=10, devices=3)
    state.history = [torch.full((4,), 100.0), torch.full((4,), 105.0)]   # mean-abs E = 5
    error, budget = state.next_budget(t=1, kp=0.9, ks=0.1, window=5, reduction="mean_abs",
                                      generator=lambda: np.random.default_rng(0))
    assert state.fallback and not budget < 0.2 * state.budgets[0]
    assert error == pytest.approx(0.05)                       # l2_rel: ||5 1|| / ||100 1||
    assert budget == pytest.approx(np.exp(-0.05) * (1.0 - 0.0) / 9)


def test_collapse_flag_of_errata_4():
    state = mech.LapaState(total=1.0, rounds=10, devices=3)
    state.budgets.append(0.5 * state.budgets[0])
    assert not state.collapsed()
    state.budgets.append(0.1 * state.budgets[0])
    assert state.collapsed()


def test_arb_moves_at_most_rate_around_the_even_spread_of_what_is_left():
    """Our reading of eqs. (10)-(12):
    B_{t+1} = min{(1 + 0.05 d_t)(eps_T - S_t)/(T - t), eps_T - S_t}: it does not compound
    (each budget is within +-5 % of an even spread of what is left) and never
    overspends; d_t = +1 while the progress statistic falls."""
    total, rounds, spent, progress = 4.0, 60, 0.0, []
    budgets = [total / rounds]
    rng = np.random.default_rng(2)
    for t in range(1, rounds):
        spent += budgets[-1]
        progress.append(float(np.exp(-0.05 * t) + 0.01 * rng.standard_normal()))
        budgets.append(mech.arb_next_budget(progress, total=total, spent=spent, rounds=rounds,
                                            t=t))
        even = (total - spent) / (rounds - t)
        assert 0.95 * even - 1e-15 <= budgets[-1] <= 1.05 * even + 1e-15
    assert sum(budgets) <= total + 1e-12
    assert budgets[1:10] == pytest.approx([budgets[0]] * 9)      # d = 0 before two windows


DEVICE = dict(clip=2.0, dim=7850, sizes=[600.0, 1200.0, 1800.0, 2400.0], rounds=30, delta=1e-5)


@pytest.mark.parametrize("budget", [0.5, 1.0, 4.0, 16.0])
@pytest.mark.parametrize("sigma_ch", [[0.0] * 4, [0.3, 2.0, 0.01, 40.0]])
def test_device_budget_noise_level_meets_the_target_as_accounted(budget, sigma_ch):
    """nu for the device-level eps (each device's whole upload, 2C, worst device, improved
    conversion) is at most the target and within the accountant's calibration tolerance of it;
    the device that sets it has multiplier z* (the T-round Gaussian's), the others at least it;
    channel noise lowers the DP noise needed."""
    from airfl.privacy import gaussian_noise_for_epsilon

    nu = mech.noise_level_for_device_budget(eps_total=budget, sigma_ch=sigma_ch, **DEVICE)
    eps = mech.device_level_epsilon(nu=nu, sigma_ch=sigma_ch, **DEVICE)
    assert eps <= budget
    assert eps == pytest.approx(budget, rel=1e-3)
    z = gaussian_noise_for_epsilon(budget, 1e-5, 30)
    std = mech.uniform_device_std(nu=nu, clip=2.0, dim=7850, sizes=DEVICE["sizes"],
                                  sigma_ch=sigma_ch)
    assert std.min() / 4.0 == pytest.approx(z, rel=1e-9)
    assert (std / 4.0 >= z * (1 - 1e-12)).all()
    if any(sigma_ch):      # the largest device, channel noise 40 > 2 C z*, needs no DP noise
        assert nu < mech.noise_level_for_device_budget(eps_total=budget, sigma_ch=[0.0] * 4,
                                                       **DEVICE)


def test_device_budget_uniform_std_is_eq19_under_the_uniform_split():
    """sigma_k = c Delta s_k / (eps_T / (T K)) with eps_T = total_budget(nu) (eqs. 18-19)."""
    sizes = np.array(DEVICE["sizes"])
    forward = dict(clip=2.0, dim=7850, lr=0.05, mean_size=sizes.mean(), rounds=30, devices=4,
                   delta=1e-5)
    eps_t = mech.total_budget(nu=50.0, **forward)
    sigma = mech.gaussian_constant(1e-5) * mech.sensitivity(lr=0.05, clip=2.0, sizes=sizes) \
        / (eps_t / 30 / 4)
    std = mech.uniform_device_std(nu=50.0, clip=2.0, dim=7850, sizes=sizes, sigma_ch=[0.0] * 4)
    np.testing.assert_allclose(std, sigma, rtol=1e-12)


def test_device_budget_refused_when_the_channel_alone_meets_it():
    with pytest.raises(ValueError, match="channel noise alone meets it"):
        mech.noise_level_for_device_budget(eps_total=4.0, sigma_ch=[1e6] * 4, **DEVICE)
    with pytest.raises(ValueError, match="eps_total must be > 0"):
        mech.noise_level_for_device_budget(eps_total=0.0, sigma_ch=[0.0] * 4, **DEVICE)
