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
    # the other variants share the lead's eta and run no search of their own
    seen.clear()
    tune.run(params, "biased_fl/fig2a", "ota_zb")
    assert seen == []
    assert json.loads(paths.tuning("biased_fl/fig2a", "ota_zb").read_text())["eta"] == 0.025


def test_tuned_eta_reaches_the_design_only_where_the_scheme_takes_it(workspace):
    params = workspace
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


def test_fixed_mode_keeps_the_panel_step_size(workspace):
    tune.run(workspace, "biased_fl/fig2b", "opc_ota_fl")
    out = json.loads(paths.tuning("biased_fl/fig2b", "opc_ota_fl").read_text())
    assert out == {"eta": 0.05, "lead": "opc_ota_fl", "mode": "fixed"}
