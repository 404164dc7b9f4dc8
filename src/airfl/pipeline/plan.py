"""`airfl plan`: what a run of the pipeline will cost before it starts, from the real DAG and
measured unit costs.

The jobs are the DAG's own (`airfl.pipeline.dag.jobs`, the list dvc.yaml and the Snakefile are
made from), restricted to what a target needs (its outputs and everything upstream). Each job
is costed from unit costs that `benchmarks/unit_costs.py` measures on one machine and stores
with that machine's description (CPU model, cores, date, torch version) in
`workflow/unit_costs.json`:

* a job's fixed cost per stage (the median job of that stage in a measured Snakemake run,
  start-up included: every job that is not training is costed by it alone; every stage of
  the stage table needs one, a stage without stops the plan, and a rule that runs no command,
  a collect target, costs nothing);
* per model: one SGD step of one client at a batch size (`client_step_s[batch]`, the engine
  `auto` runs on CPU, one thread), one evaluation forward of one sample (`eval_sample_s`) and,
  for models trained by full-batch gradient uploads, one sample's gradient in a lockstep of many
  runs (`lockstep_sample_s`: `client_gradients_many`, how Biased FL's trials and tune candidates
  run together).

A train, tune or calibrate job costs its training and evaluation (pipeline/train_cost.py).
An audit job costs its stage's fixed cost plus its draws (pipeline/audit_cost.py).

A batch size not measured is costed per sample from the nearest measured one. GPU-hours come
from a GPU unit cost per client step (`gpu.models`, written by benchmarks/device_check.py from a
measured step): the training jobs' client steps times it (evaluation and job start-up are not
in them); a paper with a training job whose model has no GPU unit cost says "not measured".
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from airfl.params.config import ConfigError
from airfl.pipeline.audit_cost import audit_seconds
from airfl.pipeline.train_cost import measured_horizon_cost, train_work, tune_runs
from airfl.pipeline.trial_blocks import block_trials, trial_blocks
from airfl.pipeline.unit_costs import UNIT_COSTS, UnitCosts

CORES = 2                              # the wall-clock column: days on this many cores


@dataclass
class JobCost:
    """One job's planned cost: core-seconds on the measured CPU (one thread), GPU-seconds of
    its training where the GPU was measured."""

    stage: str
    name: str
    paper: str
    core_s: float
    gpu_s: float | None = None         # None: no GPU unit cost for this job's work
    trials: int = 0                    # training runs (trials of a curve) it makes


COSTED_STAGES = ("train", "trials", "tune", "calibrate")   # costs that grow with the params


@dataclass(frozen=True)
class PlannedJob:
    """What costing reads of a job (`job_cost`): its stage, name and arguments; made from a
    Snakemake job's rule and wildcards or a command line, without building airfl's whole DAG
    (`dag.jobs`, tens of seconds for the quick profile)."""

    stage: str
    name: str
    args: tuple[str, ...]


def job_paper(job) -> str:
    """The paper a job belongs to ('shared' for datasets)."""
    if job.stage == "data":
        return "shared"
    if job.stage == "reference":
        from airfl.pipeline.registry import all_experiments
        return next(e.paper for e in all_experiments()
                    if e.reference is not None and e.reference.name == job.args[0])
    if not job.args:
        return "shared"                          # the collected CLAIMS.md
    return job.args[0].split("/")[0]


def job_cost(job, params: dict[str, Any], units: UnitCosts,
             points: list | None = None, blocks: Callable | None = None) -> JobCost:
    """A job's cost; of a split curve (pipeline.trial_blocks), a block's job (stage trials)
    costs its trials and the train job, which merges them, its fixed cost alone; an audit job
    with `points` (built by its stage) is costed from them (`audit_work`). `blocks`: an
    experiment's composed block at these params, when already composed (`dag.Context.block`,
    which Snakemake's rules share: composing one costs milliseconds, and a run asks for
    hundreds of jobs); else composed here."""
    from airfl.pipeline.registry import get_experiment

    fixed = units.stage(job.stage)
    cost = JobCost(job.stage, job.name, job_paper(job), fixed)
    if job.stage == "audit":
        cost.core_s += audit_seconds(params, job.args[0], job.args[1], units, points)
        return cost
    if job.stage not in COSTED_STAGES:
        return cost
    experiment = get_experiment(job.args[0])
    block = experiment.params(params) if blocks is None else blocks(experiment)
    if (split := trial_blocks(params, experiment, block)) and job.stage == "train":
        return cost                            # merges its blocks' tables
    measured = None
    if job.stage == "calibrate":
        curve_name = next(iter(block["curves"]))
        work, repeats = train_work(experiment, block, block["curves"][curve_name], rounds=1,
                                   evaluate=False), 1
    else:
        curve_name = job.args[1]
        curve = block["curves"][curve_name]
        if block["scale"].get("horizon_s"):
            measured = units.horizon_run(params["profile"], experiment.id, curve_name)
        rounds = None
        if measured is not None:
            training_s, rounds, _ = measured_horizon_cost(job.stage, block, curve_name, measured)
        if job.stage == "tune":
            work, repeats = train_work(experiment, block, curve, rounds=rounds,
                                       evaluate=False), tune_runs(block, curve_name)
        else:
            work = train_work(experiment, block, curve, rounds=rounds,
                              evaluation=experiment.evaluation(curve_name, block["curves"]),
                              training_metrics=experiment.measures_training(
                                  curve_name, block["curves"]))
            repeats = len(block_trials(job.args[2], split)) if job.stage == "trials" \
                else int(block["scale"]["trials"])
            cost.trials = repeats
    gpu_step = units.gpu_client_step(work.model, work.batch)
    if gpu_step is not None:                   # training only: evaluation is not measured there
        cost.gpu_s = repeats * (work.client_steps + work.lockstep_samples / work.batch) * gpu_step
    seconds = work.eval_samples * units.eval_sample(work.model)
    if measured is not None:             # the measured run-rounds replace the formula's steps
        cost.core_s += training_s * (1 if job.stage == "tune" else repeats) + repeats * seconds
        return cost
    if work.client_steps:
        seconds += work.client_steps * units.client_step(work.model, work.batch)
    if work.lockstep_samples:
        seconds += work.lockstep_samples * units.lockstep_sample(work.model)
    cost.core_s += repeats * seconds
    return cost


def needed_jobs(all_jobs: list, targets: list[str]) -> list:
    """The jobs that make `targets` and everything upstream of them, in DAG order."""
    maker = {out: job for job in all_jobs for out in job.outs + [p.path for p in job.plots]
             + job.metrics}
    wanted: set[str] = set()
    stack = list(targets)
    while stack:
        path = stack.pop()
        job = maker.get(path)
        if job is None or job.name in wanted:
            continue
        wanted.add(job.name)
        stack.extend(job.deps)
    return [job for job in all_jobs if job.name in wanted]


def target_outputs(target: str | None, params: dict[str, Any], all_jobs: list) -> list[str]:
    """A target's files: every job's (None or 'all'), a paper's (`snakemake <paper>`), or one
    output path."""
    from airfl.pipeline.dag import paper_targets
    from airfl.pipeline.registry import papers

    if target in (None, "all"):
        return [out for job in all_jobs for out in job.outs]
    if target in papers():
        return paper_targets(target, params)
    known = {out for job in all_jobs for out in job.outs + [p.path for p in job.plots] + job.metrics}
    if target not in known:
        raise ConfigError(f"plan: target {target!r} is neither 'all', a paper ("
                          + ", ".join(papers()) + ") nor an output of the DAG")
    return [target]


def plan(params: dict[str, Any], target: str | None = None,
         units: UnitCosts | None = None, all_jobs: list | None = None) -> list[JobCost]:
    """Every job `target` needs (all: None), costed; `all_jobs`: the DAG's jobs of these params
    when already built (`dag.jobs(params)`, the slow part)."""
    from airfl.pipeline.dag import jobs

    units = units or UnitCosts.load()
    all_jobs = jobs(params) if all_jobs is None else all_jobs
    chosen = needed_jobs(all_jobs, target_outputs(target, params, all_jobs))
    return [job_cost(job, params, units) for job in chosen]


def summary(costs: list[JobCost]) -> dict[str, dict[str, Any]]:
    """Per paper (and 'total'): jobs, training runs, core-seconds, GPU-seconds (None when some
    training job has no GPU unit cost), its longest job (name, core-seconds on one thread)."""
    rows: dict[str, dict[str, Any]] = {}
    for cost in costs + [JobCost(c.stage, c.name, "total", c.core_s, c.gpu_s, c.trials)
                         for c in costs]:
        row = rows.setdefault(cost.paper, {"jobs": 0, "runs": 0, "core_s": 0.0, "gpu_s": 0.0,
                                           "gpu_complete": True, "train_core_s": 0.0,
                                           "longest_job": None, "longest_job_s": 0.0})
        row["jobs"] += 1
        if row["longest_job"] is None or cost.core_s > row["longest_job_s"]:
            row["longest_job"], row["longest_job_s"] = cost.name, cost.core_s
        row["runs"] += cost.trials
        row["core_s"] += cost.core_s
        if cost.stage in COSTED_STAGES:
            row["train_core_s"] += cost.core_s
            if cost.gpu_s is None:
                row["gpu_complete"] = False
            else:
                row["gpu_s"] += cost.gpu_s
    return rows


def duration(seconds: float) -> str:
    if seconds < 3600:
        return f"{seconds / 60:.1f} min"
    if seconds < 86400 * 2:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} days"


def render(rows: dict[str, dict[str, Any]], units: UnitCosts, profile: str,
           target: str | None) -> str:
    m = units.machine
    gpu = units.gpu.get("machine", {}).get("device") if units.gpu.get("models") else None
    lines = [f"airfl plan: profile {profile}, target {target or 'all'}; a fresh run of every "
             "job listed",
             f"unit costs: {m.get('cpu', '?')}, {m.get('threads', 1)} thread per job, measured "
             f"{m.get('date', '?')}, torch {m.get('torch', '?')}; GPU: "
             + (gpu or "not measured"),
             f"{'paper':<10} {'jobs':>5} {'runs':>5} {'core-h':>9} {'train core-h':>12} "
             f"{'on ' + str(CORES) + ' cores':>12} {'GPU-h':>13} {'longest job':>12}"]
    order = sorted((p for p in rows if p != "total"), key=lambda p: (p == "shared", p))
    for paper in order + ["total"]:
        r = rows[paper]
        gpu_h = f"{r['gpu_s'] / 3600:.2f}" if r["gpu_complete"] and units.gpu.get("models") \
            else "not measured"
        if r["gpu_complete"] and r["train_core_s"] == 0 and units.gpu.get("models"):
            gpu_h = "0"
        lines.append(f"{paper:<10} {r['jobs']:>5} {r['runs']:>5} {r['core_s'] / 3600:>9.2f} "
                     f"{r['train_core_s'] / 3600:>12.2f} {duration(r['core_s'] / CORES):>12} "
                     f"{gpu_h:>13} {duration(r['longest_job_s']):>12}")
    total = rows["total"]
    lines.append(f"longest job: {total['longest_job']}, {duration(total['longest_job_s'])} on "
                 "one core; a cluster's wall-time limit must fit it (trials_per_job splits a "
                 "curve's trials into shorter jobs)")
    return "\n".join(lines)


def main(params: dict[str, Any], target: str | None, units_path: str | Path = UNIT_COSTS,
         as_json: bool = False) -> int:
    units = UnitCosts.load(units_path)
    rows = summary(plan(params, target, units))
    if as_json:
        print(json.dumps({"profile": params["profile"], "target": target or "all",
                          "machine": units.machine, "papers": rows}, indent=1))
    else:
        print(render(rows, units, params["profile"], target))
    return 0
