"""LAPA's configurations and benchmarks as one scheme (schemes.py): the noise-free weighted
average, LAPA's noise level and ledger, shared noise draws, SER thresholds, switching to channel
noise only after T_th, per-trial powers, the simulated privacy events, ARB's split."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import torch

from airfl.core.scheme import ChannelStatistics, DesignContext, RoundState
from airfl.papers.lapa import mechanism as mech
from airfl.papers.lapa.schemes import LapaScheme
from airfl.papers.lapa.run_blocks import compose
from airfl.pipeline.registry import build_scheme
from airfl.runtime.rng import RoundStreams


K, DIM, ROUNDS = 15, 64, 6


def _context(sizes):
    hist = np.zeros((K, 10), dtype=np.int64)
    for k in range(K):
        if k < 5:
            hist[k] = sizes[k] // 10
        else:
            hist[k, [k % 10, (k + 1) % 10]] = sizes[k] // 2
    stats = ChannelStatistics(torch.ones(K, dtype=torch.float64), 1.0, 1.0,
                              torch.zeros(K, dtype=torch.float64))
    return DesignContext(K, DIM, ROUNDS, torch.tensor(sizes), stats, trial=0, seed=1,
                         experiment="lapa/test", label_histograms=hist)


def _scheme(params, **kw):
    """A curve's scheme as the stages build it: lam from the block's local-work settings."""
    block = compose(params)
    return build_scheme("c", {**block["curves"]["nodp"], **kw}, block["training"]["lr"])


def _round(t, updates, scheme, design):
    state = RoundState(t, torch.ones(K), torch.ones(K), None, RoundStreams(1, "lapa/test", 0, t))
    return scheme.aggregate(updates, state, design)


def test_noise_free_round_is_the_weighted_average_of_updates(params):
    sizes = list(range(100, 100 + 20 * K, 20))
    scheme = _scheme(params)
    design = scheme.design(_context(sizes))
    assert sum(design["weights"]) == pytest.approx(1.0)
    updates = 1e-3 * torch.randn(K, DIM, generator=torch.Generator().manual_seed(0),
                                 dtype=torch.float64)
    step, record = _round(1, updates, scheme, design)
    expected = torch.tensor(design["weights"], dtype=torch.float64) @ updates   # eq. 3, no clip
    torch.testing.assert_close(step, expected)
    assert record["privacy"] is None
    # IID devices (small W) dominate the weights
    assert sum(design["weights"][:5]) > 0.5


def test_lapa_noise_level_and_ledger(params):
    sizes = [200] * K
    lapa = _scheme(params, privacy="lapa", nu=4.0)
    design = lapa.design(_context(sizes))
    updates = 1e-3 * torch.randn(K, DIM, generator=torch.Generator().manual_seed(1),
                                 dtype=torch.float64)
    spent = 0.0
    for t in range(1, ROUNDS + 1):
        step, record = _round(t, updates, lapa, design)
        spent += record["budget"]
        assert torch.isfinite(step).all()
        if t == 1:   # round 1: uniform split, sigma = nu C / sqrt(q) for an average device
            assert record["sigma_mean"] == pytest.approx(4.0 * lapa.clip / np.sqrt(DIM))
    assert spent <= design["eps_total"] * (1 + 1e-12)                  # eq. 12
    assert record["eps_nominal_total_max"] <= design["eps_total"]
    # q = 64 makes the noise ~250x the gradient: the mean-abs PID loop collapses the budget
    # (eq. 10), the run is flagged and continues with l2_rel, whose budgets stay positive
    assert record["budget_collapse"] and record["pid_fallback_l2_rel"]
    assert min(lapa._runs[0]["lapa"].budgets) > 0


def test_curves_share_their_noise_draws(params):
    """Common random numbers: two privacy strategies at the same nu see the same z in round 1
    (both split evenly), so their round-1 updates are identical."""
    sizes = [150 + 10 * k for k in range(K)]
    updates = 1e-3 * torch.randn(K, DIM, generator=torch.Generator().manual_seed(2),
                                 dtype=torch.float64)
    out = []
    for privacy in ("lapa", "uniform", "arb"):
        scheme = _scheme(params, privacy=privacy, nu=2.0)
        out.append(_round(1, updates, scheme, scheme.design(_context(sizes)))[0])
    torch.testing.assert_close(out[0], out[1])
    torch.testing.assert_close(out[0], out[2])


def test_stricter_ser_thresholds_exclude_more_devices(params):
    sizes = [200] * K
    excluded = [_scheme(params, channel="practical", ser_threshold=ser).design(
        _context(sizes))["excluded"] for ser in (1e-1, 1e-2, 1e-3)]
    assert excluded == sorted(excluded) and excluded[-1] > excluded[0]
    # LAPA over the selected set only: excluded devices get no budget and no weight (eq. 22)
    lapa = _scheme(params, channel="practical", ser_threshold=1e-2, privacy="lapa", nu=1.0)
    design = lapa.design(_context(sizes))
    updates = 1e-3 * torch.randn(K, DIM, generator=torch.Generator().manual_seed(5),
                                 dtype=torch.float64)
    for t in (1, 2, 3):
        step, record = _round(t, updates, lapa, design)
        assert torch.isfinite(step).all() and record["selected"] == K - design["excluded"]


def test_switching_leaves_only_channel_noise_after_t_th(params):
    """Sec. IV-A: once sum_k sigma_ch,k >= sum_k c Delta s_k / eps_k (tested from round 3,
    eq. 23, our reading) the round carries only channel noise: its update equals the no-DP practical
    curve's (same channel draws), and T_th >= 2."""
    sizes = [200] * K
    radio = {**params["lapa"]["radio"], "median_snr_db": -30.0}     # very noisy channel
    switched = _scheme(params, privacy="lapa", nu=0.5, channel="practical", switching=True,
                       radio=radio)
    plain = _scheme(params, channel="practical", radio=radio)
    designs = [s.design(_context(sizes)) for s in (switched, plain)]
    updates = 1e-3 * torch.randn(K, DIM, generator=torch.Generator().manual_seed(4),
                                 dtype=torch.float64)
    for t in range(1, ROUNDS + 1):
        (a, record), (b, _) = (_round(t, updates, s, d) for s, d in zip((switched, plain), designs))
        if t < 3:
            assert not record["switched"] and not torch.equal(a, b)
        if record["switched"]:
            torch.testing.assert_close(a, b)
    assert record["switched"] and record["t_th"] == 2
    with pytest.raises(ValueError, match="switching"):
        _scheme(params, privacy="uniform", nu=1.0, channel="practical", switching=True)


def test_per_trial_powers_set_the_channel_noise_and_each_trial_has_its_own_channel(params):
    """Config 5 (Fig. 7) transmits at DDPG's per-device p*^2 of its trial: the design's channel
    noise is sigma_n0 / (p_k ||h_k||) (Sec. II-B) with those powers; trials draw their own
    layout and channel (block fading per trial), so each trial gets its own design."""
    from airfl.papers.lapa.radio import channel_noise_std

    sizes = [200] * K
    powers = [list(np.linspace(0.1, 1.0, K)), list(np.linspace(1.0, 0.1, K))]
    scheme = _scheme(params, privacy="lapa", nu=1.0, channel="practical", switching=True,
                     powers=powers, p1_value=[1.0, 2.0], t_th_predicted=[3, 4])
    assert LapaScheme.uses_future_channels
    designs = []
    for trial in (0, 1):
        context = dataclasses.replace(_context(sizes), trial=trial)
        design = scheme.design(context)
        expected = channel_noise_std(channel_norm2=np.asarray(design["radio"]["channel_norm2"]),
                                     power_w=np.asarray(powers[trial]),
                                     noise_w=params["lapa"]["radio"]["noise_w"])
        np.testing.assert_allclose(design["sigma_ch"], expected)
        assert design["p1_value"] == [1.0, 2.0][trial] and design["power_w"] == powers[trial]
        designs.append(design)
    assert designs[0]["radio"]["channel_norm2"] != designs[1]["radio"]["channel_norm2"]


def _epsilons(records, key, delta):
    from airfl.privacy import epsilon_curve
    return epsilon_curve([r[key] for r in records], delta)


@pytest.mark.parametrize("privacy", ["uniform", "lapa", "arb"])
def test_simulated_event_is_each_devices_own_composition(params, privacy):
    """`privacy_simulated` is the Gaussian each device's upload really is (std
    c Delta s_k / eps_k per coordinate over the ideal channel, eq. 19; sensitivity 2C of the
    clipped update, eq. 17), composed per device and maximised over devices: equal
    to an independent per-device accountant fed from the record's eps_k, equal to the record's
    per-round worst case under uniform DP (the same device is the worst every round), and
    below it when LAPA's shares move the worst device between rounds."""
    from airfl.privacy import GaussianEvent, RdpAccountant

    sizes = list(range(100, 100 + 20 * K, 20))
    scheme = _scheme(params, privacy=privacy, nu=4.0)
    design = scheme.design(_context(sizes))
    c = mech.gaussian_constant(scheme.delta)
    sens = mech.sensitivity(lr=scheme.lr, clip=scheme.clip, sizes=sizes)
    accountants = [RdpAccountant() for _ in range(K)]
    records, independent = [], []
    generator = torch.Generator().manual_seed(7)
    for t in range(1, ROUNDS + 1):
        eps_k = scheme._runs[0]["eps"].copy() if t > 1 else \
            np.full(K, design["eps_total"] / ROUNDS / K)                    # eq. 16, round 1
        updates = 1e-3 * torch.randn(K, DIM, generator=generator, dtype=torch.float64)
        records.append(_round(t, updates, scheme, design)[1])
        for accountant, std in zip(accountants, c * sens / eps_k):         # eq. 19
            accountant.compose(GaussianEvent(std / (2 * scheme.clip)))     # 2C
        independent.append(max(a.get_epsilon(scheme.delta) for a in accountants))
    paper = _epsilons(records, "privacy", scheme.delta)
    simulated = _epsilons(records, "privacy_simulated", scheme.delta)
    assert simulated == pytest.approx(independent, rel=1e-9)
    assert np.all(simulated <= paper * (1 + 1e-12))
    if privacy == "lapa":
        assert simulated[-1] < 0.95 * paper[-1]        # the worst device moves between rounds
    else:                                              # equal shares: sigma_k ~ 1/|D_k|
        assert simulated == pytest.approx(paper, rel=1e-9)


def test_non_private_curves_carry_no_events(params):
    record = _round(1, torch.zeros(K, DIM, dtype=torch.float64), _scheme(params),
                    _scheme(params).design(_context([200] * K)))[1]
    assert record["privacy"] is None and "privacy_simulated" not in record


def test_a_threshold_no_device_meets_keeps_the_best_one_and_says_so(params):
    """Eq. 22 with a threshold above every device's SNR leaves no device: the selection keeps
    the single best one (our reading), and the design and every round record mark it."""
    sizes = [200] * K
    strict = _scheme(params, channel="practical", ser_threshold=1e-300)     # gamma_th huge
    design = strict.design(_context(sizes))
    assert design["ser_fallback"] is True and sum(design["selected"]) == 1
    assert design["selected"][int(np.argmax(design["symbol_snr"]))]
    updates = 1e-3 * torch.randn(K, DIM, generator=torch.Generator().manual_seed(5),
                                 dtype=torch.float64)
    _, record = _round(1, updates, strict, design)
    assert record["ser_fallback"] is True and record["selected"] == 1
    loose = _scheme(params, channel="practical", ser_threshold=0.49)
    design = loose.design(_context(sizes))
    assert design["ser_fallback"] is False and sum(design["selected"]) > 1
    assert _round(1, updates, loose, design)[1]["ser_fallback"] is False
    assert "ser_fallback" not in _round(1, updates, _scheme(params), _scheme(params).design(
        _context(sizes)))[1]                                       # no threshold: no field


def test_arb_spends_uniform_dps_split_until_it_has_two_windows_of_progress(params):
    """Eq. (12): ARB's direction is 0 before two windows of 5 progress statistics, so its
    budgets equal uniform DP's eps^T / (T K) in rounds 1-10 and move from round 11 on; the
    records' `arb_as_uniform` counts those rounds (what the Fig. 5 caption states)."""
    rounds = 15
    sizes = [200] * K
    scheme = _scheme(params, privacy="arb", nu=4.0)
    context = dataclasses.replace(_context(sizes), rounds=rounds)
    design = scheme.design(context)
    generator = torch.Generator().manual_seed(6)
    flags = []
    for t in range(1, rounds + 1):
        updates = 1e-3 * (1 + t) * torch.randn(K, DIM, generator=generator, dtype=torch.float64)
        _, record = _round(t, updates, scheme, design)
        flags.append(record["arb_as_uniform"])
    assert flags == [True] * 10 + [False] * 5
    uniform = _scheme(params, privacy="uniform", nu=4.0)
    assert "arb_as_uniform" not in _round(1, updates, uniform, uniform.design(context))[1]


# -- on another experiment's devices (uplink_gains: context, the arena's) and given eps_T
# instead of nu (eps_total)

CK, CDIM, CROUNDS = 6, 50, 4
CONTEXT_ALLOC = {"kp": 0.9, "ks": 0.1, "window": 5, "beta": 5.0, "reduction": "mean_abs"}
CONTEXT_RADIO = {"antennas": 1, "noise_w": 4e-15, "max_power_w": 5e-3}


def _gains_context(trial: int = 0, gains=None) -> DesignContext:
    gains = torch.logspace(-12, -10, CK, dtype=torch.float64) if gains is None else gains
    stats = ChannelStatistics(gains, float(gains.min()), 1e6,
                              torch.linspace(100, 400, CK, dtype=torch.float64))
    hist = np.full((CK, 10), 12, dtype=np.int64)
    return DesignContext(CK, CDIM, CROUNDS, torch.full((CK,), 120.0), stats, trial=trial, seed=3,
                         experiment="arena/test", label_histograms=hist)


def _context_scheme(**kw) -> LapaScheme:
    curve = dict(aggregation="wasserstein", privacy="uniform", channel="practical", lr=0.05,
                 clip=20.0, delta=1e-5, radio=CONTEXT_RADIO, alloc=CONTEXT_ALLOC, uplink_gains="context",
                 eps_total=4.0)
    return LapaScheme("c", **{**curve, **kw})


def test_the_context_gains_set_the_channel_noise_at_the_given_power_and_noise():
    """sigma_ch,k = sqrt(N0 B) / sqrt(P Lambda_k ||g_k||^2) with the context's Lambda_k, the
    fading drawn from the trial's stream (another trial: other fading, same gains), no
    calibration."""
    context = _gains_context()
    design = _context_scheme().design(context)
    radio = design["radio"]
    assert radio["kappa"] == 1.0 and radio["path_gain"] == context.channel.path_gain.tolist()
    assert radio["distances_m"] == context.channel.distances_m.tolist()
    fading = np.asarray(radio["channel_norm2"]) / np.asarray(radio["path_gain"])
    assert (fading > 0).all()
    expected = math.sqrt(CONTEXT_RADIO["noise_w"]) / np.sqrt(CONTEXT_RADIO["max_power_w"]
                                                     * np.asarray(radio["channel_norm2"]))
    np.testing.assert_allclose(design["sigma_ch"], expected, rtol=1e-12)
    again = _context_scheme().design(context)
    assert again["radio"] == radio                                   # the trial's stream
    other = _context_scheme().design(_gains_context(trial=1))
    assert other["radio"]["path_gain"] == radio["path_gain"]
    assert other["radio"]["channel_norm2"] != radio["channel_norm2"]


def test_eps_total_gives_the_smallest_noise_level_that_meets_it():
    """The design's nu has eps_T (LAPA's accounting, `total_budget`) at most the given budget and
    within rounding of it; a larger budget gives less noise."""
    design = _context_scheme().design(_gains_context())
    forward = dict(clip=20.0, dim=CDIM, lr=0.05, mean_size=120.0, rounds=CROUNDS, devices=CK,
                   delta=1e-5)
    assert design["eps_total"] <= 4.0
    assert design["eps_total"] == pytest.approx(4.0, rel=1e-12)
    assert mech.total_budget(nu=design["nu"], **forward) == design["eps_total"]
    assert _context_scheme(eps_total=16.0).design(_gains_context())["nu"] < design["nu"]
    assert design["sigma_init2"] == pytest.approx((design["nu"] * 20.0) ** 2 / CDIM, rel=1e-12)


@pytest.mark.parametrize("budget", [0.5, 1.0, 4.0, 64.0, 1e3])
def test_noise_level_for_budget_never_overshoots(budget):
    forward = dict(clip=3.0, dim=7850, lr=0.05, mean_size=1200.0, rounds=30, devices=50,
                   delta=1e-5)
    nu = mech.noise_level_for_budget(eps_total=budget, **forward)
    assert mech.total_budget(nu=nu, **forward) <= budget
    assert mech.total_budget(nu=nu, **forward) == pytest.approx(budget, rel=1e-12)


def test_device_budget_level_sets_nu_from_the_trials_channel_noise():
    """budget_level device: the design's nu is the wing's device-level one on the trial's sizes
    and channel noise, its eps_T (the sample-level eps that nu gives) recorded; the records'
    simulated events compose to at most the target."""
    from airfl.pipeline.stages.privacy import simulated_epsilons

    context = _gains_context()
    scheme = _context_scheme(budget_level="device")
    design = scheme.design(context)
    nu = mech.noise_level_for_device_budget(eps_total=4.0, clip=20.0, dim=CDIM,
                                            sizes=design["sizes"], sigma_ch=design["sigma_ch"],
                                            rounds=CROUNDS, delta=1e-5)
    assert design["nu"] == nu
    forward = dict(clip=20.0, dim=CDIM, lr=0.05, mean_size=120.0, rounds=CROUNDS, devices=CK,
                   delta=1e-5)
    assert design["eps_total"] == mech.total_budget(nu=nu, **forward)
    records = [_round(t, torch.zeros(CK, CDIM, dtype=torch.float64), scheme, design)[1]
               for t in range(1, CROUNDS + 1)]
    eps = simulated_epsilons(records, 1e-5)["improved"][-1]
    assert eps <= 4.0 and eps == pytest.approx(4.0, rel=1e-3)


def test_bad_settings_stop_naming_the_key():
    with pytest.raises(ValueError, match=r"curves\.c\.budget_level: 'user'; allowed: sample, "
                                         "device"):
        _context_scheme(budget_level="user")
    with pytest.raises(ValueError, match="'device' needs privacy 'uniform' and eps_total"):
        _context_scheme(budget_level="device", privacy="arb")
    with pytest.raises(ValueError, match=r"curves\.c\.uplink_gains: 'mine'; allowed: own, "
                                         "context"):
        _context_scheme(uplink_gains="mine")
    with pytest.raises(ValueError, match="nu and eps_total both set"):
        _context_scheme(nu=4.0)
    with pytest.raises(ValueError, match="needs nu .* or eps_total"):
        _context_scheme(eps_total=None)
    with pytest.raises(ValueError, match=r"curves\.c\.radio: uplink_gains context needs "
                                         "noise_w"):
        _context_scheme(radio={"antennas": 1, "max_power_w": 1.0})
    with pytest.raises(ValueError, match="eps_total must be > 0"):
        _context_scheme(eps_total=0.0).design(_gains_context())
