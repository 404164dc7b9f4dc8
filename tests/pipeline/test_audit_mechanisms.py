"""The registered audits: each runs its scheme's own aggregation, the properties the
papers state hold where they should (DP-FedAvg's Gaussian is exactly the accountant's), the
simulated epsilons are those of the code (DP as a perk's GDP mu is that of sigma^2/2 with no
amplification), the known finding stays visible (CDPB's Theorem 1 under the total reading), and
the stage writes byte-identical artifacts and the claim rows."""

import math
from pathlib import Path

import pytest

from airfl.pipeline import dag
from airfl.pipeline.params import load_params
from airfl.pipeline.registry import get_wing, wings
from airfl.privacy import event_rdp
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


def test_cdpb_theorem_1_under_the_total_reading_is_flagged(params):
    """Finding (now measured): Theorem 1 divides by sigma_q^2 as if it were the
    per-coordinate variance; the code's total reading adds sigma_q^2 / d per coordinate, and the
    audit's lower bound exceeds the claimed one-round epsilon for CDPB-i."""
    mechanisms = get_wing("cdpb").audit_factory("cdpb")(params)
    (idle,) = [m for m in mechanisms if m.name == "cdpb_i_total"]
    assert idle.aggregation.startswith("airfl.papers.cdpb.aggregation:aggregate")
    result = run_audit(idle, 3000, seed=4)
    assert not result["holds"], result
    assert result["holds_simulated"]          # the exact accounting of the code is not violated


def test_cdpb_both_readings_are_audited_and_the_per_coordinate_one_holds(params):
    """Every profile audits both readings of sigma_q^2; under per_coordinate the code adds the
    variance Theorem 1 assumes, and neither epsilon is exceeded (the total reading's rows are
    contradicted: the test above). Each reading's row names its own accounting."""
    mechanisms = {m.name: m for m in get_wing("cdpb").audit_factory("cdpb")(params)}
    readings = {m.settings["noise_variance"] for m in mechanisms.values()}
    assert readings == {"total", "per_coordinate"} and len(mechanisms) == 6
    per = mechanisms["cdpb_i_per_coordinate"]
    assert per.eps_claimed == mechanisms["cdpb_i_total"].eps_claimed   # Theorem 1: no reading
    assert per.eps_simulated < mechanisms["cdpb_i_total"].eps_simulated
    assert "total reading" in mechanisms["cdpb_i_total"].claimed_accountant
    assert "total reading" not in per.claimed_accountant
    result = run_audit(per, 3000, seed=4)
    assert result["holds"] and result["holds_simulated"], result


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


def test_lapa_server_update_is_the_weighted_gaussian_it_simulates(params):
    """LAPA's record claims each device's own noise (smallest std over 2C); the server update
    (eq. 2) weights the canary by G_k and sums every device's noise: the audit measures that
    Gaussian, mu = 1 / z_simulated, and stays below both epsilons."""
    (mechanism, *_) = get_wing("lapa").audit_factory("uniform_dp")(params)
    assert mechanism.aggregation.endswith("LapaScheme.aggregate")
    result = run_audit(mechanism, 200_000, seed=6)
    assert result["holds"] and result["holds_simulated"]
    assert result["gdp_mu"] == pytest.approx(1.0 / mechanism.settings["z_simulated"], rel=0.03)


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
