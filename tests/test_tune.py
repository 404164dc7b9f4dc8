"""The step-size protocol (Biased FL spec 6.5): selection rule, common eta via a lead curve, fixed
mode. The candidate runs are replaced by a table of scores so that only the protocol is tested."""

from __future__ import annotations

import json

import pytest
import yaml

import airfl.stages.tune as tune
from airfl import paths
from airfl.config import validate_params
from airfl.experiments import get_experiment


@pytest.fixture()
def workspace(tmp_path, monkeypatch, repo_root):
    monkeypatch.chdir(tmp_path)
    params = validate_params(yaml.safe_load((repo_root / "params.yaml").read_text()))
    reference = paths.reference("biased_fl", "json")
    reference.parent.mkdir(parents=True)
    reference.write_text(json.dumps({"eta_max": 0.1, "F_star": 0.45, "accuracy_star": 0.8}))
    return params


def _grid(params):
    params["biased_fl"]["fig2a"]["tuning"]["quick"] = {
        "mode": "grid", "eta_factors": [1.0, 0.5, 0.25], "selection_trials": 2}
    return params


def test_grid_picks_the_lowest_final_gap_and_ties_go_to_accuracy(workspace, monkeypatch):
    scores = {0.1: (5.0, 0.5), 0.05: (1.0, 0.7), 0.025: (1.0, 0.9)}
    seen = []

    def fake(params, experiment, block, curve, eta, trials, reference):
        seen.append((curve, round(eta, 6), list(trials)))
        gap, acc = scores[round(eta, 6)]
        return {"eta": eta, "final_gap": gap, "final_normalized_accuracy": acc}

    monkeypatch.setattr(tune, "candidate_score", fake)
    params = _grid(workspace)
    tune.run(params, "biased_fl/fig2a", "ota_opt")
    out = json.loads(paths.tuning("biased_fl/fig2a", "ota_opt").read_text())
    assert out["eta"] == pytest.approx(0.025) and len(out["grid"]) == 3
    assert [s[2] for s in seen] == [[0, 1]] * 3                      # selection trials only
    # the other variants share the lead's eta: no tune job, no search of their own
    experiment = get_experiment("biased_fl/fig2a")
    block = experiment.params(params)
    assert tune.tuned_curves(experiment, block) == ["ota_opt"]
    with pytest.raises(ValueError, match="lead"):
        tune.run(params, "biased_fl/fig2a", "ota_zb")
    zb, lr = tune.tuned_curve(experiment, block, "ota_zb")
    assert lr == pytest.approx(0.025) and zb["eta"] == pytest.approx(0.025)


def test_sota_panels_at_snr_offsets_reuse_the_panels_step_sizes(workspace):
    from airfl import dag

    params = workspace
    params["biased_fl"]["fig3b"]["tuning"]["quick"] = {
        "mode": "grid", "eta_factors": [1.0], "selection_trials": 1}
    source, offset = get_experiment("biased_fl/fig3b"), get_experiment("biased_fl/fig3b_snr60")
    target = paths.tuning(source.id, "qml")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps({"eta": 0.0123}))
    block = offset.params(params)
    assert tune.tuning_file(offset, block, "qml") == target
    assert tune.tuned_curve(offset, block, "qml")[1] == 0.0123
    jobs = dag.experiment_jobs(offset, params)
    assert not [j for j in jobs if j.stage == "tune"]
    assert all(str(paths.tuning(source.id, j.args[1])) in j.deps
               for j in jobs if j.stage in ("design", "train"))
    assert {c["snr_offset_db"] for c in block["curves"].values()} == {60.0}


def test_tuned_eta_reaches_the_design_only_where_the_scheme_takes_it(workspace):
    params = workspace
    params["biased_fl"]["fig2b"]["tuning"]["quick"] = {
        "mode": "grid", "eta_factors": [1.0], "selection_trials": 1}
    experiment = get_experiment("biased_fl/fig2b")
    block = experiment.params(params)
    for curve in ("proposed", "vanilla_ota_fl"):
        target = paths.tuning(experiment.id, curve)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps({"eta": 0.0123}))
    proposed, lr = tune.tuned_curve(experiment, block, "proposed")
    vanilla, lr_vanilla = tune.tuned_curve(experiment, block, "vanilla_ota_fl")
    assert proposed["eta"] == 0.0123 and lr == lr_vanilla == 0.0123
    assert "eta" not in vanilla


def test_fixed_mode_keeps_the_panel_step_size_without_a_tune_job(workspace):
    from airfl import dag

    experiment = get_experiment("biased_fl/fig2b")
    block = experiment.params(workspace)
    assert block["tuning"]["mode"] == "fixed"
    for curve in block["curves"]:
        curve_params, lr = tune.tuned_curve(experiment, block, curve)
        assert lr == 0.05 and curve_params == block["curves"][curve]
        assert curve_params.get("eta", 0.05) == 0.05        # the design's eta is the step size
    assert not [j for j in dag.experiment_jobs(experiment, workspace) if j.stage == "tune"]
    with pytest.raises(ValueError, match="no step-size search"):
        tune.run(workspace, "biased_fl/fig2b", "opc_ota_fl")
    searched = _grid(workspace)
    assert [j for j in dag.experiment_jobs(get_experiment("biased_fl/fig2a"), searched)
            if j.stage == "tune"]


# ---- scheme-parameter grids (spec 6.5 baselines; stages/param_search.py) ----------------------

def test_param_grid_combinations_in_a_fixed_order():
    from airfl.stages import param_search

    grid = {"p_out": [0.1, 0.3], "K": [3, 5]}
    assert param_search.candidates(grid) == [{"K": 3, "p_out": 0.1}, {"K": 3, "p_out": 0.3},
                                             {"K": 5, "p_out": 0.1}, {"K": 5, "p_out": 0.3}]
    explicit = [{"K": 3, "K_prime": 5}, {"K": 10, "K_prime": 10}]
    assert param_search.candidates(explicit) == explicit


def test_param_search_selects_then_tunes_eta_and_the_stages_apply_it(workspace, monkeypatch):
    """Spec 6.5: lowest final gap at the panel's eta, ties by accuracy; a combination that leaves
    nobody transmitting is recorded as infeasible; eta is then searched with the chosen values."""
    from airfl.core.participation import NoTransmissionError

    params = workspace
    params["biased_fl"]["fig3b"]["tuning"]["quick"] = {
        "mode": "grid", "eta_factors": [1.0, 0.5], "selection_trials": 2,
        "param_grid": {"fedtoe": {"K": [3, 5], "p_out": [0.1, 0.5]},
                       "uqos": {"R": [2.0]}}}
    gaps = {(3, 0.1): (0.8, 0.9), (3, 0.5): (0.5, 0.8), (5, 0.1): (0.5, 0.95), (5, 0.5): (0.7, 0.9)}
    seen = []

    def table(params, experiment, block, curve, eta, trials, reference):
        c = block["curves"][curve]
        seen.append((c.get("K"), c.get("p_out"), round(eta, 6)))
        if curve == "uqos":
            raise NoTransmissionError("scheme 'uqos': ... lower R")
        gap, acc = gaps[(c["K"], c["p_out"])]
        return {"eta": eta, "final_gap": gap * (1 + (eta != 0.05)),
                "final_normalized_accuracy": acc}

    monkeypatch.setattr(tune, "candidate_score", table)
    tune.run(params, "biased_fl/fig3b", "fedtoe")
    out = json.loads(paths.tuning("biased_fl/fig3b", "fedtoe").read_text())
    assert out["params"] == {"K": 5, "p_out": 0.1}                   # tie at 0.5 -> accuracy 0.95
    assert [s[2] for s in seen[:4]] == [0.05] * 4                    # grid at the panel's eta
    assert seen[4:] == [(5, 0.1, 0.1), (5, 0.1, 0.05)]               # eta grid with the choice
    assert out["eta"] == pytest.approx(0.05)
    experiment = get_experiment("biased_fl/fig3b")
    block = experiment.params(params)
    curve, lr = tune.tuned_curve(experiment, block, "fedtoe")
    assert curve["K"] == 5 and curve["p_out"] == 0.1 and lr == pytest.approx(0.05)
    with pytest.raises(ValueError, match="no combination transmits.*lower R"):
        tune.run(params, "biased_fl/fig3b", "uqos")
