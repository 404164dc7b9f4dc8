"""The arena's privacy audit (airfl.arena.audit): every private curve audited with the scheme,
design and noise its run uses, accounted as the leaderboard accounts it; the audit, its claims
and the leaderboard's audit column say no on a mechanism that adds less noise than it accounts."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import torch

from airfl.arena import audit, leaderboard
from airfl.arena.experiments import ARENA, _audit_within_accounted, _audit_within_records
from airfl.arena.task import settings, trial_statistics
from airfl.privacy.auditing import run_audit
from airfl.papers.lapa.schemes import LapaScheme
from airfl.schemes.dp import GaussianDpFedAvg

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def mechanisms(quick):
    """Every audited quick mechanism (their designs; no draws yet)."""
    return audit.dp_fedavg(quick) + audit.airfl_dp(quick) + audit.lapa_uniform_user(quick)


def test_the_trial_statistics_are_the_design_stages(params):
    """The audit's placement and path gains of a trial are the design stage's, bit for bit."""
    from airfl.pipeline.trial import channel_statistics

    block = ARENA.params(params)
    for trial in (0, 1):
        ours = trial_statistics(params, ARENA.id, trial)
        theirs = channel_statistics(params, block, ARENA.id, trial)
        assert torch.equal(ours.path_gain, theirs.path_gain)
        assert torch.equal(ours.distances_m, theirs.distances_m)
        assert ours.reference_gain == theirs.reference_gain
        assert ours.bandwidth_hz == theirs.bandwidth_hz


def test_every_private_curve_is_audited_with_the_scheme_its_run_builds(params):
    """The three audited entrants' curves are exactly the arena's private curves but those of
    the entrants that say why they are not audited (LAPA's two sample-level ones), each built
    as the train stage builds it (class and parameters, the clients' step size included)."""
    from airfl.pipeline.registry import build_scheme

    from airfl.arena.entrants import PRESENT

    curves = ARENA.curves(params)
    audited = {**audit.private_curves(params, "dp_fedavg"),
               **audit.private_curves(params, "airfl_dp"),
               **audit.private_curves(params, "lapa_uniform_user")}
    unaudited = {e.legend for e in PRESENT if e.not_audited}
    assert unaudited == {"LAPA uniform DP (sample-level ε_T)", "LAPA ARB (sample-level ε_T)"}
    assert set(audited) == {c for c, p in curves.items()
                            if "target_eps" in p and p["entrant"] not in unaudited}
    lr = settings(params)["task"]["lr"]
    for name, curve in audited.items():
        ours = audit.build(name, curve, lr)
        theirs = build_scheme(name, {k: v for k, v in curves[name].items()
                                     if k not in ARENA.panel_keys}, lr)
        assert type(ours) is type(theirs) and vars(ours) == vars(theirs), name


def _run_records(params: dict, name: str, trial: int) -> list[dict]:
    """The round records a run of the curve writes in this trial: the design stage's design
    (the pipeline's statistics and scheme) and the scheme's aggregate on random uploads."""
    from airfl.core.audit_draws import audit_round_state
    from airfl.core.scheme import DesignContext
    from airfl.pipeline.registry import build_scheme
    from airfl.pipeline.runs import model_dim
    from airfl.pipeline.trial import channel_statistics

    block = ARENA.params(params)
    curve = {k: v for k, v in block["curves"][name].items() if k not in ARENA.panel_keys}
    scheme = build_scheme(name, curve, block["training"]["lr"])
    n, rounds = block["num_devices"], block["scale"]["rounds"]
    sizes, histograms = _partition_stage_split(params)
    design = scheme.design(DesignContext(
        n, model_dim(block), rounds, sizes, channel_statistics(params, block, ARENA.id, trial),
        trial=trial, seed=params["seed"], experiment=ARENA.id, label_histograms=histograms))
    generator = torch.Generator().manual_seed(1)
    records = []
    for t in range(rounds):
        state = audit_round_state(n, 0, "test", 0, round_index=t + 1)
        updates = 0.01 * torch.randn(n, 3, generator=generator, dtype=torch.float64)
        records.append(scheme.aggregate(updates, state, design)[1])
    return records


def _partition_stage_split(params: dict) -> tuple[torch.Tensor, object]:
    """The data sizes and label histograms of the arena's split as the partition stage draws
    and stores it (its split, its stream, its histograms)."""
    from airfl.data import dataset_info, load_labels
    from airfl.data.heterogeneity import label_histograms
    from airfl.data.partition_spec import declared_partition
    from airfl.pipeline.trial import partition_generator

    block = ARENA.params(params)
    labels = load_labels(block["dataset"], params["data"]["root"], "train")
    split = declared_partition(block["partition"], labels, block["num_devices"],
                               partition_generator(params, ARENA.id))
    return (torch.as_tensor(split.sizes),
            label_histograms(labels, split, dataset_info(block["dataset"]).num_classes))


def test_each_audit_is_accounted_as_the_leaderboard_accounts_the_run(quick, mechanisms):
    """The audit's claimed and simulated epsilons are the privacy stage's epsilon_paper and
    epsilon_simulated of the audited trial's run records; each meets its curve's target, and
    the exact epsilon of the composed Gaussian lies below it (the RDP account is an upper
    bound), but not far (not a vacuous audit target)."""
    from airfl.pipeline.stages.privacy import simulated_epsilons, trial_epsilons

    trials = range(settings(quick)["task"]["scale"]["trials"])
    assert len(trials) > 1
    assert [m.name for m in mechanisms] == [
        f"{c}_trial{t}" for entrant in ("FedAvg + DP", "AirFL-DP",
                                        "LAPA uniform DP (user-level ε)")
        for c, p in ARENA.curves(quick).items() if p["entrant"] == entrant for t in trials]
    for mechanism in mechanisms:
        curve, trial = mechanism.settings["curve"], mechanism.settings["trial"]
        assert mechanism.name == leaderboard.point_name(curve, trial)
        records = _run_records(quick, curve, trial)
        paper = trial_epsilons(records, mechanism.delta)["improved"][-1]
        simulated = simulated_epsilons(records, mechanism.delta)["improved"][-1]
        assert mechanism.eps_claimed == pytest.approx(paper, rel=1e-12), mechanism.name
        assert mechanism.eps_simulated == pytest.approx(simulated, rel=1e-12), mechanism.name
        target = mechanism.settings["target_eps"]
        assert mechanism.eps_simulated <= target * (1 + leaderboard.SLACK)
        assert 0.5 * mechanism.eps_simulated < mechanism.settings["eps_exact_gdp"] \
            <= mechanism.eps_simulated
        assert mechanism.draws == quick["audit"]["arena"]["draws"]["quick"]


def test_the_audit_is_deterministic_and_its_bound_lies_below_the_exact_epsilon(mechanisms):
    """Same seed, same draws; on the real mechanism the 95 % lower bound is below the exact
    epsilon of the composed Gaussian (and so below both accounted), and the empirical GDP
    epsilon is near the exact one."""
    mechanism = next(m for m in mechanisms if m.name == "airfl_dp_eps4_trial0")
    first, second = (run_audit(mechanism, 20000, 7) for _ in range(2))
    assert first == second
    exact = mechanism.settings["eps_exact_gdp"]
    assert 0.0 < first["eps_audited_lower"] <= exact
    assert first["holds"] and first["holds_simulated"]
    assert first["gdp_eps"] == pytest.approx(exact, rel=0.1)


class QuietDpFedAvg(GaussianDpFedAvg):
    """DP-FedAvg with a leak: it adds a quarter of the noise its record accounts (the noise
    multiplier z / 4 on the clipped sum, the record's event still z)."""

    def aggregate(self, updates, state, design):
        quiet = GaussianDpFedAvg(self.name, **{**self.params, "noise_multiplier":
                                               self.params["noise_multiplier"] / 4})
        update, _ = quiet.aggregate(updates, state, design)
        _, record = super().aggregate(updates, state, design)
        return update, record


def test_the_audit_its_claim_and_the_leaderboard_say_no_on_a_leak(monkeypatch, quick):
    """The arena's DP-FedAvg at eps 4 run by a scheme that adds less noise than it accounts:
    the audited bound exceeds both accounted epsilons, the entrant's claim is contradicted
    naming the accounting, and the leaderboard's audit column says which it exceeds."""
    monkeypatch.setitem(audit.SCHEMES, "gaussian_dp", QuietDpFedAvg)
    leaky = next(m for m in audit.dp_fedavg(quick) if m.name == "dp_fedavg_eps4_trial1")
    point = run_audit(leaky, 20000, 3)
    assert point["eps_claimed"] == pytest.approx(4.0, rel=1e-4)      # the record's account
    assert point["eps_audited_lower"] > 4.0
    assert not point["holds"] and not point["holds_simulated"]
    result = _audit_within_accounted(_audit_frame([point]))
    assert result.verdict == "contradicted"
    assert "dp_fedavg_eps4_trial1" in result.reason and "as simulated and as its paper " \
        "states" in result.reason
    monkeypatch.undo()                             # trial 0 run by the real DP-FedAvg
    honest = run_audit(next(m for m in audit.dp_fedavg(quick)
                            if m.name == "dp_fedavg_eps4_trial0"), 20000, 3)
    cells = leaderboard.audit_cells("dp_fedavg_eps4", {"target_eps": 4.0}, point["eps_simulated"],
                                    leaderboard.by_curve([honest, point]))
    assert cells["audit"].startswith("trial 1 ") and \
        "exceeds epsilon_simulated and epsilon_paper (largest over 2 trials" in cells["audit"]
    assert cells["eps_audited_lower"] == point["eps_audited_lower"] > 4.0


def _audit_frame(points: list[dict]) -> pd.DataFrame:
    """The audit figure's CSV rows as the audit stage writes them."""
    from airfl.pipeline.stages.audit import COLUMNS

    return pd.DataFrame([{"label": p["mechanism"], **{k: p[k] for k in COLUMNS[1:]}}
                         for p in points], columns=list(COLUMNS))


def _row(label: str, lower: float, simulated: float, paper: float) -> dict:
    return {"mechanism": label, "eps_claimed": paper, "eps_simulated": simulated,
            "eps_audited_lower": lower, "eps_audited_point": lower, "eps_audited_upper": lower,
            "gdp_eps": lower, "tightness": lower / paper, "holds": lower <= paper}


def test_the_audit_claim_holds_and_fails_on_constructed_rows():
    """Holds when every point's bound is at most both of its trial's accountings; contradicted
    when one point's bound exceeds either (the reason names the point and the accounting, the
    numbers give per curve the largest over its trials); n/a with no rows."""
    within = [_row("a_eps1_trial0", 0.5, 0.9, 1.0), _row("a_eps1_trial1", 0.7, 0.8, 0.95),
              _row("a_eps4_trial0", 3.0, 3.5, 3.5)]
    holds = _audit_within_accounted(_audit_frame(within))
    assert holds.verdict == "holds"
    assert "a_eps1 0.7 vs 0.9 / 1 (2 trials); a_eps4 3 vs 3.5 / 3.5 (1 trials)" in holds.numbers
    over_simulated = within + [_row("a_eps16_trial2", 12.0, 11.0, 14.0)]
    result = _audit_within_accounted(_audit_frame(over_simulated))
    assert result.verdict == "contradicted"
    assert result.reason == "a_eps16_trial2: 12 exceeds its epsilon as simulated"
    over_paper = [_row("a_eps1_trial0", 1.2, 1.5, 1.0)]
    assert _audit_within_accounted(_audit_frame(over_paper)).reason == \
        "a_eps1_trial0: 1.2 exceeds its epsilon as its paper states"
    # one trial's bound above another trial's larger accounting is still that trial's excess
    crossed = [_row("a_eps1_trial0", 0.9, 0.8, 0.8), _row("a_eps1_trial1", 0.1, 1.0, 1.0)]
    assert _audit_within_accounted(_audit_frame(crossed)).verdict == "contradicted"
    assert _audit_within_accounted(_audit_frame([])).verdict == "n/a"


def test_a_point_label_names_its_curve_and_trial():
    assert leaderboard.curve_of_point(leaderboard.point_name("airfl_dp_eps4_p17dbm", 12)) == \
        "airfl_dp_eps4_p17dbm"
    with pytest.raises(ValueError, match="'dp_fedavg_eps4': expected <curve>_trial<k>"):
        leaderboard.curve_of_point("dp_fedavg_eps4")


def test_every_trial_is_audited_with_its_own_design_and_streams(quick, mechanisms):
    """AirFL-DP's design (its per-device scalers pi from the trial's path gains) differs
    between trials (each trial's placement), and two trials of DP-FedAvg (one design) draw
    different noise."""
    curve = audit.private_curves(quick, "airfl_dp")["airfl_dp_eps4"]
    scheme = audit.build("airfl_dp_eps4", curve, settings(quick)["task"]["lr"])
    gains = {tuple(audit.design(quick, scheme, t)["pi"]) for t in audit.trials(quick)}
    assert len(gains) == len(audit.trials(quick)) > 1
    first, second = (next(m for m in mechanisms if m.name == f"dp_fedavg_eps1_trial{t}")
                     for t in (0, 1))
    assert first.eps_simulated == second.eps_simulated
    assert not (first.sample("absent", 50, 0) == second.sample("absent", 50, 0)).any()


def test_snakemake_arena_builds_the_audits_and_the_leaderboard_reads_them(params):
    """`snakemake arena` (both profiles) targets both entrants' audits, the figure job (which
    writes the leaderboard) depends on them, and so does the arena's claims job."""
    from airfl.pipeline import dag
    from airfl.pipeline.stage_jobs import claim_inputs

    audited = ("airfl_dp", "dp_fedavg", "lapa_uniform_user")
    outputs = [f"results/audit/arena/{m}.json" for m in audited]
    targets = dag.paper_targets("arena", params)
    assert set(outputs) | {f"figures/arena/audit_{m}.csv" for m in audited} <= set(targets)
    (figure,) = [j for j in dag.experiment_jobs(ARENA, params) if j.stage == "figure"]
    assert set(outputs) <= set(figure.deps)
    assert set(outputs) <= set(claim_inputs("arena", params))
    audits = {tuple(j.args[-2:]) for j in dag.audit_jobs()}
    assert {("arena", m) for m in audited} <= audits
    inputs = {tuple(j.args[-2:]): j.deps for j in dag.audit_jobs()}
    assert inputs[("arena", "lapa_uniform_user")] == ["results/partitions/arena/accuracy_vs_eps.npz"]
    assert inputs[("arena", "dp_fedavg")] == inputs[("arena", "airfl_dp")] == []


def test_an_audit_trial_key_is_refused(quick):
    """Every trial is audited: a leftover `audit.arena.trial` stops validation naming it."""
    from airfl.params.config import ConfigError
    from airfl.pipeline.params import validate_params

    bad = {**quick, "audit": {**quick["audit"], "arena": {**quick["audit"]["arena"],
                                                          "trial": 0}}}
    with pytest.raises((ConfigError, ValueError), match="trial"):
        validate_params(bad)


def test_the_plans_work_of_the_audits_is_the_built_points(quick, mechanisms):
    """What the arena registers of its audits' work (`Wing.audit_works`, read by `airfl plan`
    without building the designs) is what the built points have: one batched point per
    private curve and trial, the profile's draws, T releases each (a draw sums the run's T
    rounds)."""
    from airfl.arena import WING
    from airfl.pipeline import audit_cost

    built = [point.work() for point in mechanisms]
    registered = [work for name in ("dp_fedavg", "airfl_dp", "lapa_uniform_user")
                  for work in WING.audit_work_function(name)(quick)]
    assert registered == built
    rounds = settings(quick)["task"]["scale"]["rounds"]
    assert {work.releases for work in built} == {rounds} and rounds > 1
    for name in ("dp_fedavg", "airfl_dp", "lapa_uniform_user"):
        points = [p for p in mechanisms
                  if p.settings["curve"] in audit.private_curves(quick, name)]
        assert len(points) == len(audit.private_curves(quick, name)) * len(audit.trials(quick))
        assert audit_cost.audit_work(quick, "arena", name) \
            == audit_cost.audit_work(quick, "arena", name, points)


def test_the_lapa_audit_rebuilds_the_design_stages_design(quick, mechanisms):
    """LAPA's user-level uniform DP is audited on the design its run uses in that trial (the
    arena partition's sizes and histograms, the trial's fading draw on its placement): the
    same nu, per-device channel noise and weights as the design stage's; its canary is the
    accounting's worst device (the largest |D_k|), and the trials' fading draws differ."""
    from airfl.pipeline.registry import build_scheme
    from airfl.pipeline.runs import model_dim
    from airfl.core.scheme import DesignContext
    from airfl.pipeline.trial import channel_statistics

    block = ARENA.params(quick)
    name = "lapa_uniform_user_eps4"
    curve = audit.private_curves(quick, "lapa_uniform_user")[name]
    lr = settings(quick)["task"]["lr"]
    sizes, histograms = _partition_stage_split(quick)
    fading = set()
    for trial in audit.trials(quick):
        ours = audit.design(quick, audit.build(name, curve, lr), trial)
        theirs = build_scheme(name, curve, lr).design(DesignContext(
            block["num_devices"], model_dim(block), block["scale"]["rounds"], sizes,
            channel_statistics(quick, block, ARENA.id, trial), trial=trial, seed=quick["seed"],
            experiment=ARENA.id, label_histograms=histograms))
        for key in ("nu", "sizes", "sigma_ch", "weights", "eps_total", "radio"):
            assert ours[key] == theirs[key], (trial, key)
        fading.add(tuple(ours["sigma_ch"]))
        point = next(m for m in mechanisms if m.name == f"{name}_trial{trial}")
        assert point.settings["canary"] == int(sizes.argmax())
        assert point.settings["nu"] == ours["nu"]
        assert point.settings["eps_T_sample_level"] == ours["eps_total"] < 0.05
    assert len(fading) == len(audit.trials(quick))


class QuietLapa(LapaScheme):
    """LAPA's uniform DP with a leak: it adds a quarter of the DP noise its records account
    (sigma_k / 4, eq. 19; the channel noise and the records unchanged)."""

    def __init__(self, name, **params):
        super().__init__(name, **params)
        self._quiet = _QuarterNoise(name, **params)

    def aggregate(self, updates, state, design):
        update, _ = self._quiet.aggregate(updates, state, design)
        _, record = super().aggregate(updates, state, design)
        return update, record


class _QuarterNoise(LapaScheme):
    def _noise_std(self, run, design, sens, c):
        return super()._noise_std(run, design, sens, c) / 4


def test_the_lapa_audit_and_its_claim_say_no_on_a_leak(monkeypatch, quick):
    """LAPA's user-level uniform DP at eps 4 run by a scheme that adds a quarter of the DP noise
    its records account: the audited bound exceeds both accounted epsilons (its records' and as
    simulated), its claim is contradicted naming them, and the leaderboard's audit column says
    which it exceeds; the honest scheme's bound lies below both."""
    name = "lapa_uniform_user_eps4_trial1"
    honest = run_audit(next(m for m in audit.lapa_uniform_user(quick) if m.name == name),
                       20000, 3)
    assert honest["holds"] and honest["holds_simulated"]
    assert 0 < honest["eps_audited_lower"] < 4.0
    monkeypatch.setitem(audit.SCHEMES, "lapa", QuietLapa)
    leaky = next(m for m in audit.lapa_uniform_user(quick) if m.name == name)
    point = run_audit(leaky, 20000, 3)
    assert point["eps_claimed"] == pytest.approx(4.0, rel=1e-4)      # the records' account
    assert point["eps_audited_lower"] > 4.0
    assert not point["holds"] and not point["holds_simulated"]
    result = _audit_within_records(_audit_frame([point]))
    assert result.verdict == "contradicted"
    assert name in result.reason and "as simulated and as its records account it" in \
        result.reason
    cells = leaderboard.audit_cells("lapa_uniform_user_eps4", {"target_eps": 4.0},
                                    point["eps_simulated"], leaderboard.by_curve([point]))
    assert cells["audit"].startswith("trial 1 ") and "exceeds epsilon_simulated and its " \
        "records' device-level epsilon (largest over 1 trials" in cells["audit"]
