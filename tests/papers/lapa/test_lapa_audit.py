"""LAPA's audited mechanism (audit.py): the server update is the weighted Gaussian it simulates,
the audit's mu is 1 / z_simulated, below both epsilons."""

from __future__ import annotations

import pytest

from airfl.pipeline.params import load_params
from airfl.pipeline.registry import get_wing
from airfl.privacy.auditing import run_audit


@pytest.fixture(scope="module")
def params(repo_root):
    return load_params(str(repo_root / "params.yaml"), {})


def test_lapa_server_update_is_the_weighted_gaussian_it_simulates(params):
    """LAPA's record claims each device's own noise (smallest std over 2C); the server update
    (eq. 2) weights the canary by G_k and sums every device's noise: the audit measures that
    Gaussian, mu = 1 / z_simulated, and stays below both epsilons."""
    (mechanism, *_) = get_wing("lapa").audit_factory("uniform_dp")(params)
    assert mechanism.aggregation.endswith("LapaScheme.aggregate")
    result = run_audit(mechanism, 200_000, seed=6)
    assert result["holds"] and result["holds_simulated"]
    assert result["gdp_mu"] == pytest.approx(1.0 / mechanism.settings["z_simulated"], rel=0.03)
