"""The registered audits: every one has its DAG job, the generic ones' properties hold where they
should (DP-FedAvg's Gaussian is exactly the accountant's), and the stage writes byte-identical
artifacts and the claim rows. A wing's own audits are tested beside its other modules
(tests/papers/<wing>/test_<wing>_audit.py)."""

import math
from pathlib import Path

import pytest

from airfl.pipeline import dag
from airfl.pipeline.params import load_params
from airfl.pipeline.registry import get_wing, wings
from airfl.privacy.auditing import run_audit

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def params():
    return load_params(str(REPO / "params.yaml"), {})


def test_every_registered_audit_has_a_dag_job_and_unknown_names_fail():
    registered = {(w.name, m) for w in wings() for m in w.audits}
    assert {("generic", "gaussian_dp"), ("generic", "ota_truncated_inversion"),
            ("cdpb", "cdpb"), ("dp_perk", "airfl_dp"), ("lapa", "uniform_dp"),
            ("ota_fd", "otafd")} <= registered
    jobs = {tuple(j.args) for j in dag.audit_jobs()}
    assert jobs == registered
    with pytest.raises(KeyError, match="registers no audited mechanism"):
        get_wing("cdpb").audit_factory("nope")


def test_dp_fedavg_is_audited_below_its_claim_with_the_mu_of_its_noise(params):
    """DP-FedAvg adds N(0, (zC)^2) to the clipped sum: one round is 1/z-GDP exactly."""
    mechanisms = get_wing("generic").audit_factory("gaussian_dp")(params)
    assert mechanisms[0].aggregation.endswith("GaussianDpFedAvg.aggregate")
    for mechanism in (m for m in mechanisms if "rounds" not in m.settings):
        result = run_audit(mechanism, 200_000, seed=1)
        z = mechanism.settings["noise_multiplier"]
        assert result["holds"] and result["eps_claimed"] == result["eps_simulated"]
        assert result["gdp_mu"] == pytest.approx(1.0 / z, rel=0.03)


def test_dp_fedavg_multi_round_audit_sums_fresh_noise_over_its_rounds(params):
    """The T-round audit: the canary's projection summed over T = 30 rounds of
    the scheme's own aggregate is sqrt(T)/z-GDP (each round's noise fresh and independent, as
    the composition the accountant does assumes); the exact epsilon is below the RDP-composed
    claim and the audited lower bound below both."""
    mechanisms = [m for m in get_wing("generic").audit_factory("gaussian_dp")(params)
                  if "rounds" in m.settings]
    assert mechanisms
    for mechanism in mechanisms:
        z, rounds = mechanism.settings["noise_multiplier"], mechanism.settings["rounds"]
        assert rounds == 30 and mechanism.draws > 0
        result = run_audit(mechanism, 50_000, seed=3)
        assert result["gdp_mu"] == pytest.approx(math.sqrt(rounds) / z, rel=0.03)
        assert result["eps_simulated"] < result["eps_claimed"]
        assert 0 < result["eps_audited_lower"] <= result["eps_simulated"] and result["holds"]


def test_dp_fedavg_with_poisson_sampling_runs_one_call_a_draw(params):
    block = {**params["audit"]["generic"]["gaussian_dp"], "sampling_rate": 0.5,
             "noise_multiplier": 0.8}
    p = {**params, "audit": {**params["audit"], "generic": {
        **params["audit"]["generic"], "gaussian_dp": block}}}
    (mechanism,) = get_wing("generic").audit_factory("gaussian_dp")(p)
    assert not mechanism.batched
    assert run_audit(mechanism, 2000, seed=2)["holds"]


def test_audit_rows_name_the_accounting_that_is_exceeded(tmp_path, monkeypatch):
    """A contradicted row says which accounting its claimed epsilon is (the point's
    claimed_accountant) and whether the simulated mechanism's epsilon holds too."""
    from airfl.runtime.io import write_json
    from airfl.pipeline import paths
    from airfl.pipeline.stages.claims import audit_claim_rows

    monkeypatch.chdir(tmp_path)
    point = {"mechanism": "m_total", "delta": 1e-5, "alpha": 0.05, "eps_claimed": 0.9,
             "eps_simulated": 13.4, "eps_audited_lower": 3.4, "eps_audited_point": 5.0,
             "eps_audited_upper": 7.0, "tightness": 3.8, "holds": False,
             "holds_simulated": True, "claimed_accountant": "Theorem 1 under the total reading"}
    leak = {**point, "mechanism": "m_leak", "eps_simulated": 2.0, "holds_simulated": False}
    fine = {**point, "mechanism": "m_fine", "eps_audited_lower": 0.1, "holds": True}
    path = paths.audit("cdpb", "cdpb")
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json(path, {"wing": "cdpb", "mechanism": "cdpb", "points": [point, leak, fine]})
    rows = {r["claim"]: r for r in audit_claim_rows("cdpb")}
    assert rows["audit_m_total"]["verdict"] == "contradicted"
    assert "claimed epsilon of Theorem 1 under the total reading; contradicted: that " \
           "accounting is exceeded" in rows["audit_m_total"]["statement"]
    assert "as simulated 13.4 (holds)" in rows["audit_m_total"]["numbers"]
    assert "as simulated 2 (exceeded)" in rows["audit_m_leak"]["numbers"]
    assert rows["audit_m_fine"]["verdict"] == "holds"


def test_the_stage_is_deterministic_and_feeds_the_claims(params, tmp_path, monkeypatch):
    from airfl.pipeline.stages import audit

    monkeypatch.chdir(tmp_path)
    generic = params["audit"]["generic"]
    dp = {**generic["gaussian_dp"], "multi_round": {**generic["gaussian_dp"]["multi_round"],
                                                    "draws": 20_000}}   # its own draws: small
    small = {**params, "audit": {**params["audit"], "draws": {"quick": 20_000, "paper": 20_000},
                                 "generic": {**generic, "gaussian_dp": dp}}}
    audit.run(small, "generic", "gaussian_dp")
    outputs = dag.audit_outputs("generic", "gaussian_dp")
    first = {o: Path(o).read_bytes() for o in outputs}
    audit.run(small, "generic", "gaussian_dp")
    assert {o: Path(o).read_bytes() for o in outputs} == first
    audit.run(small, "generic", "ota_truncated_inversion")
    from airfl.pipeline.stages.claims import audit_claim_rows, audit_claims, markdown

    rows = audit_claim_rows("generic")
    assert len(rows) == 3 + 1 + 2                                                   # + T = 30
    assert all(r["verdict"] in ("holds", "contradicted") for r in rows)
    assert {r["figure"] for r in rows} == {"generic/audit_gaussian_dp",
                                          "generic/audit_ota_truncated_inversion"}
    assert audit_claims(["generic"]) == rows                 # what the collected CLAIMS.md gets
    assert "| generic/audit_gaussian_dp | audit_gaussian_dp_z1 |" in markdown(rows, small)
