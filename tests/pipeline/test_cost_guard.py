"""A run whose `airfl plan` estimate exceeds confirm_cost_above_core_hours prints the estimate
and starts nothing until confirmed: `rounds: 1e9` used to start a train job of thousands of
core-hours without a word."""

from __future__ import annotations

import subprocess
import sys

import pytest

from airfl.pipeline import cost_guard, plan
from airfl.pipeline.dag import experiment_jobs
from airfl.pipeline.params import load_params
from airfl.pipeline.registry import get_experiment
from workspace import make_workspace, run, tool_env

EXPERIMENT = "baselines/accuracy_vs_rounds"
HUGE = {"baselines.accuracy_vs_rounds.scale.quick.rounds": 1_000_000_000}


@pytest.fixture()
def at_root(repo_root, monkeypatch):
    monkeypatch.chdir(repo_root)                # workflow/unit_costs.json, params.yaml


def test_a_snakemake_job_is_costed_as_airfl_plan_costs_it(at_root):
    params = load_params("params.yaml", {})
    units = plan.UnitCosts.load()
    for job in experiment_jobs(get_experiment(EXPERIMENT), params):
        paper, figure = EXPERIMENT.split("/")
        wildcards = {"paper": paper, "figure": figure}
        if len(job.args) > 1:
            wildcards["curve"] = job.args[1]
        rule = job.stage if job.stage != "figure" else f"figure_{paper}_{figure}"
        light = cost_guard.light_cost(cost_guard.planned_job(rule, wildcards), params, units)
        full = plan.job_cost(job, params, units)
        assert (light.stage, light.paper, light.core_s) == (full.stage, full.paper, full.core_s)


def test_a_billion_rounds_are_over_the_bound_and_the_quick_profile_is_not(at_root):
    quick = load_params("params.yaml", {})
    assert cost_guard.job_over_bound("train", [EXPERIMENT, "ideal"], quick) is None
    huge = load_params("params.yaml", HUGE)
    message = cost_guard.job_over_bound("train", [EXPERIMENT, "ideal"], huge)
    assert message and "core-hours" in message and "confirm_cost_above_core_hours = 24" in message
    assert "airfl --yes train baselines/accuracy_vs_rounds ideal" in message
    unbounded = load_params("params.yaml", {**HUGE, "confirm_cost_above_core_hours": None})
    assert cost_guard.job_over_bound("train", [EXPERIMENT, "ideal"], unbounded) is None
    assert cost_guard.job_over_bound("figure", [EXPERIMENT], huge) is None      # a fixed cost


def test_airfl_train_prints_the_estimate_and_writes_nothing(repo_root, tmp_path):
    done = subprocess.run([sys.executable, "-m", "airfl", "--set",
                           "baselines.accuracy_vs_rounds.scale.quick.rounds=1000000000", "train",
                           EXPERIMENT, "ideal"], cwd=repo_root, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "nothing started" in done.stderr and "baselines " in done.stderr


TARGET = "figures/baselines/accuracy_vs_rounds.png"
CONFIG = ["--config", "baselines={accuracy_vs_rounds: {scale: {quick: {rounds: 1000000000}}}}"]


@pytest.mark.slow
def test_snakemake_stops_before_its_first_job_and_dry_runs_stay_free(repo_root, tmp_path,
                                                                      mnist_mirror):
    env = tool_env(mnist_mirror)
    work = make_workspace(repo_root, tmp_path / "ws", env, lambda p: p)
    dry = run(["snakemake", "-n", "--cores", "1", TARGET, *CONFIG], work, env)
    assert "train" in dry.stdout and "core-hours" not in dry.stdout + dry.stderr
    done = run(["snakemake", "--cores", "1", TARGET, *CONFIG], work, env, check=False)
    assert done.returncode != 0
    assert "above confirm_cost_above_core_hours = 24; nothing started" in done.stderr
    assert "--config confirm_cost_above_core_hours=N" in done.stderr
    assert not (work / "results").exists()                  # no job ran
    assert not any((work / ".snakemake" / "locks").glob("*"))   # the next run needs no unlock
