"""OTA-FD's audited mechanisms (audit.py): the paper's formula bounds the exact Gaussian and the
audit under the code's sensitivity, the audit fails on a noise too small for that sensitivity,
and the FL benchmark's audit holds at 2C and fails on a too small noise."""

from __future__ import annotations

import pytest

from airfl.pipeline.params import load_params
from airfl.pipeline.registry import get_wing
from airfl.privacy.auditing import run_audit


@pytest.fixture(scope="module")
def params(repo_root):
    return load_params(str(repo_root / "params.yaml"), {})


def test_ota_fd_paper_formula_bounds_the_exact_gaussian_and_the_audit(params):
    """With the design made for the code's sensitivity (`per_class`, / B_i^k), realised_eps
    (Wei et al.) is an upper bound of the exact T-round Gaussian epsilon, and a summed T-round
    audit stays below both. With Lemma 1's smaller sensitivity (`paper`, / B_i) the exact
    epsilon of what the code releases exceeds the claimed one (a minority class of WD 0)."""
    audit = {**params["audit"], "ota_fd": {**params["audit"]["ota_fd"], "eps": [1.0], "T": 5}}

    def mechanism(mode):
        setting = {**params["ota_fd"]["setting"], "sensitivity_mode": mode}
        p = {**params, "audit": audit, "ota_fd": {**params["ota_fd"], "setting": setting}}
        return next(m for m in get_wing("ota_fd").audit_factory("otafd")(p)
                    if m.name.startswith("otafd_"))

    sound = mechanism("per_class")
    assert sound.eps_simulated <= sound.eps_claimed
    result = run_audit(sound, 20_000, seed=7)
    assert result["holds"] and result["holds_simulated"]
    short = mechanism("paper")
    assert short.eps_simulated > short.eps_claimed


def test_ota_fd_audit_fails_on_a_noise_too_small_for_the_codes_sensitivity(params):
    """The canary moves by the code's sensitivity sqrt(2)/B_0^k; a release whose noise is a
    twentieth of the design's leaks far beyond the claimed epsilon, and the audit says so
    (audited lower bound above 0 and above the claim: the audit can fail); the design's own
    noise at the same draws stays below the claim."""
    p = {**params, "audit": {**params["audit"], "ota_fd": {
        **params["audit"]["ota_fd"], "eps": [1.0], "T": 5}}}
    from airfl.papers.ota_fd.audit import _mechanism

    leaky = _mechanism(p, 1.0, noise_scale=0.05)
    result = run_audit(leaky, 20_000, seed=3)
    assert result["eps_audited_lower"] > 0.0 and not result["holds"]
    assert leaky.settings["canary_step"] == pytest.approx(
        2 ** 0.5 / p["ota_fd"]["analysis"]["minor" if leaky.settings["class"] else "dominant"])
    sound = run_audit(_mechanism(p, 1.0), 20_000, seed=3)
    assert sound["holds"]


def test_ota_fl_benchmark_audit_holds_at_2C_and_fails_on_a_too_small_noise(params):
    """The FL benchmark clips whole updates, so one sample moves a WD's update by 2C; the noise
    design and the claim use 2C too, so at a target eps the exact epsilon of the release is
    below the claim and the audit holds. With a twentieth of the design's noise the release
    leaks far beyond the claim and the audit says so (lower bound above 0 and the claim)."""
    from airfl.papers.ota_fd.audit import _fl_mechanism

    p = {**params, "audit": {**params["audit"], "ota_fd": {
        **params["audit"]["ota_fd"], "eps": [1.0], "T": 5}}}
    sound = _fl_mechanism(p, 1.0)
    assert sound.settings["canary_step"] == 2.0 and sound.settings["case"] == 2
    assert sound.eps_claimed == pytest.approx(1.0) and sound.eps_simulated <= sound.eps_claimed
    assert run_audit(sound, 20_000, seed=5)["holds"]
    leaky = _fl_mechanism(p, 1.0, noise_scale=0.05)
    assert leaky.eps_claimed == sound.eps_claimed and leaky.eps_simulated > 10 * leaky.eps_claimed
    result = run_audit(leaky, 20_000, seed=5)
    assert result["eps_audited_lower"] > max(1.0, result["eps_claimed"]) and not result["holds"]
