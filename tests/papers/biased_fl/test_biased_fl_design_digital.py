"""Biased FL's digital design by SCA (design/digital.py, paper Sec. IV-B): the objective never
increases, the reference designs, solver errors and retries are reported."""

from __future__ import annotations

import numpy as np
import pytest

from airfl.papers.biased_fl.design import digital as dd
from airfl.papers.biased_fl.design import digital_model as dm
from airfl.papers.biased_fl.design import digital_surrogate as dsur

from biased_fl_digital_helpers import N0, D_MODEL, DESIGN_KW


# ------------------------------------------------------------------ SCA


def test_sca_objective_never_increases(designs):
    for name, out in designs.items():
        hist = np.asarray(out["objective_history"])
        assert np.all(np.diff(hist) <= 0), name
        assert out["iterations"] >= 2 and all(st.startswith("optimal") for st in out["statuses"])
        if name != "zb_qnv":                                # Psi is the SCA objective there
            assert np.all(np.diff(out["psi_history"]) <= 0), name
        assert out["psi"] >= out["psi_relaxed"] * (1 - 1e-12)   # floor(r') + 1 <= r' + 1


def test_reference_zero_bias_min_quantization_noise(designs):
    """Our solve of (23): r = 15, latency 0.234 s, Psi = 2.797."""
    out = designs["zb_qnv"]
    assert out["converged"]
    assert np.all(out["r"] == 15)
    assert out["expected_latency_s"] == pytest.approx(0.234, abs=1e-3)
    assert out["psi"] == pytest.approx(2.797, abs=2e-3)
    assert np.allclose(out["p"], 0.1)
    assert out["expected_latency_s"] <= 0.25


def test_reference_optimised_designs(designs):
    """Our SCA (24) solve: opt Psi in [1.60, 1.70] with r = 8; zero-bias opt Psi ~ 1.89, r = 8."""
    opt, zb = designs["opt"], designs["zb_opt"]
    assert opt["converged"] and 1.60 <= opt["psi"] <= 1.70
    assert np.all(opt["r"] == 8)
    spec_beta = [0.281, 0.165, 0.120, 0.093, 0.075, 0.061, 0.051, 0.043, 0.036, 0.031]
    spec_p = [0.190, 0.152, 0.128, 0.110, 0.096, 0.083, 0.073, 0.064, 0.056, 0.048]
    assert np.allclose(opt["beta"], spec_beta, atol=2e-3)
    assert np.allclose(opt["p"], spec_p, atol=2e-3) and opt["p"].sum() == pytest.approx(1.0)
    assert np.all(zb["r"] == 8) and zb["psi"] == pytest.approx(1.89, abs=0.01)
    assert np.allclose(zb["p"], 0.1)
    assert opt["psi"] < zb["psi"] < designs["zb_qnv"]["psi"]
    for out in (opt, zb):
        assert out["expected_latency_s"] <= 0.25
        q = dm.digital_quantities(out["rho"], out["nu"], out["r"], DESIGN_KW["lam"], Es=1e-9, N0=N0, d=D_MODEL, B=1e6)
        assert np.allclose(q["p"], out["p"]) and q["expected_latency_s"] == out["expected_latency_s"]


def test_design_errors_are_raised_not_hidden(monkeypatch):
    with pytest.raises(dd.DesignError, match="status"):
        dd.design_zb_qnv(**DESIGN_KW, solver="NO_SUCH_SOLVER")
    with pytest.raises(dd.DesignError, match="no feasible SCA start"):
        dd.design_zb_qnv(**{**DESIGN_KW, "T_max": 1e-6})
    monkeypatch.setattr(dsur.DigitalSurrogate, "solve", lambda self, solver: ("infeasible", "infeasible"))
    with pytest.raises(dd.DesignError, match="iteration 1: status=infeasible.*digital SCA"):
        dd.design_sca(**DESIGN_KW, zero_bias=True)


def test_solver_retry_is_recorded(monkeypatch):
    """A CLARABEL failure is retried on the same problem with other settings, and recorded."""
    import cvxpy as cp
    real = cp.Problem.solve

    def flaky(self, *args, **kwargs):
        if len(kwargs) == 1:                                  # default settings: pretend a failure
            raise cp.error.SolverError("Solver 'CLARABEL' failed.")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(cp.Problem, "solve", flaky)
    out = dd.design_zb_qnv(**DESIGN_KW)
    assert all("retry 1" in status for status in out["statuses"])
    assert np.all(out["r"] == 15) and out["psi"] == pytest.approx(2.797, abs=2e-3)
