"""The tune stage's candidates in lockstep (airfl.pipeline.tuning.candidate_scores) on the real
Biased FL inputs (MNIST, partition, reference w*), shortened to
30 rounds: the candidates share one copy of data and model so that they do run in lockstep,
each candidate's scores equal its one-by-one run through the train stage's `run_trials` up to
float reassociation, an infeasible design is returned in its place, reruns are bit-identical."""

from __future__ import annotations

import copy

import pytest
import yaml

from airfl.core.lockstep import batchable
from airfl.core.participation import NoTransmissionError
from airfl.pipeline.params import validate_params
from airfl.pipeline.registry import get_experiment

EXPERIMENT = "biased_fl/fig2b"


@pytest.fixture(scope="module")
def workspace(repo_root, mnist_mirror, tmp_path_factory):
    """Quick-profile params, the data, Fig. 2(b)'s partition and the reference, in a scratch
    folder (the stages' own code)."""
    import os

    from airfl.data import ensure_dataset
    from airfl.pipeline.stages import partition, reference

    raw = yaml.safe_load((repo_root / "params.yaml").read_text())
    root = tmp_path_factory.mktemp("tune_lockstep")
    raw["data"].update(root=str(root / "data"), mirror=str(mnist_mirror), download=False)
    params = validate_params(raw)
    ensure_dataset("mnist", root / "data", mirror=mnist_mirror, download=False)
    previous = os.getcwd()
    os.chdir(root)
    try:
        partition.run(params, EXPERIMENT)
        reference.run(params, "biased_fl")
        yield params
    finally:
        os.chdir(previous)


def _short_block(params):
    block = copy.deepcopy(get_experiment(EXPERIMENT).params(params))
    block["scale"]["rounds"] = 30
    return block


def test_candidates_run_in_lockstep_and_score_as_one_by_one_runs(workspace):
    from airfl.runtime.io import read_json
    from airfl.pipeline import paths
    from airfl.pipeline.runs import design_trials, run_trials, trial_jobs
    from airfl.pipeline.trial import curve_inputs
    from airfl.pipeline.tuning import candidate_scores, final_results, gap_score, with_eta

    params, experiment = workspace, get_experiment(EXPERIMENT)
    block = _short_block(params)
    reference = read_json(paths.reference("biased_fl", "json"))
    trials = range(2)
    candidates = [(block, 0.05), (block, 0.025)]
    scores = candidate_scores(params, experiment, candidates, "proposed", trials, reference)
    shared = curve_inputs(params, experiment, block)
    jobs = [job for b, eta in candidates
            for job in trial_jobs(params, experiment, b, "proposed",
                                  with_eta(b["curves"]["proposed"], eta), eta,
                                  design_trials(params, experiment.id, b, "proposed",
                                                with_eta(b["curves"]["proposed"], eta), trials),
                                  trials, final_only=True, shared=shared)]
    assert batchable(jobs)                                # what candidate_scores runs
    for (b, eta), got in zip(candidates, scores):         # one by one, as the train stage runs
        curve = with_eta(b["curves"]["proposed"], eta)
        designs = design_trials(params, experiment.id, b, "proposed", curve, trials)
        frame, _ = run_trials(params, experiment, b, "proposed", curve, eta, designs, trials,
                              progress=False, final_only=True)
        gaps, accuracy = final_results(frame, reference)
        assert got["eta"] == eta and got["final_gaps"] == pytest.approx(gaps, rel=1e-5)
        assert got["final_gap"] == pytest.approx(gap_score(gaps)["final_gap"], rel=1e-5)
        assert got["final_normalized_accuracy"] == pytest.approx(accuracy, abs=1e-9)
    assert scores[0]["final_gap"] != scores[1]["final_gap"]            # the candidates differ
    assert candidate_scores(params, experiment, candidates, "proposed", trials, reference) \
        == scores                                                       # bit-identical rerun


def test_an_infeasible_candidate_is_returned_in_its_place(workspace):
    """BB-FL Interior with a cut-off nobody reaches leaves no device transmitting: its slot
    holds the NoTransmissionError; the feasible candidate beside it is scored."""
    from airfl.runtime.io import read_json
    from airfl.pipeline import paths
    from airfl.pipeline.tuning import candidate_scores

    params, experiment = workspace, get_experiment(EXPERIMENT)
    block = _short_block(params)
    silent = copy.deepcopy(block)
    silent["curves"]["bbfl_interior"]["g_th"] = 1e12
    reference = read_json(paths.reference("biased_fl", "json"))
    out = candidate_scores(params, experiment, [(silent, 0.05), (block, 0.05)], "bbfl_interior",
                           range(1), reference)
    assert isinstance(out[0], NoTransmissionError)
    assert out[1]["eta"] == 0.05 and len(out[1]["final_gaps"]) == 1


def test_a_candidate_with_the_runs_of_an_earlier_one_is_not_run_again(workspace, monkeypatch):
    """candidates with equal run keys (same eta, designs and non-inert parameters)
    run once; the later one gets the earlier one's scores and `same_runs_as`. Here the third
    candidate repeats the first: only two candidates' trials reach the lockstep."""
    import airfl.pipeline.runs as runs
    from airfl.runtime.io import read_json
    from airfl.pipeline import paths
    from airfl.pipeline.tuning import candidate_scores

    params, experiment = workspace, get_experiment(EXPERIMENT)
    block = _short_block(params)
    reference = read_json(paths.reference("biased_fl", "json"))
    ran = []
    real = runs.run_jobs

    def counted(experiment, jobs, progress=False, batched=False):
        ran.append(len(jobs))
        return real(experiment, jobs, progress, batched)

    monkeypatch.setattr(runs, "run_jobs", counted)
    out = candidate_scores(params, experiment, [(block, 0.05), (block, 0.025), (block, 0.05)],
                           "proposed", range(2), reference)
    assert ran == [4]                                     # 2 candidates x 2 trials, not 3 x 2
    assert "same_runs_as" not in out[0] and "same_runs_as" not in out[1]
    assert out[2] == {**out[0], "same_runs_as": 0}
    assert out[1]["final_gap"] != out[0]["final_gap"]


def test_bbfl_interior_is_scored_by_the_loss_over_the_devices_it_trains_on(workspace):
    """BB-FL Interior aggregates only S_in: its candidates carry the relative change of the
    objective over S_in, which a model that does not move scores 0 and a training one below 0,
    so the selection (the one-SE rule on that score) cannot prefer a step size that barely
    moves; every other scheme keeps the final-gap score."""
    from airfl.runtime.io import read_json
    from airfl.pipeline import paths
    from airfl.pipeline.tuning import candidate_scores, score_of, select_eta

    params, experiment = workspace, get_experiment(EXPERIMENT)
    block = _short_block(params)
    reference = read_json(paths.reference("biased_fl", "json"))
    tiny, trained = candidate_scores(params, experiment, [(block, 1e-9), (block, 0.02)],
                                     "bbfl_interior", range(2), reference)
    assert tiny["trained_loss_changes"] == pytest.approx([0.0, 0.0], abs=1e-6)   # does not move
    assert all(c < -0.05 for c in trained["trained_loss_changes"])             # F_S descends
    assert score_of(trained)[0] < score_of(tiny)[0]
    assert select_eta([tiny, trained])["eta"] == 0.02
    assert select_eta([tiny, trained])["score_metric"].startswith("relative change")
    proposed = candidate_scores(params, experiment, [(block, 0.02)], "proposed", range(1),
                                reference)[0]
    assert "selection_score" not in proposed and score_of(proposed)[0] == proposed["final_gap"]
