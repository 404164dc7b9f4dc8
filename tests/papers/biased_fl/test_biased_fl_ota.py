"""Biased FL OTA design math (closed forms, Lemma 1 / Theorem 1, SCA) and the OTA schemes.

Reference values: our solves of (20)-(21) (default quantile geometry)
(SCA iteration counts; at the literal SNR the optimum is the NV design).
"""

from __future__ import annotations

import json
import math

import jsonschema
import numpy as np
import pytest
import torch

from airfl.channel.fading import rayleigh_power
from airfl.core.scheme import ChannelStatistics, DesignContext, RoundState
from airfl.pipeline.registry import build_scheme, scheme_kinds
from airfl.papers.biased_fl.design import ota as od
from airfl.papers.biased_fl.schemes import ota as osch
from airfl.papers.biased_fl.schemes import ota_baselines as osb
from airfl.runtime.rng import RoundStreams

# ---- default OTA geometry --------------------------------------------------
N, R_MAX, D_MODEL = 10, 3000.0, 7850
RADII = R_MAX * np.sqrt((np.arange(1, N + 1) - 0.5) / N)
LAM = 10.0 ** (-(50.0 + 22.0 * np.log10(RADII)) / 10.0)
ES, N0 = 1e-9, 10.0 ** ((-161.0 - 30.0) / 10.0)
ETA, MU, KAPPA = 0.05, 0.01, 0.01


def _psi_of(design, G):
    zeta = od.zeta_ota(design["p"], design["beta"], design["alpha"], G=G, d=D_MODEL, N0=N0)
    return od.psi(zeta, design["p"], ETA, MU, KAPPA)


# ---- closed forms ------------------------------------------------------------------------------

def test_nv_has_beta_e_half_and_p_proportional_to_sqrt_lambda():
    nv = od.design_nv(LAM, G=20.0, d=D_MODEL, Es=ES)
    assert np.allclose(nv["beta"], math.exp(-0.5), rtol=1e-14)
    assert np.allclose(nv["p"], np.sqrt(LAM) / np.sqrt(LAM).sum(), rtol=1e-12)
    q = od.ota_quantities(nv["gamma"], LAM, G=20.0, d=D_MODEL, Es=ES)
    assert q["alpha"] == pytest.approx(nv["alpha"], rel=1e-14)
    assert np.allclose(nv["gamma"], np.sqrt(D_MODEL * LAM * ES / (2 * 20.0 ** 2)), rtol=1e-14)  # eq. 22


def test_alpha_m_is_maximal_at_gamma_nv():
    nv = od.design_nv(LAM, G=20.0, d=D_MODEL, Es=ES)
    for factor in (0.3, 0.9, 0.999, 1.001, 1.1, 2.0):
        other = od.ota_quantities(nv["gamma"] * factor, LAM, G=20.0, d=D_MODEL, Es=ES)
        assert np.all(other["alpha_m"] < nv["alpha"] * nv["p"])


def test_zb_is_zero_bias_on_the_lower_branch():
    zb = od.design_zb(LAM, G=20.0, d=D_MODEL, Es=ES)
    nv = od.design_nv(LAM, G=20.0, d=D_MODEL, Es=ES)
    assert np.allclose(zb["p"], 1.0 / N, atol=1e-13)
    assert np.all(zb["gamma"] <= nv["gamma"] * (1 + 1e-15))            # lower branch: gamma <= gamma^NV
    assert zb["gamma"][-1] == pytest.approx(nv["gamma"][-1], rel=1e-12)  # weakest device uses gamma^NV
    alpha_max = nv["alpha"] * nv["p"]
    assert zb["alpha"] == pytest.approx(N * alpha_max.min(), rel=1e-12)
    assert np.all(np.diff(zb["beta"]) < 0)                               # stronger devices: higher beta


def test_ota_design_sanity_values():
    for G, zeta_nv, zeta_zb in ((20.0, 2071.1, 7294.0), (5.0, 129.4, 455.9)):
        nv, zb = od.design_nv(LAM, G=G, d=D_MODEL, Es=ES), od.design_zb(LAM, G=G, d=D_MODEL, Es=ES)
        assert od.zeta_ota(nv["p"], nv["beta"], nv["alpha"], G=G, d=D_MODEL, N0=N0) == pytest.approx(zeta_nv, rel=1e-3)
        assert od.zeta_ota(zb["p"], zb["beta"], zb["alpha"], G=G, d=D_MODEL, N0=N0) == pytest.approx(zeta_zb, rel=1e-3)
    nv = od.design_nv(LAM, G=20.0, d=D_MODEL, Es=ES)
    expected = [0.267, 0.146, 0.110, 0.092, 0.080, 0.071, 0.065, 0.060, 0.056, 0.053]
    assert np.allclose(nv["p"], expected, atol=6e-4)
    beta_zb = [0.99, 0.97, 0.95, 0.93, 0.91, 0.88, 0.84, 0.80, 0.75, 0.61]
    assert np.allclose(od.design_zb(LAM, G=20.0, d=D_MODEL, Es=ES)["beta"], beta_zb, atol=6e-3)


def test_bound_terms_use_2_d_squared_and_twice_psi():
    p = np.array([0.5, 0.3, 0.2])
    terms = od.bound_terms(p, 3.0, eta=0.1, mu=0.2, kappa=0.5, D=4.0, t=7)
    assert terms["init"] == pytest.approx(2 * 16.0 * (1 - 0.02) ** 14)     # A4: 2 D^2 (1 - eta mu)^{2t}
    bias = 3 * 0.25 / 0.04 * np.sum((p - 1 / 3) ** 2)
    assert terms["bias"] == pytest.approx(2 * bias)
    assert terms["var"] == pytest.approx(2 * 0.5 * 3.0)
    assert terms["total"] == pytest.approx(terms["init"] + 2 * od.psi(3.0, p, 0.1, 0.2, 0.5))


# ---- SCA -------------------------------------------------------------------------------------

def _relaxed_objective(gt, p, at, G, norm):
    """(20a) with (20b) relaxed: (eta/mu)[G^2 sum p gt ct/at - G^2 sum p^2 + sig2t/at^2] + bias."""
    var = G ** 2 * np.sum(p * gt * norm["ct"] / at) - G ** 2 * np.sum(p ** 2) + norm["sig2t"] / at ** 2
    return ETA / MU * var + N * KAPPA ** 2 / MU ** 2 * np.sum((p - 1 / N) ** 2)


@pytest.mark.parametrize("offset_db", [0.0, 30.0])
def test_surrogate_is_a_tight_upper_bound(offset_db):
    G, es = 20.0, ES * 10 ** (offset_db / 10)
    norm = od.normalisation(LAM, G=G, d=D_MODEL, Es=es, N0=N0)
    zb = od.design_zb(LAM, G=G, d=D_MODEL, Es=es)
    gt_bar, p_bar = zb["gamma"] / norm["s"], zb["p"]
    at_bar = zb["alpha"] / norm["aref"]
    kw = dict(G=G, sig2t=norm["sig2t"], eta=ETA, mu=MU, kappa=KAPPA)
    z_bar = p_bar * gt_bar * norm["ct"] / at_bar
    tight = od.surrogate_objective(gt_bar, p_bar, z_bar, at_bar, p_bar, **kw)
    assert tight == pytest.approx(od.true_psi(zb["gamma"], LAM, G=G, d=D_MODEL, Es=es, N0=N0, eta=ETA, mu=MU, kappa=KAPPA), rel=1e-11)
    assert np.allclose(od.linearised_z(gt_bar, p_bar, at_bar, gt_bar, p_bar, norm["ct"]), z_bar, rtol=1e-12)
    assert od.surrogate_feasible(gt_bar, p_bar, z_bar, at_bar, gt_bar, p_bar, at_bar, norm["ct"])
    rng = np.random.default_rng(0)
    checked = 0
    for _ in range(300):
        p = p_bar * np.exp(0.05 * rng.standard_normal(N))
        p /= p.sum()
        at = at_bar * math.exp(0.05 * rng.standard_normal())
        level = np.exp(np.log(at_bar * p_bar) + at / at_bar + p / p_bar - 2.0) / norm["ct"]  # (21c) LHS
        if np.any(level > math.exp(-0.5)):
            continue
        gt = np.minimum(od.lower_branch_root(level) * (1 + 1e-12), 1.0)
        z = od.linearised_z(gt, p, at, gt_bar, p_bar, norm["ct"])                       # (21b) tight
        if not od.surrogate_feasible(gt, p, z, at, gt_bar, p_bar, at_bar, norm["ct"], tol=1e-9):
            continue
        checked += 1
        upper = od.surrogate_objective(gt, p, z, at, p_bar, **kw)
        relaxed = _relaxed_objective(gt, p, at, G, norm)
        assert upper >= relaxed * (1 - 1e-12)
        # post-processing (A12) of this point never exceeds the relaxed objective
        gt_pp = od.lower_branch_root(at * p / norm["ct"])
        true = od.true_psi(gt_pp * norm["s"], LAM, G=G, d=D_MODEL, Es=es, N0=N0, eta=ETA, mu=MU, kappa=KAPPA)
        assert true <= relaxed * (1 + 1e-9)
    assert checked >= 50


def test_sca_at_literal_snr_is_the_nv_design_and_monotone():
    out = od.design_sca(LAM, G=20.0, d=D_MODEL, Es=ES, N0=N0, eta=ETA, mu=MU, kappa=KAPPA)
    nv, zb = od.design_nv(LAM, G=20.0, d=D_MODEL, Es=ES), od.design_zb(LAM, G=20.0, d=D_MODEL, Es=ES)
    psi_nv, psi_zb = _psi_of(nv, 20.0), _psi_of(zb, 20.0)
    assert out["converged"] and out["iterations"] <= 10                 # our solves: 3-7 iterations
    assert out["psi"] <= min(psi_nv, psi_zb)
    assert out["psi"] == pytest.approx(psi_nv, rel=1e-3)                 # our solves: optimum = NV
    assert np.allclose(out["p"], nv["p"], atol=2e-3)
    assert out["psi"] == pytest.approx(_psi_of(out, 20.0), rel=1e-12)
    for history in out["psi_history"].values():
        assert np.all(np.diff(history) <= 0)
    assert out["psi_history"]["nv"][0] == pytest.approx(psi_nv, rel=1e-12)
    assert out["psi_history"]["zb"][0] == pytest.approx(psi_zb, rel=1e-12)
    assert set(out["statuses"]) <= {"optimal", "optimal_inaccurate"}


def test_sca_at_high_snr_moves_toward_zero_bias():
    es = ES * 1e6                                                       # +60 dB (A1 sensitivity)
    out = od.design_sca(LAM, G=5.0, d=D_MODEL, Es=es, N0=N0, eta=ETA, mu=MU, kappa=KAPPA, max_iter=60)
    nv, zb = od.design_nv(LAM, G=5.0, d=D_MODEL, Es=es), od.design_zb(LAM, G=5.0, d=D_MODEL, Es=es)
    zeta = lambda d: od.zeta_ota(d["p"], d["beta"], d["alpha"], G=5.0, d=D_MODEL, N0=N0)  # noqa: E731
    psi_nv, psi_zb = (od.psi(zeta(x), x["p"], ETA, MU, KAPPA) for x in (nv, zb))
    assert not out["converged"] and out["stop_reason"] == "max_iter"    # ours: 600-1000 needed
    assert out["iterations"] == 60
    assert out["psi"] < 0.1 * psi_zb < psi_nv
    assert np.abs(out["p"] - 1 / N).max() < 0.2 * np.abs(nv["p"] - 1 / N).max()
    assert np.all(out["beta"] > 0.9)
    for history in out["psi_history"].values():
        assert np.all(np.diff(history) <= 0)


def test_sca_at_30_db_beats_both_closed_forms():
    es = ES * 1e3
    out = od.design_sca(LAM, G=20.0, d=D_MODEL, Es=es, N0=N0, eta=ETA, mu=MU, kappa=KAPPA)
    psi_nv = _psi_of(od.design_nv(LAM, G=20.0, d=D_MODEL, Es=es), 20.0)
    psi_zb = _psi_of(od.design_zb(LAM, G=20.0, d=D_MODEL, Es=es), 20.0)
    assert out["converged"] and 20 <= out["iterations"] <= 200         # our solves: ~60 iterations
    assert out["psi"] < 0.7 * min(psi_nv, psi_zb)
    runs = out["psi_history"]
    assert runs["nv"][-1] == pytest.approx(runs["zb"][-1], rel=1e-6)    # both starts agree


def test_design_errors_name_status_and_inputs():
    bad = LAM.copy()
    bad[3] = -1e-12
    with pytest.raises(od.DesignError, match=r"status=invalid_input.*Lambda=.*G=20"):
        od.design_sca(bad, G=20.0, d=D_MODEL, Es=ES, N0=N0, eta=ETA, mu=MU, kappa=KAPPA)
    with pytest.raises(od.DesignError, match=r"status=solver_error.*iteration 1.*NO_SUCH_SOLVER.*Es=1e-09"):
        od.design_sca(LAM, G=20.0, d=D_MODEL, Es=ES, N0=N0, eta=ETA, mu=MU, kappa=KAPPA, solver="NO_SUCH_SOLVER")
    assert issubclass(od.DesignError, RuntimeError)


# ---- schemes -----------------------------------------------------------------------------------
NS, DS = 5, 12
LAM_S = torch.tensor([2.0, 1.0, 0.5, 0.25, 0.1], dtype=torch.float64)
DIST_S = torch.tensor([100.0, 300.0, 600.0, 800.0, 950.0], dtype=torch.float64)
STATS = ChannelStatistics(LAM_S, reference_gain=0.1, bandwidth_hz=2e5, distances_m=DIST_S,
                          energy_per_symbol=0.5, noise_psd=1e-3)
G_S = 1.0


def _context(rounds=20, future=None):
    return DesignContext(NS, DS, rounds, torch.full((NS,), 100), STATS, trial=0,
                         future_channel_power=future)


def _state(t, seed=0, stats=STATS):
    streams = RoundStreams(seed, "biased_ota_test", 0, t)
    power = rayleigh_power(stats.path_gain, 1, streams("channel"))[0]
    return RoundState(t, power, torch.full((NS,), 100), stats, streams)


def _gradients(scale=1.0):
    g = torch.randn(NS, DS, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    return g / torch.linalg.vector_norm(g, dim=1, keepdim=True) * scale * G_S


def _scheme(kind, **params):
    return build_scheme(kind, {"scheme": kind, "G": G_S, **params})


def _mean_estimate(scheme, design, updates, rounds):
    est = torch.stack([scheme.aggregate(updates, _state(t), design)[0] for t in range(1, rounds + 1)])
    return est.mean(0), est.std(0) / math.sqrt(rounds)


@pytest.mark.parametrize("variant", ["nv", "zb", "opt"])
def test_biased_ota_is_unbiased_for_the_p_weighted_mean(variant):
    scheme = _scheme("biased_ota", variant=variant)
    design = scheme.design(_context())
    p = torch.tensor(design["p"], dtype=torch.float64)
    if variant == "zb":
        assert torch.allclose(p, torch.full((NS,), 1 / NS, dtype=torch.float64), atol=1e-12)
    updates = _gradients(0.9)
    mean, se = _mean_estimate(scheme, design, updates, 2000)
    target = p @ updates                                                 # eq. 10: E g_hat = sum p g
    assert torch.all((mean - target).abs() <= 5 * se + 1e-12)
    if variant == "nv":                                                  # biased: not the plain mean
        assert (updates.mean(0) - target).abs().max() > 10 * se.max()


def test_biased_ota_formula_energy_and_record():
    scheme = _scheme("biased_ota", variant="nv")
    design = scheme.design(_context())
    updates = _gradients(1.0)
    for t in range(1, 30):
        state = _state(t)
        est, rec = scheme.aggregate(updates, state, design)
        gamma = torch.tensor(design["gamma"], dtype=torch.float64)
        chi = state.channel_power.sqrt() >= G_S * gamma / math.sqrt(DS * 0.5)     # eq. 8
        noise = torch.randn(DS, generator=_state(t).streams("noise"), dtype=torch.float64)
        expected = ((chi * gamma) @ updates + math.sqrt(1e-3) * noise) / design["alpha"]  # eq. 9
        assert torch.allclose(est, expected, rtol=1e-12, atol=1e-12)
        assert rec["participants"] == int(chi.sum())
        assert rec["latency_s"] == DS / 2e5 and rec["privacy"] is None
        assert rec["max_energy_ratio"] <= 1.0 + 1e-12 and rec["energy_violations"] == 0
    _, rec = scheme.aggregate(_gradients(3.0), _state(1), design)        # ||g|| > G: logged, not clipped
    assert rec["max_energy_ratio"] > 1.0 and rec["energy_violations"] >= 1


def test_biased_ota_design_reports_psi_and_bound():
    design = _scheme("biased_ota", variant="opt", diameter=10.0).design(_context(rounds=50))
    bias = NS * KAPPA ** 2 / MU ** 2 * np.sum((np.array(design["p"]) - 1 / NS) ** 2)
    assert design["psi"] == pytest.approx(ETA / MU * design["zeta"] + bias)
    assert design["bound"]["init"] == pytest.approx(2 * 100.0 * (1 - ETA * MU) ** 100)
    assert design["sca"]["converged"]
    json.dumps(design)                                                   # JSON-able


def test_vanilla_ota_fl_is_unbiased():
    scheme = _scheme("vanilla_ota_fl")
    updates = _gradients(0.7)
    mean, se = _mean_estimate(scheme, {}, updates, 1500)
    assert torch.all((mean - updates.mean(0)).abs() <= 5 * se + 1e-12)


def test_lcpc_is_proposed_with_common_gamma_and_post_scaler_n_gamma():
    lcpc = _scheme("lcpc_ota_comp")
    design = lcpc.design(_context())
    gamma = math.sqrt(design["eta"])                                     # q >= eta <=> chi with gamma
    proposed = _scheme("biased_ota", variant="nv")
    fake = {"gamma": [gamma] * NS, "alpha": NS * gamma}                  # post-scaler N gamma
    updates = _gradients(0.8)
    for t in range(1, 40):
        a, rec_a = lcpc.aggregate(updates, _state(t), design)
        b, rec_b = proposed.aggregate(updates, _state(t), fake)
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
    scheme = _scheme("opc_ota_comp")
    updates = _gradients(1.0)
    est, rec = scheme.aggregate(updates, _state(4), {})
    assert rec["participants"] == NS and rec["max_energy_ratio"] <= 1 + 1e-12


def test_opc_ota_fl_meets_average_and_peak_energy():
    T = 40
    future = torch.stack([_state(t).channel_power for t in range(1, T + 1)])
    scheme = _scheme("opc_ota_fl", eta0_grid=25, kappa_peak=4.0)
    design = scheme.design(_context(rounds=T, future=lambda rounds: future[:rounds]))
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
    updates = _gradients(1.0)
    est, rec = scheme.aggregate(updates, _state(7), design)
    noise = torch.randn(DS, generator=_state(7).streams("noise"), dtype=torch.float64)
    expected = (torch.tensor(a[6]) @ updates + math.sqrt(1e-3 / design["eta0"]) * noise) / NS
    assert torch.allclose(est, expected, rtol=1e-12, atol=1e-13)
    assert rec["max_energy_ratio"] <= 4.0 * (1 + 1e-12)
    with pytest.raises(ValueError, match="channel differs"):
        scheme.aggregate(updates, _state(7, seed=1), design)


def test_bbfl_interior_never_schedules_exterior_devices():
    scheme = _scheme("bbfl_interior", radius_m=1000.0, g_th=0.3)         # rho_in = 700 m: devices 0-2
    design = scheme.design(_context())
    assert design["interior"] == [True, True, True, False, False]
    updates = _gradients(1.0)
    updates[3:] = 1e6                                                    # exterior: unmistakable
    for t in range(1, 80):
        state = _state(t)
        est, rec = scheme.aggregate(updates, state, design)
        assert est.abs().max() < 1e3 and rec["participants"] <= 3
        fading = state.channel_power / LAM_S                             # [16]: |h|^2 / Lambda
        active = torch.tensor(design["interior"]) & (fading >= 0.3)
        assert rec["participants"] == int(active.sum())
        if active.any():
            noise = torch.randn(DS, generator=_state(t).streams("noise"), dtype=torch.float64)
            expected = (updates[active].sum(0) + math.sqrt(1e-3 / design["eta_in"]) * noise) \
                / int(active.sum())
            assert torch.allclose(est, expected, rtol=1e-12, atol=1e-12)
        else:
            assert torch.all(est == 0)
    alt = _scheme("bbfl_alternative", radius_m=1000.0, q_alt=0.5)
    design_alt = alt.design(_context())
    flags = [alt.aggregate(updates, _state(t), design_alt)[1]["scheduled_all"] for t in range(1, 80)]
    assert 10 < sum(flags) < 70                                          # both modes occur


def test_bbfl_receive_level_by_hand():
    """[16]'s rule on a hand-computed case: q-units qbar_m = d E_s Lambda_m / G^2 = 12*0.5*Lambda."""
    qbar = DS * 0.5 * LAM_S.numpy() / G_S ** 2                         # [12, 6, 3, 1.5, 0.6]
    interior = np.array([True, True, True, False, False])
    # average constraint: eta = min_S qbar / E1(g_th); E1(0.5) = 0.5597735947761608 (A&S 5.1)
    assert osb.bbfl_receive_level(qbar[interior], 0.5, "average") == pytest.approx(
        3.0 / 0.5597735947761608, rel=1e-12)
    assert osb.bbfl_receive_level(qbar, 0.5, "peak") == pytest.approx(0.5 * 0.6, rel=1e-14)
    design = _scheme("bbfl_alternative", radius_m=1000.0, g_th=0.5, q_alt=0.25).design(_context())
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
    scheme = _scheme("bbfl_interior", radius_m=2000.0, g_th=0.7)         # all five scheduled
    design = scheme.design(DesignContext(NS, DS, 20, torch.full((NS,), 100), stats, trial=0))
    updates = _gradients(1.0)
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
        _scheme("lcpc_ota_comp").design(context)
    # at the default test SNR LCPC transmits
    assert _scheme("lcpc_ota_comp").design(_context())["expected_participants"] > 0.1
    # BB-FL with a cut-off so high that each device transmits with probability e^-5
    with pytest.raises(NoTransmissionError, match="g_th = 5.*lower g_th"):
        _scheme("bbfl_interior", radius_m=1000.0, g_th=5.0).design(_context())
    expected = _scheme("bbfl_interior", radius_m=1000.0, g_th=3.0).design(_context())
    assert expected["expected_participants"] == pytest.approx(3 * math.exp(-3.0))   # 0.149 >= 0.1


@pytest.mark.parametrize("kind,params", [
    ("biased_ota", {"variant": "zb"}), ("opc_ota_comp", {}), ("lcpc_ota_comp", {}),
    ("opc_ota_fl", {"eta0_grid": 5}), ("vanilla_ota_fl", {}),
    ("bbfl_interior", {"radius_m": 1000.0}), ("bbfl_alternative", {"radius_m": 1000.0}),
    ("bbfl_interior", {"radius_m": 1000.0, "power_constraint": "peak"})])
def test_every_kind_is_deterministic_with_latency_d_over_b(kind, params):
    future = torch.stack([_state(t).channel_power for t in range(1, 6)])
    scheme = _scheme(kind, **params)
    design = scheme.design(_context(rounds=5, future=lambda rounds: future[:rounds]))
    updates = _gradients(1.0).float()
    for t in range(1, 6):
        a, rec_a = scheme.aggregate(updates, _state(t), design)
        b, rec_b = scheme.aggregate(updates, _state(t), design)
        assert torch.equal(a, b) and a.dtype == torch.float32 and a.shape == (DS,)
        assert rec_a == rec_b
        assert rec_a["latency_s"] == DS / STATS.bandwidth_hz and rec_a["privacy"] is None
        assert isinstance(rec_a["participants"], int)
    validator = jsonschema.Draft202012Validator(osch.PARAMS_SCHEMA[kind])
    validator.validate({"scheme": kind, "G": G_S, **params})
    assert kind in scheme_kinds()


def test_params_schema_covers_every_kind_and_rejects_bad_values():
    kinds = {"biased_ota", "opc_ota_comp", "lcpc_ota_comp", "opc_ota_fl", "vanilla_ota_fl",
             "bbfl_interior", "bbfl_alternative"}
    assert set(osch.PARAMS_SCHEMA) == kinds
    for kind, schema in osch.PARAMS_SCHEMA.items():
        jsonschema.Draft202012Validator.check_schema(schema)
        validator = jsonschema.Draft202012Validator(schema)
        assert not validator.is_valid({"scheme": kind})                  # G required
        assert not validator.is_valid({"scheme": kind, "G": -1.0, "radius_m": 1.0})
    bad = {"scheme": "biased_ota", "G": 1.0, "variant": "best"}
    assert not jsonschema.Draft202012Validator(osch.PARAMS_SCHEMA["biased_ota"]).is_valid(bad)


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


@pytest.mark.parametrize("kind,params", [
    ("biased_ota", {"variant": "nv"}), ("opc_ota_comp", {}), ("lcpc_ota_comp", {}),
    ("opc_ota_fl", {"eta0_grid": 5}), ("vanilla_ota_fl", {}),
    ("bbfl_interior", {"radius_m": 1000.0}), ("bbfl_alternative", {"radius_m": 1000.0})])
def test_ota_noise_real_part_halves_the_noise_variance(kind, params):
    """ota_noise: real_part keeps Re of the CN(0, N0) noise of paper eq. 6: with zero gradients
    the estimate is the noise alone, the same draw scaled by sqrt(1/2) (variance halved), and the
    record's noise_std says so; the design is the same (it keeps the paper's N0)."""
    future = torch.stack([_state(t).channel_power for t in range(1, 6)])
    context = _context(rounds=5, future=lambda rounds: future[:rounds])
    full, half = _scheme(kind, **params), _scheme(kind, ota_noise="real_part", **params)
    assert full.param("ota_noise") == "real_full"                        # default unchanged
    design = full.design(context)
    assert half.design(context) == design
    zero = torch.zeros(NS, DS, dtype=torch.float64)
    powers = []
    for t in range(1, 6):
        a, rec_a = full.aggregate(zero, _state(t), design)
        b, rec_b = half.aggregate(zero, _state(t), design)
        assert rec_b["noise_std"] == pytest.approx(rec_a["noise_std"] * math.sqrt(0.5), rel=1e-12)
        assert torch.allclose(b, a * math.sqrt(0.5), rtol=1e-12, atol=0.0)
        powers.append((float(a.pow(2).sum()), float(b.pow(2).sum())))
    full_power, half_power = map(sum, zip(*powers))
    if full_power > 0:                                     # a round with someone received
        assert half_power / full_power == pytest.approx(0.5, rel=1e-12)


def test_ota_noise_is_passed_from_the_radio_to_ota_curves_only():
    from airfl.papers.biased_fl.run_blocks import curve_params

    params = {"seed": 0, "biased_fl": {"problem": {"mu": 0.01},
                                       "radio": {"ota_noise": "real_part"}}}
    panel = {"G": 5.0, "eta": 0.05}
    ota = curve_params(params, panel, {"scheme": "opc_ota_comp"}, "biased_fl/fig2b")
    digital = curve_params(params, panel, {"scheme": "qml", "K": 3}, "biased_fl/fig3b")
    assert ota["ota_noise"] == "real_part" and "ota_noise" not in digital
    assert _scheme("opc_ota_comp", ota_noise="real_part").param("ota_noise") == "real_part"
    validator = jsonschema.Draft202012Validator(osch.PARAMS_SCHEMA["opc_ota_comp"])
    assert validator.is_valid({"scheme": "opc_ota_comp", "G": 1.0, "ota_noise": "real_part"})
    assert not validator.is_valid({"scheme": "opc_ota_comp", "G": 1.0, "ota_noise": "imaginary"})
