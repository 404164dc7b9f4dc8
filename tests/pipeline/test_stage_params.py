"""A stage runs on what it declares (pipeline/stage_params.py): every stage's `run` receives
params.yaml narrowed to the keys its jobs depend on in Snakemake and DVC, so a read of any other
key stops with the key and the stage instead of silently missing a rerun."""

from __future__ import annotations

import copy
import dataclasses
import importlib
from pathlib import Path

import pytest

from airfl.pipeline import dag, stage_table
from airfl.pipeline.registry import all_experiments
from airfl.pipeline.params import load_params
from airfl.pipeline.stage_params import UndeclaredParam, narrowed, stage_keys

STAGES = sorted(p.stem for p in (Path(dag.__file__).parent / "stages").glob("*.py")
                if p.stem != "__init__")


@pytest.fixture(scope="module")
def params(repo_root):
    return load_params(repo_root / "params.yaml", {})


def test_every_stage_declares_its_params_and_runs_on_them():
    """Each stage module's `run` is wrapped by `declared(<its name>)`, and each stage has a
    declaration (its record in the stage table)."""
    assert set(STAGES) == {s.name for s in stage_table.STAGES}
    for stage in STAGES:
        run = importlib.import_module(f"airfl.pipeline.stages.{stage}").run
        assert getattr(run, "stage", None) == stage, stage
        assert run.__wrapped__.__module__ == f"airfl.pipeline.stages.{stage}"


def test_an_undeclared_read_names_the_key_and_the_stage(params):
    view = narrowed(params, "tune", ("seed", "data.root"))
    assert view["seed"] == params["seed"] and view["data"]["root"] == params["data"]["root"]
    with pytest.raises(UndeclaredParam, match=r"stage 'tune' read params.yaml key 'device'"):
        view["device"]
    with pytest.raises(UndeclaredParam, match=r"'data.mirror'"):
        view["data"]["mirror"]
    with pytest.raises(UndeclaredParam, match="device"):
        view.get("device", "cpu")                     # no silent default either
    assert "device" in view and view.get("nothing", 1) == 1   # membership: as written
    with pytest.raises(KeyError):
        view["nothing"]
    assert copy.deepcopy(view) == view and type(copy.deepcopy(view)["data"]) is type(view["data"])


def test_a_job_runs_on_what_both_tools_track(params):
    """For the stages outside one experiment the keys a job runs on are the keys its DVC
    manifest lists and its Snakemake rule's params hold (dag.declared_values)."""
    for job in dag.jobs(params):
        record = stage_table.stage(job.stage)
        if record.view is None:
            assert job.params == list(stage_keys(job.stage, *job.args)), job.name
            assert set(dag.declared_values(job.stage, params, *job.args)) == set(job.params)
        else:                                         # its knobs first, then its view's keys
            assert job.params[:len(record.knobs)] == list(record.knobs)


def test_tune_reading_an_undeclared_device_fails_in_the_stage(params, monkeypatch):
    """What the narrowing would have caught: tune builds the trials' inputs on `device`."""
    from airfl.pipeline.stages import tune

    reads = []

    def candidate_scores(params, *args):
        reads.append(params["device"])               # as trial.curve_inputs reads it
        raise RuntimeError("stop")

    monkeypatch.setattr(tune, "candidate_scores", candidate_scores)
    monkeypatch.setattr(tune, "read_json", lambda path: {"eta_max": 0.1})
    grid = {**params, "biased_fl": copy.deepcopy(params["biased_fl"])}
    grid["biased_fl"]["fig2a"]["tuning"]["quick"] = {"mode": "grid", "eta_factors": [1.0],
                                                     "selection_trials": 1}
    with pytest.raises(RuntimeError, match="stop"):
        tune.run(grid, "biased_fl/fig2a", "ota_opt")
    assert reads == ["cpu"]
    tune_record = stage_table.stage("tune")
    undeclared = dataclasses.replace(tune_record, knobs=tuple(k for k in tune_record.knobs
                                                              if k != "device"))
    monkeypatch.setattr(stage_table, "STAGES", tuple(undeclared if s is tune_record else s
                                                     for s in stage_table.STAGES))
    with pytest.raises(UndeclaredParam, match="stage 'tune' read params.yaml key 'device'"):
        tune.run(grid, "biased_fl/fig2a", "ota_opt")


@pytest.mark.parametrize("paper", sorted({e.paper for e in all_experiments()}))
def test_a_paper_s_claims_run_on_its_declared_params(paper, params, tmp_path, monkeypatch):
    """The claims job of one paper reads only its own section: with no figures written it stops
    on the missing figure data, never on another paper's key (asking every wing's experiments
    whether they run read LAPA's section from the DP-as-a-perk claims job)."""
    from airfl.runtime.io import ArtifactError
    from airfl.pipeline.stages import claims

    monkeypatch.chdir(tmp_path)
    try:
        claims.run(params, paper)
    except UndeclaredParam:
        raise
    except (ArtifactError, FileNotFoundError, KeyError):
        pass                                          # no figure data here: expected
