"""LAPA on another experiment's devices (`uplink_gains: context`, the arena's reading) and given
its budget eps_T instead of the noise level nu (`eps_total`)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from airfl.core.scheme import ChannelStatistics, DesignContext
from airfl.papers.lapa import mechanism as mech
from airfl.papers.lapa.schemes import LapaScheme

K, DIM, ROUNDS = 6, 50, 4
ALLOC = {"kp": 0.9, "ks": 0.1, "window": 5, "beta": 5.0, "reduction": "mean_abs"}
RADIO = {"antennas": 1, "noise_w": 4e-15, "max_power_w": 5e-3}


def _context(trial: int = 0, gains=None) -> DesignContext:
    gains = torch.logspace(-12, -10, K, dtype=torch.float64) if gains is None else gains
    stats = ChannelStatistics(gains, float(gains.min()), 1e6,
                              torch.linspace(100, 400, K, dtype=torch.float64))
    hist = np.full((K, 10), 12, dtype=np.int64)
    return DesignContext(K, DIM, ROUNDS, torch.full((K,), 120.0), stats, trial=trial, seed=3,
                         experiment="arena/test", label_histograms=hist)


def _scheme(**kw) -> LapaScheme:
    curve = dict(aggregation="wasserstein", privacy="uniform", channel="practical", lr=0.05,
                 clip=20.0, delta=1e-5, radio=RADIO, alloc=ALLOC, uplink_gains="context",
                 eps_total=4.0)
    return LapaScheme("c", **{**curve, **kw})


def test_the_context_gains_set_the_channel_noise_at_the_given_power_and_noise():
    """sigma_ch,k = sqrt(N0 B) / sqrt(P Lambda_k ||g_k||^2) with the context's Lambda_k, the
    fading drawn from the trial's stream (another trial: other fading, same gains), no
    calibration."""
    context = _context()
    design = _scheme().design(context)
    radio = design["radio"]
    assert radio["kappa"] == 1.0 and radio["path_gain"] == context.channel.path_gain.tolist()
    assert radio["distances_m"] == context.channel.distances_m.tolist()
    fading = np.asarray(radio["channel_norm2"]) / np.asarray(radio["path_gain"])
    assert (fading > 0).all()
    expected = math.sqrt(RADIO["noise_w"]) / np.sqrt(RADIO["max_power_w"]
                                                     * np.asarray(radio["channel_norm2"]))
    np.testing.assert_allclose(design["sigma_ch"], expected, rtol=1e-12)
    again = _scheme().design(context)
    assert again["radio"] == radio                                   # the trial's stream
    other = _scheme().design(_context(trial=1))
    assert other["radio"]["path_gain"] == radio["path_gain"]
    assert other["radio"]["channel_norm2"] != radio["channel_norm2"]


def test_eps_total_gives_the_smallest_noise_level_that_meets_it():
    """The design's nu has eps_T (LAPA's accounting, `total_budget`) at most the given budget and
    within rounding of it; a larger budget gives less noise."""
    design = _scheme().design(_context())
    forward = dict(clip=20.0, dim=DIM, lr=0.05, mean_size=120.0, rounds=ROUNDS, devices=K,
                   delta=1e-5)
    assert design["eps_total"] <= 4.0
    assert design["eps_total"] == pytest.approx(4.0, rel=1e-12)
    assert mech.total_budget(nu=design["nu"], **forward) == design["eps_total"]
    assert _scheme(eps_total=16.0).design(_context())["nu"] < design["nu"]
    assert design["sigma_init2"] == pytest.approx((design["nu"] * 20.0) ** 2 / DIM, rel=1e-12)


@pytest.mark.parametrize("budget", [0.5, 1.0, 4.0, 64.0, 1e3])
def test_noise_level_for_budget_never_overshoots(budget):
    forward = dict(clip=3.0, dim=7850, lr=0.05, mean_size=1200.0, rounds=30, devices=50,
                   delta=1e-5)
    nu = mech.noise_level_for_budget(eps_total=budget, **forward)
    assert mech.total_budget(nu=nu, **forward) <= budget
    assert mech.total_budget(nu=nu, **forward) == pytest.approx(budget, rel=1e-12)


def test_bad_settings_stop_naming_the_key():
    with pytest.raises(ValueError, match=r"curves\.c\.uplink_gains: 'mine'; allowed: own, "
                                         "context"):
        _scheme(uplink_gains="mine")
    with pytest.raises(ValueError, match="nu and eps_total both set"):
        _scheme(nu=4.0)
    with pytest.raises(ValueError, match="needs nu .* or eps_total"):
        _scheme(eps_total=None)
    with pytest.raises(ValueError, match=r"curves\.c\.radio: uplink_gains context needs "
                                         "noise_w"):
        _scheme(radio={"antennas": 1, "max_power_w": 1.0})
    with pytest.raises(ValueError, match="eps_total must be > 0"):
        _scheme(eps_total=0.0).design(_context())
