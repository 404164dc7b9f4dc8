"""Biased FL's OTA design (design/ota.py, paper Sec. II-B, Lemma 1, Theorem 1, Sec. IV-A): the
closed forms NV and ZB, the SCA surrogate and its iterations, errors that name the solver
status."""

from __future__ import annotations

import math

import numpy as np
import pytest

from airfl.papers.biased_fl.design import ota as od


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
