"""The step-size protocol: the one-standard-error selection rule, common eta
via a lead curve, per-offset searches of the SOTA panels, fixed mode. The candidate runs are replaced by a table of scores so that only the protocol is tested."""

from __future__ import annotations

import json
import math

import pytest
import yaml

import airfl.pipeline.stages.tune as tune
import airfl.pipeline.tuning as tuning
from airfl.pipeline import paths
from airfl.pipeline.params import validate_params
from airfl.pipeline.registry import get_experiment


@pytest.fixture()
def workspace(tmp_path, monkeypatch, repo_root):
    monkeypatch.chdir(tmp_path)
    params = validate_params(yaml.safe_load((repo_root / "params.yaml").read_text()))
    reference = paths.reference("biased_fl", "json")
    reference.parent.mkdir(parents=True)
    reference.write_text(json.dumps({"eta_max": 0.1, "F_star": 0.45, "accuracy_star": 0.8}))
    return params


def _batched(one):
    """The stage's scorer of a list of candidates from a one-candidate score table (a design
    error is returned in the candidate's place, as tuning.candidate_scores does)."""
    from airfl.core.participation import NoTransmissionError

    def many(params, experiment, candidates, curve, trials, reference):
        out = []
        for block, eta in candidates:
            try:
                out.append(one(params, experiment, block, curve, eta, trials, reference))
            except NoTransmissionError as error:
                out.append(error)
        return out
    return many


def _grid(params):
    params["biased_fl"]["fig2a"]["tuning"]["quick"] = {
        "mode": "grid", "eta_factors": [1.0, 0.5, 0.25], "selection_trials": 2}
    return params


def test_grid_picks_the_largest_eta_within_one_standard_error(workspace, monkeypatch):
    # eta 0.1 diverges (never chosen); 0.025 has the best mean, 0.05 is within one SE of it
    gaps = {0.1: [float("inf"), 1.0], 0.05: [1.0, 1.2], 0.025: [0.9, 1.1]}
    seen = []

    def fake(params, experiment, block, curve, eta, trials, reference):
        seen.append((curve, round(eta, 6), list(trials)))
        trial_gaps = gaps[round(eta, 6)]
        return {"eta": eta, "final_gaps": trial_gaps, **tuning.gap_score(trial_gaps),
                "final_normalized_accuracy": 0.9}

    monkeypatch.setattr(tune, "candidate_scores", _batched(fake))
    params = _grid(workspace)
    tune.run(params, "biased_fl/fig2a", "ota_opt")
    out = json.loads(paths.tuning("biased_fl/fig2a", "ota_opt").read_text())
    assert out["eta"] == pytest.approx(0.05) and len(out["grid"]) == 3
    assert out["best_eta"] == pytest.approx(0.025)
    assert out["best_score"] == pytest.approx(1.0) and out["best_score_se"] == pytest.approx(0.1)
    assert out["score"] == pytest.approx(1.1) and out["score_se"] == pytest.approx(0.1)
    assert out["at_grid_edge"] == {}                                 # 0.05: inside [0.025, 0.1]
    assert [s[2] for s in seen] == [[0, 1]] * 3                      # selection trials only
    # the other variants share the lead's eta: no tune job, no search of their own
    experiment = get_experiment("biased_fl/fig2a")
    block = experiment.params(params)
    assert tuning.tuned_curves(experiment, block) == ["ota_opt"]
    with pytest.raises(ValueError, match="lead"):
        tune.run(params, "biased_fl/fig2a", "ota_zb")
    zb, lr = tuning.tuned_curve(experiment, block, "ota_zb")
    assert lr == pytest.approx(0.05) and zb["eta"] == pytest.approx(0.05)


def _candidate(eta, gaps):
    return {"eta": eta, "final_gaps": gaps, **tuning.gap_score(gaps)}


def test_one_se_rule_on_a_constructed_score_table():
    # best mean 0.415 with SE 0.01 / sqrt(3) = 0.00577 (threshold 0.42077); 0.419 is inside
    table = [_candidate(0.0068, [0.50, 0.50, 0.50]),
             _candidate(0.0136, [0.405, 0.415, 0.425]),
             _candidate(0.0272, [0.409, 0.419, 0.429]),
             _candidate(0.0545, [0.43, 0.43, 0.43])]
    chosen = tuning.select_eta(table)
    assert chosen["best_eta"] == 0.0136                              # the argmin ...
    assert chosen["eta"] == 0.0272                                   # ... is not the choice
    assert chosen["threshold"] == pytest.approx(0.415 + 0.01 / math.sqrt(3))
    assert chosen["score"] == pytest.approx(0.419)
    assert chosen["score_se"] == pytest.approx(0.01 / math.sqrt(3))
    # a larger eta just outside the band is not chosen; one inside it is
    table[3] = _candidate(0.0545, [0.4209, 0.4209, 0.4209])
    assert tuning.select_eta(table)["eta"] == 0.0272
    table[3] = _candidate(0.0545, [0.4206, 0.4206, 0.4206])
    assert tuning.select_eta(table)["eta"] == 0.0545
    # one selection trial: SE 0, the rule is the argmin
    single = [_candidate(0.02, [0.415]), _candidate(0.04, [0.419])]
    assert tuning.select_eta(single)["eta"] == 0.02
    with pytest.raises(ValueError, match="diverged"):
        tuning.select_eta([_candidate(0.02, [float("nan")]), _candidate(0.04, [float("inf")])])


def test_sota_panels_at_snr_offsets_search_their_own_step_sizes(workspace):
    from airfl.pipeline import dag

    params = workspace
    params["biased_fl"]["fig3b"]["tuning"]["quick"] = {
        "mode": "grid", "eta_factors": [1.0], "selection_trials": 1}
    offset = get_experiment("biased_fl/fig3b_snr60")
    block = offset.params(params)
    assert tuning.tuning_file(offset, block, "qml") == paths.tuning(offset.id, "qml")
    jobs = dag.experiment_jobs(offset, params)
    tuned = sorted(j.args[1] for j in jobs if j.stage == "tune")
    assert tuned == sorted(block["curves"])                          # one search per scheme
    assert all(str(paths.tuning(offset.id, j.args[1])) in j.deps
               for j in jobs if j.stage in ("design", "train"))
    assert {c["snr_offset_db"] for c in block["curves"].values()} == {60.0}


def test_paper_profile_dag_has_the_snr30_sota_tune_jobs(repo_root):
    """The +30 dB SOTA experiments' tune jobs exist in the paper profile's DAG (re-tune every
    scheme per SNR offset instead of reusing the literal-SNR choice)."""
    from airfl.pipeline import dag

    params = validate_params({**yaml.safe_load((repo_root / "params.yaml").read_text()),
                              "profile": "paper"})
    for panel in ("fig2b", "fig3b"):
        experiment = get_experiment(f"biased_fl/{panel}_snr30")
        tunes = [j for j in dag.experiment_jobs(experiment, params) if j.stage == "tune"]
        assert {j.args[1] for j in tunes} == set(experiment.params(params)["curves"]) and tunes
        assert all(j.outs == [str(paths.tuning(experiment.id, j.args[1]))] for j in tunes)


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
    proposed, lr = tuning.tuned_curve(experiment, block, "proposed")
    vanilla, lr_vanilla = tuning.tuned_curve(experiment, block, "vanilla_ota_fl")
    assert proposed["eta"] == 0.0123 and lr == lr_vanilla == 0.0123
    assert "eta" not in vanilla


def test_fixed_mode_keeps_the_panel_step_size_without_a_tune_job(workspace):
    from airfl.pipeline import dag

    experiment = get_experiment("biased_fl/fig2b")
    block = experiment.params(workspace)
    assert block["tuning"]["mode"] == "fixed"
    for curve in block["curves"]:
        curve_params, lr = tuning.tuned_curve(experiment, block, curve)
        assert lr == 0.05 and curve_params == block["curves"][curve]
        assert curve_params.get("eta", 0.05) == 0.05        # the design's eta is the step size
    assert not [j for j in dag.experiment_jobs(experiment, workspace) if j.stage == "tune"]
    with pytest.raises(ValueError, match="no step-size search"):
        tune.run(workspace, "biased_fl/fig2b", "opc_ota_fl")
    searched = _grid(workspace)
    assert [j for j in dag.experiment_jobs(get_experiment("biased_fl/fig2a"), searched)
            if j.stage == "tune"]


# ---- scheme-parameter grids (stages/param_search.py) ----------------------

def test_param_grid_combinations_in_a_fixed_order():
    from airfl.pipeline import param_search

    grid = {"p_out": [0.1, 0.3], "K": [3, 5]}
    assert param_search.candidates(grid) == [{"K": 3, "p_out": 0.1}, {"K": 3, "p_out": 0.3},
                                             {"K": 5, "p_out": 0.1}, {"K": 5, "p_out": 0.3}]
    explicit = [{"K": 3, "K_prime": 5}, {"K": 10, "K_prime": 10}]
    assert param_search.candidates(explicit) == explicit


def test_grid_edges_name_the_chosen_values_at_the_ends_of_their_grids():
    from airfl.pipeline import param_search

    grid = [{"K": 3, "K_prime": 5}, {"K": 3, "K_prime": 10}, {"K": 5, "K_prime": 7},
            {"K": 7, "K_prime": 10}]
    assert param_search.grid_edges({"K": 3, "K_prime": 5}, grid) == {"K": "lowest",
                                                                     "K_prime": "lowest"}
    assert param_search.grid_edges({"K": 5, "K_prime": 7}, grid) == {}
    assert param_search.grid_edges({"K": 7, "K_prime": 10}, grid) == {"K": "highest",
                                                                      "K_prime": "highest"}
    assert param_search.edge_of(0.2, [0.2]) is None                  # one value: no edge
    assert param_search.edge_of("a", ["a", "b"]) is None             # not numbers
    factors = [1.0, 0.5, 0.25, 0.125, 0.0625]
    assert tuning.eta_edge(0.0625 * 0.0545, factors, 0.0545) == {"eta": "lowest"}
    assert tuning.eta_edge(0.0545, factors, 0.0545) == {"eta": "highest"}
    assert tuning.eta_edge(0.25 * 0.0545, factors, 0.0545) == {}


def test_param_search_selects_then_tunes_eta_and_the_stages_apply_it(workspace, monkeypatch):
    """Lowest final gap at the panel's eta, ties by accuracy; a combination that leaves
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
        return {"eta": eta, "final_gap": gap * (1 + (eta != 0.05)), "final_gap_se": 0.0,
                "final_normalized_accuracy": acc}

    monkeypatch.setattr(tune, "candidate_scores", _batched(table))
    tune.run(params, "biased_fl/fig3b", "fedtoe")
    out = json.loads(paths.tuning("biased_fl/fig3b", "fedtoe").read_text())
    assert out["params"] == {"K": 5, "p_out": 0.1}                   # tie at 0.5 -> accuracy 0.95
    # K = 5 and p_out = 0.1 are the top and bottom of their grids, eta = 0.05 the grid's lowest
    assert out["at_grid_edge"] == {"K": "highest", "p_out": "lowest", "eta": "lowest"}
    assert out["param_search"]["at_grid_edge"] == {"K": "highest", "p_out": "lowest"}
    assert [s[2] for s in seen[:4]] == [0.05] * 4                    # grid at the panel's eta
    assert seen[4:] == [(5, 0.1, 0.1), (5, 0.1, 0.05)]               # eta grid with the choice
    assert out["eta"] == pytest.approx(0.05)
    experiment = get_experiment("biased_fl/fig3b")
    block = experiment.params(params)
    curve, lr = tuning.tuned_curve(experiment, block, "fedtoe")
    assert curve["K"] == 5 and curve["p_out"] == 0.1 and lr == pytest.approx(0.05)
    with pytest.raises(ValueError, match="no combination transmits.*lower R"):
        tune.run(params, "biased_fl/fig3b", "uqos")


def test_a_trial_that_diverged_at_the_end_scores_inf_not_its_last_finite_gap():
    import pandas as pd

    nan = float("nan")
    frame = pd.DataFrame({"trial": [0, 0, 0, 1, 1, 1], "round": [0, 1, 2, 0, 1, 2],
                          "objective": [2.0, nan, 0.5, 2.0, nan, nan],
                          "test_accuracy": [0.1, nan, 0.8, 0.1, nan, 0.1]})
    gaps, accuracy = tuning.final_results(frame, {"F_star": 0.45, "accuracy_star": 0.9})
    assert gaps[0] == pytest.approx(0.05) and math.isnan(gaps[1])     # not 2.0 - 0.45
    assert accuracy == pytest.approx(0.45 / 0.9)
    assert tuning.gap_score(gaps) == {"final_gap": math.inf, "final_gap_se": math.inf}


def _unimodal_tables(rng, count):
    """Random mean-gap tables over a descending eta grid, unimodal (down, then up), with SEs."""
    for _ in range(count):
        size = int(rng.integers(1, 7))
        low = int(rng.integers(0, size))
        gaps = sorted(rng.uniform(0.1, 5.0, size).tolist())
        table = sorted(gaps[:low + 1], reverse=True) + gaps[low + 1:]   # down to `low`, then up
        yield [{"eta": 2.0 ** -k, "final_gap": g, "final_gap_se": float(rng.uniform(0, 0.5)),
                "final_normalized_accuracy": 0.9} for k, g in enumerate(table)]


def test_descending_eta_search_makes_the_full_grids_choice_when_the_gap_is_unimodal():
    """tuning.eta_search 'descending': from the largest eta down, stopping once the mean final
    gap rises; on a unimodal grid every eta above the best is run, so the one-SE rule picks
    what the full grid picks (200 random unimodal tables, with random SEs)."""
    import numpy as np

    rng = np.random.default_rng(0)
    for table in _unimodal_tables(rng, 200):
        by_eta = {row["eta"]: row for row in table}
        calls = []

        def score(etas):
            calls.append(list(etas))
            return [by_eta[eta] for eta in etas]

        shuffled = list(rng.permutation([row["eta"] for row in table]))
        ran, skipped = tuning.eta_search(shuffled, "descending", score)
        assert tuning.select_eta(ran) == tuning.select_eta(table)
        assert sorted(skipped + [r["eta"] for r in ran], reverse=True) == [r["eta"] for r in table]
        best = min(range(len(table)), key=lambda k: table[k]["final_gap"])
        assert len(ran) <= best + 1 + tuning.ETA_BATCH             # stops right after the rise
        assert all(len(c) <= tuning.ETA_BATCH for c in calls)
        assert tuning.eta_search(shuffled, "all", score)[0] == [by_eta[e] for e in shuffled]


def test_descending_eta_search_stops_at_the_first_rise_and_on_a_failed_design():
    from airfl.core.participation import NoTransmissionError

    # not unimodal: the 0.125 dip runs only because it shares 0.25's batch; after the rise
    # at 0.25 nothing more would run
    table = {1.0: 0.3, 0.5: 0.2, 0.25: 0.4, 0.125: 0.1}
    calls = []

    def score(etas):
        calls.append(etas)
        return [{"eta": e, "final_gap": table[e], "final_gap_se": 0.0} for e in etas]

    ran, skipped = tuning.eta_search(list(table), "descending", score)
    assert calls == [[1.0, 0.5], [0.25, 0.125]] and skipped == []
    table.update({0.5: 0.5})                                 # rises at once: 2 of 4 run
    ran, skipped = tuning.eta_search(list(table), "descending", score)
    assert [r["eta"] for r in ran] == [1.0, 0.5] and skipped == [0.25, 0.125]
    assert tuning.select_eta(ran)["eta"] == 1.0
    failed = tuning.eta_search([1.0, 0.5, 0.25], "descending",
                               lambda etas: [NoTransmissionError("x")] * len(etas))[0]
    assert len(failed) == 2
    with pytest.raises(ValueError, match="eta_search 'up'.*all, descending"):
        tuning.eta_search([1.0], "up", score)



def test_a_scheme_scored_by_its_trained_loss_cannot_win_by_not_moving():
    """Constructed scores: the smallest eta has the lowest global gap (it barely moves a model
    whose training raises the loss of the classes it never sees) but no trained-loss decrease;
    with the trained-loss score the selection takes the step size that trains."""
    import pandas as pd

    def candidate(eta, gaps, start, end):
        frame = pd.DataFrame({"trial": [0, 0, 1, 1], "round": [0, 9, 0, 9],
                              "objective_trained": [start, end[0], start, end[1]]})
        return {**_candidate(eta, gaps), **tuning.trained_loss_score(frame)}

    still = candidate(0.01, [1.8, 1.8], 2.3, (2.3, 2.3))              # does not move
    moving = candidate(0.05, [4.0, 4.2], 2.3, (0.5, 0.6))             # trains S, gap rises
    assert still["selection_score"] == pytest.approx(0.0)
    assert moving["selection_score"] == pytest.approx(((0.5 - 2.3) / 2.3 + (0.6 - 2.3) / 2.3) / 2)
    assert tuning.select_eta([still, moving])["eta"] == 0.05
    plain = [_candidate(0.01, [1.8, 1.8]), _candidate(0.05, [4.0, 4.2])]
    assert tuning.select_eta(plain)["eta"] == 0.01                    # the gap rule would not
    assert tuning.trained_loss_score(pd.DataFrame({"trial": [0], "objective": [1.0]})) == {}
