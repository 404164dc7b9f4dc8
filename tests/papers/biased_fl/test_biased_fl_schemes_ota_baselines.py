"""Biased FL's six OTA baselines of Fig. 2(b,c) (schemes/ota_baselines.py, paper Sec. V-B):
vanilla OTA-FL, LCPC, OPC (compensation and FL), BBFL (interior and alternative), and designs
where nobody transmits."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from airfl.channel.fading import rayleigh_power
from airfl.core.scheme import ChannelStatistics, DesignContext, RoundState
from airfl.pipeline.registry import build_scheme
from airfl.papers.biased_fl.schemes import ota_baselines as osb
from airfl.runtime.rng import RoundStreams

from biased_fl_ota_helpers import (
    ES, N0, ETA, MU, NS, DS, LAM_S, DIST_S, G_S, ota_context, ota_state, unit_gradients,
    make_scheme, mean_estimate)


# ---- default OTA geometry --------------------------------------------------
N, R_MAX, D_MODEL = 10, 3000.0, 7850
RADII = R_MAX * np.sqrt((np.arange(1, N + 1) - 0.5) / N)
LAM = 10.0 ** (-(50.0 + 22.0 * np.log10(RADII)) / 10.0)


def test_vanilla_ota_fl_is_unbiased():
    scheme = make_scheme("vanilla_ota_fl")
    updates = unit_gradients(0.7)
    mean, se = mean_estimate(scheme, {}, updates, 1500)
    assert torch.all((mean - updates.mean(0)).abs() <= 5 * se + 1e-12)


def test_lcpc_is_proposed_with_common_gamma_and_post_scaler_n_gamma():
    lcpc = make_scheme("lcpc_ota_comp")
    design = lcpc.design(ota_context())
    gamma = math.sqrt(design["eta"])                                     # q >= eta <=> chi with gamma
    proposed = make_scheme("biased_ota", variant="nv")
    fake = {"gamma": [gamma] * NS, "alpha": NS * gamma}                  # post-scaler N gamma
    updates = unit_gradients(0.8)
    for t in range(1, 40):
        a, rec_a = lcpc.aggregate(updates, ota_state(t), design)
        b, rec_b = proposed.aggregate(updates, ota_state(t), fake)
        assert torch.allclose(a, b, rtol=1e-12, atol=1e-13)
        assert rec_a["participants"] == rec_b["participants"]
    # eta_L minimises the fading-averaged MSE J on a dense grid
    qbar = DS * 0.5 * LAM_S.numpy() / G_S ** 2
    s2 = DS * 1e-3 / G_S ** 2
    grid = np.exp(np.linspace(math.log(qbar.min() * 1e-4), math.log(qbar.max() * 1e4), 20001))
    assert design["mse"] <= min(osb.average_mse(e, qbar, s2) for e in grid) + 1e-12


def test_opc_ota_comp_denoising_factor_minimises_the_mse():
    rng = np.random.default_rng(1)
    for _ in range(20):
        q = torch.tensor(rng.exponential(size=NS) * rng.uniform(0.01, 10, size=NS), dtype=torch.float64)
        s2 = float(rng.uniform(0.01, 5))
        eta, mse = osb.opc_denoising_factor(q, s2)
        grid = torch.exp(torch.linspace(math.log(float(q.min()) * 1e-3), math.log(float(q.max()) * 1e3),
                                        200001, dtype=torch.float64))
        dense = osb.opc_mse(grid, q, s2)
        assert mse <= float(dense.min()) * (1 + 1e-12)
        assert mse == pytest.approx(float(osb.opc_mse(torch.tensor(eta), q, s2)), rel=1e-12)
    scheme = make_scheme("opc_ota_comp")
    updates = unit_gradients(1.0)
    est, rec = scheme.aggregate(updates, ota_state(4), {})
    assert rec["participants"] == NS and rec["max_energy_ratio"] <= 1 + 1e-12


def test_opc_ota_fl_meets_average_and_peak_energy():
    T = 40
    future = torch.stack([ota_state(t).channel_power for t in range(1, T + 1)])
    scheme = make_scheme("opc_ota_fl", eta0_grid=25, kappa_peak=4.0)
    design = scheme.design(ota_context(rounds=T, future=lambda rounds: future[:rounds]))
    a = np.array(design["gains"])
    q = DS * 0.5 * future.numpy() / G_S ** 2
    energy = a ** 2 * design["eta0"] / q
    assert a.shape == (T, NS)
    assert np.all(energy.mean(0) <= 1 + 1e-9)                            # (1/T) sum_t e <= 1
    assert np.all(energy <= 4.0 * (1 + 1e-12))                           # peak
    # a large eta0 makes every average constraint bind: lambda_m > 0 and (1/T) sum_t e = 1
    omega = (1 - ETA * MU) ** (2 * (T - 1 - np.arange(T)))
    gains, lam = osb.opc_fl_gains(q, omega, 50.0 * float(np.median(q)), 4.0)
    tight_energy = (gains ** 2 * 50.0 * float(np.median(q)) / q).mean(0)
    assert np.all(lam > 0) and np.allclose(tight_energy, 1.0, atol=1e-9)
    assert np.all(tight_energy <= 1 + 1e-12)
    updates = unit_gradients(1.0)
    est, rec = scheme.aggregate(updates, ota_state(7), design)
    noise = torch.randn(DS, generator=ota_state(7).streams("noise"), dtype=torch.float64)
    expected = (torch.tensor(a[6]) @ updates + math.sqrt(1e-3 / design["eta0"]) * noise) / NS
    assert torch.allclose(est, expected, rtol=1e-12, atol=1e-13)
    assert rec["max_energy_ratio"] <= 4.0 * (1 + 1e-12)
    with pytest.raises(ValueError, match="channel differs"):
        scheme.aggregate(updates, ota_state(7, seed=1), design)


def test_bbfl_interior_never_schedules_exterior_devices():
    scheme = make_scheme("bbfl_interior", radius_m=1000.0, g_th=0.3)         # rho_in = 700 m: devices 0-2
    design = scheme.design(ota_context())
    assert design["interior"] == [True, True, True, False, False]
    updates = unit_gradients(1.0)
    updates[3:] = 1e6                                                    # exterior: unmistakable
    for t in range(1, 80):
        state = ota_state(t)
        est, rec = scheme.aggregate(updates, state, design)
        assert est.abs().max() < 1e3 and rec["participants"] <= 3
        fading = state.channel_power / LAM_S                             # [16]: |h|^2 / Lambda
        active = torch.tensor(design["interior"]) & (fading >= 0.3)
        assert rec["participants"] == int(active.sum())
        if active.any():
            noise = torch.randn(DS, generator=ota_state(t).streams("noise"), dtype=torch.float64)
            expected = (updates[active].sum(0) + math.sqrt(1e-3 / design["eta_in"]) * noise) \
                / int(active.sum())
            assert torch.allclose(est, expected, rtol=1e-12, atol=1e-12)
        else:
            assert torch.all(est == 0)
    alt = make_scheme("bbfl_alternative", radius_m=1000.0, q_alt=0.5)
    design_alt = alt.design(ota_context())
    flags = [alt.aggregate(updates, ota_state(t), design_alt)[1]["scheduled_all"] for t in range(1, 80)]
    assert 10 < sum(flags) < 70                                          # both modes occur


def test_bbfl_receive_level_by_hand():
    """[16]'s rule on a hand-computed case: q-units qbar_m = d E_s Lambda_m / G^2 = 12*0.5*Lambda."""
    qbar = DS * 0.5 * LAM_S.numpy() / G_S ** 2                         # [12, 6, 3, 1.5, 0.6]
    interior = np.array([True, True, True, False, False])
    # average constraint: eta = min_S qbar / E1(g_th); E1(0.5) = 0.5597735947761608 (A&S 5.1)
    assert osb.bbfl_receive_level(qbar[interior], 0.5, "average") == pytest.approx(
        3.0 / 0.5597735947761608, rel=1e-12)
    assert osb.bbfl_receive_level(qbar, 0.5, "peak") == pytest.approx(0.5 * 0.6, rel=1e-14)
    design = make_scheme("bbfl_alternative", radius_m=1000.0, g_th=0.5, q_alt=0.25).design(ota_context())
    assert design["eta_in"] == pytest.approx(3.0 / 0.5597735947761608, rel=1e-12)
    assert design["eta_all"] == pytest.approx(0.6 / 0.5597735947761608, rel=1e-12)
    assert design["transmit_probability"] == pytest.approx(math.exp(-0.5), rel=1e-15)
    assert design["expected_participants"] == pytest.approx((0.25 * 5 + 0.75 * 3) * math.exp(-0.5))
    # the weakest interior device meets the average energy budget with equality, E[eta/q 1{.}] = 1
    fading = torch.empty(400000, dtype=torch.float64).exponential_(generator=torch.Generator().manual_seed(4))
    kept = fading[fading >= 0.5]
    energy = float((design["eta_in"] / (qbar[2] * kept)).sum()) / fading.numel()
    assert energy == pytest.approx(1.0, rel=0.02)


def test_bbfl_average_is_unbiased_given_the_number_received():
    """[16]: every scheduled device is cut off with the same probability 1 - exp(-g_th), so given
    |A_t| = k the received set is a uniform k-subset and g_hat is unbiased for the scheduled mean,
    although the devices' path gains differ by 20x (the old common-q threshold was not)."""
    stats = ChannelStatistics(LAM_S, reference_gain=0.1, bandwidth_hz=2e5, distances_m=DIST_S,
                              energy_per_symbol=5e3, noise_psd=1e-3)
    scheme = make_scheme("bbfl_interior", radius_m=2000.0, g_th=0.7)         # all five scheduled
    design = scheme.design(DesignContext(NS, DS, 20, torch.full((NS,), 100), stats, trial=0))
    updates = unit_gradients(1.0)
    by_count: dict[int, list[torch.Tensor]] = {}
    seen = torch.zeros(NS, dtype=torch.float64)
    rounds = 6000
    for t in range(1, rounds + 1):
        streams = RoundStreams(1, "bbfl_unbiased", 0, t)
        state = RoundState(t, rayleigh_power(LAM_S, 1, streams("channel"))[0],
                           torch.full((NS,), 100), stats, streams)
        est, rec = scheme.aggregate(updates, state, design)
        seen += (state.channel_power / LAM_S >= 0.7).double()
        by_count.setdefault(rec["participants"], []).append(est)
    freq = seen / rounds
    p = math.exp(-0.7)
    assert torch.all((freq - p).abs() <= 5 * math.sqrt(p * (1 - p) / rounds))   # same for all
    target = updates.mean(0)
    for k in (1, 2, 3, 4):
        est = torch.stack(by_count[k])
        se = est.std(0) / math.sqrt(est.shape[0])
        assert torch.all((est.mean(0) - target).abs() <= 5 * se + 1e-12)


def test_no_transmission_designs_stop_with_a_clear_error():
    from airfl.core.participation import NoTransmissionError
    # LCPC at a noise-dominated SNR: J(eta) is minimal at "nobody transmits"
    noisy = ChannelStatistics(LAM_S, reference_gain=0.1, bandwidth_hz=2e5, distances_m=DIST_S,
                              energy_per_symbol=1e-4, noise_psd=1e-3)
    context = DesignContext(NS, DS, 20, torch.full((NS,), 100), noisy, trial=0)
    with pytest.raises(NoTransmissionError, match="lcpc.*eta_L.*snr_offset_db"):
        make_scheme("lcpc_ota_comp").design(context)
    # at the default test SNR LCPC transmits
    assert make_scheme("lcpc_ota_comp").design(ota_context())["expected_participants"] > 0.1
    # BB-FL with a cut-off so high that each device transmits with probability e^-5
    with pytest.raises(NoTransmissionError, match="g_th = 5.*lower g_th"):
        make_scheme("bbfl_interior", radius_m=1000.0, g_th=5.0).design(ota_context())
    expected = make_scheme("bbfl_interior", radius_m=1000.0, g_th=3.0).design(ota_context())
    assert expected["expected_participants"] == pytest.approx(3 * math.exp(-3.0))   # 0.149 >= 0.1


@pytest.mark.parametrize("offset_db,transmits", [(0.0, False), (30.0, True)])
def test_lcpc_at_the_papers_geometry_transmits_only_above_the_literal_snr(offset_db, transmits):
    """README finding: LCPC's designed truncation level leaves no device transmitting at the
    literal SNR; the design says so instead of training nothing."""
    from airfl.core.participation import NoTransmissionError

    es = ES * 10 ** (offset_db / 10)
    stats = ChannelStatistics(torch.as_tensor(LAM), reference_gain=float(LAM.min()),
                              bandwidth_hz=1e6, distances_m=torch.as_tensor(RADII),
                              energy_per_symbol=es, noise_psd=N0)
    context = DesignContext(N, D_MODEL, 500, torch.full((N,), 100), stats, trial=0)
    lcpc = build_scheme("lcpc_ota_comp", {"scheme": "lcpc_ota_comp", "G": 5.0})
    bbfl = build_scheme("bbfl_interior", {"scheme": "bbfl_interior", "G": 5.0, "radius_m": R_MAX})
    assert bbfl.design(context)["expected_participants"] == pytest.approx(5 * math.exp(-0.1))   # 5 within 0.7 rho_max
    if transmits:
        assert lcpc.design(context)["expected_participants"] > 8
    else:
        with pytest.raises(NoTransmissionError, match="lcpc_ota_comp.*edge of its search range"):
            lcpc.design(context)
