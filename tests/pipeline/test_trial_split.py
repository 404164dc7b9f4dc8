"""A curve's trials split across jobs (params.yaml `trials_per_job`, pipeline.trial_blocks):
the blocks, their exact tables, the DAG both tools get, and a real split run whose merged run
tables are the one-job run's, byte for byte, through the SLURM profile's cluster executor."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import yaml

from airfl.params.config import ConfigError
from airfl.runtime.io import read_frame, write_frame
from airfl.pipeline import cost_guard, dag, dvcgen
from airfl.pipeline.params import load_params
from airfl.pipeline.registry import get_experiment
from airfl.pipeline.trial_blocks import block_trials, trial_blocks
from workspace import make_workspace, run, tool_env

EXPERIMENT = "baselines/accuracy_vs_rounds"


@pytest.fixture(scope="module")
def quick(repo_root):
    return load_params(str(repo_root / "params.yaml"), {"profile": "quick"})


def test_blocks_are_contiguous_and_cover_every_trial_once(quick):
    experiment = get_experiment(EXPERIMENT)
    block = experiment.params(quick)
    block["scale"]["trials"] = 7
    assert trial_blocks(quick, experiment, block) is None             # the default: one job
    assert trial_blocks({**quick, "trials_per_job": 7}, experiment, block) is None
    blocks = trial_blocks({**quick, "trials_per_job": 3}, experiment, block)
    assert blocks == ["0-2", "3-5", "6-6"]
    assert [t for b in blocks for t in block_trials(b, blocks)] == list(range(7))
    for wrong in ("0-1", "6-7", "x", "3-5 "):
        with pytest.raises(ConfigError, match="trials_per_job.*allowed: 0-2, 3-5, 6-6"):
            block_trials(wrong, blocks)
    with pytest.raises(ConfigError, match="every trial of the curve is one train job"):
        block_trials("0-2", None)


def test_trials_in_lockstep_stay_one_job(quick):
    """Biased FL's trials share each gradient GEMM (core.lockstep): split, their floats would
    follow the blocks."""
    experiment = get_experiment("biased_fl/fig2a")
    block = experiment.params(quick)
    assert block["scale"]["trials"] > 1
    assert trial_blocks({**quick, "trials_per_job": 1}, experiment, block) is None


def test_a_stored_block_table_keeps_every_value_and_column_type(tmp_path):
    frame = pd.DataFrame({"trial": [0, 0, 1], "round": [0, 1, 0],
                          "test_accuracy": [0.1, math.nan, 1 / 3], "participants": [math.nan, 18.0, 20.0],
                          "clipped": [True, False, True]})
    write_frame(tmp_path / "t.npz", frame)
    back = read_frame(tmp_path / "t.npz")
    pd.testing.assert_frame_equal(back, frame, check_exact=True)
    assert list(back.dtypes) == list(frame.dtypes)
    assert np.array_equal(back["test_accuracy"].to_numpy(), frame["test_accuracy"].to_numpy(),
                          equal_nan=True)
    with pytest.raises(ValueError, match="column 'mixed' holds Python objects"):
        write_frame(tmp_path / "o.npz", pd.DataFrame({"mixed": [1, "a"]}))


def test_dvc_yaml_gets_a_stage_per_block_and_the_train_stage_merges_them(quick):
    """Unchanged when trials_per_job is null (the committed dvc.yaml is checked against the
    registry in test_pipeline); with a split, the blocks' stages and the merge's deps."""
    split = {**quick, "trials_per_job": 2}
    stages = yaml.safe_load(dvcgen.render(split))["stages"]
    experiment = get_experiment(EXPERIMENT)
    blocks = trial_blocks(split, experiment, experiment.params(quick))
    assert len(blocks) == math.ceil(experiment.params(quick)["scale"]["trials"] / 2) > 1
    train = stages["train-baselines-accuracy_vs_rounds-ideal"]
    for block in blocks:
        stage = stages[f"trials-baselines-accuracy_vs_rounds-ideal-{block}"]
        assert stage["cmd"] == f"airfl trials {EXPERIMENT} ideal {block}"
        assert set(stage["outs"]) <= set(train["deps"])
    assert not any(n.startswith("trials-biased_fl") for n in stages)      # lockstep: one job


def test_split_jobs_rules_carry_trials_per_job_from_their_records_more_keys(quick):
    """Snakemake reruns a split curve's jobs when trials_per_job changes (the rule's params
    carry the record's `more_keys` values), and a curve of one job does not depend on it."""
    curve = "ideal"
    one_job = dag.rule_params(dag.Context(quick), "train", (EXPERIMENT, curve))
    assert "more" not in one_job
    split = {**quick, "trials_per_job": 2}
    ctx = dag.Context(split)
    block = ctx.trial_blocks(get_experiment(EXPERIMENT))[0]
    for stage, args in (("train", (EXPERIMENT, curve)), ("trials", (EXPERIMENT, curve, block))):
        params = dag.rule_params(ctx, stage, args)
        assert params["more"] == {"trials_per_job": 2}
        assert params["view"] == one_job["view"]           # the view itself is the same


def _split_ready(params: dict) -> dict:
    params["baselines"]["accuracy_vs_rounds"]["scale"]["quick"] = {
        "rounds": 2, "trials": 3, "eval_every": 1, "test_subset": 300, "train_eval_subset": 300}
    return params


RUNS = f"results/runs/{EXPERIMENT}"
CURVES = ("ota_low_snr", "fedavg_dp")     # per trial: channel draws; DP noise


@pytest.mark.slow
def test_a_split_run_through_the_cluster_executor_merges_to_the_one_job_bytes(
        repo_root, tmp_path, mnist_mirror):
    env = tool_env(mnist_mirror)
    work = make_workspace(repo_root, tmp_path / "ws", env, _split_ready)
    outputs = [f"{RUNS}/{c}.{s}" for c in CURVES for s in ("csv", "records.json", "json")]
    run(["snakemake", "--cores", "2", *outputs], work, env)
    one_job = {path: (work / path).read_bytes() for path in outputs}

    run(["snakemake", "--profile", "profiles/slurm", "--executor", "cluster-generic",
         "--cluster-generic-submit-cmd", "bash", "--jobs", "2", *outputs,
         "--config", "trials_per_job=2"], work, env)
    for curve in CURVES:
        stored = sorted(p.name for p in (work / "results/trials" / EXPERIMENT / curve).iterdir())
        assert stored == [f"{b}.{s}" for b in ("0-1", "2-2") for s in ("json", "npz",
                                                                         "records.json")]
        log = (work / f"logs/train/{EXPERIMENT}/{curve}.log").read_text()
        assert "merged from blocks 0-1, 2-2" in log
    assert {path: (work / path).read_bytes() for path in outputs} == one_job

    # CUDA jobs hold the gpu resource (a block trains; the merge does not)
    dry = run(["snakemake", "-n", f"{RUNS}/ota_low_snr.csv", "--config", "device=cuda",
               "trials_per_job=2"], work, env).stdout
    held, rule = {}, None
    for line in dry.splitlines():
        if line.startswith(("rule ", "localrule ")):
            rule = line.split()[1].rstrip(":")
        elif line.strip().startswith("resources:"):
            held.setdefault(rule, set()).add("gpu=1" in line.split(", "))
    assert held == {"trials": {True}, "train": {False}}, dry

    # DVC: dvc.yaml generated for the split is a valid DAG with the blocks upstream of train
    params = yaml.safe_load((work / "params.yaml").read_text())
    params["trials_per_job"] = 2
    (work / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    run(["airfl", "dvc-yaml"], work, env)
    dag = run(["dvc", "dag", "--dot", "train-baselines-accuracy_vs_rounds-ota_low_snr"],
              work, env).stdout
    for block in ("0-1", "2-2"):
        assert f"trials-baselines-accuracy_vs_rounds-ota_low_snr-{block}" in dag


def test_the_slurm_profile_offers_a_gpu_partition_the_executor_reads(repo_root):
    from snakemake_executor_plugin_slurm.partitions import read_partition_file

    config = yaml.safe_load((repo_root / "profiles/slurm/config.yaml").read_text())
    partitions = {p.name: p.limits for p in
                  read_partition_file(repo_root / config["slurm-partition-config"])}
    assert partitions["gpu"].max_gpu >= 1 and partitions["cpu"].max_gpu == 0


def test_the_cost_guard_costs_a_block_job_and_the_merge_as_the_plan_does(quick, repo_root,
                                                                          monkeypatch):
    """A Snakemake `trials` job (its block wildcard) costs its trials; a split curve's train
    job, which merges, its stage's fixed cost (workflow/rules/cost.smk costs jobs so)."""
    from airfl.pipeline import plan

    monkeypatch.chdir(repo_root)
    units = plan.UnitCosts.load()
    split = {**quick, "trials_per_job": 1}
    where = {"paper": "lapa", "figure": "fig4", "curve": "fedavg"}
    block = cost_guard.planned_job("trials", {**where, "block": "1-1"})
    assert block.args == ("lapa/fig4", "fedavg", "1-1")
    one_job = cost_guard.light_cost(cost_guard.planned_job("train", where), quick, units)
    assert one_job.trials == 2
    cost = cost_guard.light_cost(block, split, units)
    assert cost.trials == 1 and cost.core_s - units.stage("trials") == pytest.approx(
        (one_job.core_s - units.stage("train")) / 2)
    merge = cost_guard.light_cost(cost_guard.planned_job("train", where), split, units)
    assert merge.trials == 0 and merge.core_s == units.stage("train")


def test_a_block_that_is_not_one_of_the_curves_jobs_stops_before_the_stage(repo_root,
                                                                            monkeypatch, capsys):
    from airfl.cli import main

    monkeypatch.chdir(repo_root)
    assert main(["--set", "trials_per_job=1", "trials", "lapa/fig4", "fedavg", "0-1"]) == 2
    assert "unknown trials block '0-1' of lapa/fig4 fedavg (trials_per_job 1); allowed: 0-0, " \
           "1-1" in capsys.readouterr().err
    assert main(["trials", "lapa/fig4", "fedavg", "0-0"]) == 2
    assert "allowed: none, every trial is in the curve's train job" in capsys.readouterr().err
