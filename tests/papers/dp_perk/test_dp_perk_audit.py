"""DP as a perk's audited mechanism (audit.py): the simulated epsilon is the code's (the receiver
keeps Re(w^H n), a fixed set per round) and exceeds the paper's claim; the audit's GDP mu is the
simulated one."""

from __future__ import annotations

import pytest

from airfl.pipeline.params import load_params
from airfl.pipeline.registry import get_wing
from airfl.privacy import event_rdp
from airfl.privacy.auditing import run_audit


@pytest.fixture(scope="module")
def params(repo_root):
    return load_params(str(repo_root / "params.yaml"), {})


def test_dp_perk_simulated_epsilon_is_the_codes_and_exceeds_the_claim(params):
    """The receiver keeps Re(w^H n): variance q^2 sigma^2 / 2, and the round aggregates a fixed
    set: the simulated round's RDP is 2/r times the paper's (paper convention), and the audit's
    GDP mu is the simulated one, sqrt(2 r) times the claimed 1/z."""
    (mechanism, *_) = get_wing("dp_perk").audit_factory("airfl_dp")(params)
    r = mechanism.settings["sample_ratio"]
    assert mechanism.eps_simulated > mechanism.eps_claimed
    result = run_audit(mechanism, 400_000, seed=3)
    clip, std = mechanism.settings["clip"], mechanism.settings["noise_std_sum"]
    assert result["gdp_mu"] == pytest.approx(2.0 * clip / std, rel=0.03)   # sensitivity 2c
    assert result["holds_simulated"]
    from airfl.papers.dp_perk.privacy import gaussian_event, simulated_gaussian_event

    claim = event_rdp(gaussian_event(1.0, r, 1.0, 1.0), [2.0])
    sim = event_rdp(simulated_gaussian_event(1.0, 1.0, 0.5), [2.0])
    assert sim[0] / claim[0] == pytest.approx(2.0 / r, rel=1e-12)
