"""Analysis: training runs that two experiments both make, and what sharing them would save.

Usage (from the repository root)::

    OMP_NUM_THREADS=1 nice -n 10 python benchmarks/shared_draws.py [--profile paper] [--json OUT]

A run's random streams are keyed by (seed, experiment, trial, round, client)
(`airfl.runtime.rng`), so two experiments never make the same run even where everything they
read is equal. This script finds the curves where it is: a curve of one experiment whose
training job (`airfl train <experiment> <curve>`) reads the same values as a curve of another
experiment, and so do its upstream jobs (the experiment's partition and calibration, the curve's
design and tuning): each job's view of the params (`dag.rule_params`: its stage's knobs and its
view of the experiment's block, what dvc.yaml and the Snakefile rerun it on), plus the inputs it
reads from outside its own experiment (e.g. another experiment's tuned step sizes). Such a curve
would be the same runs if the two experiments were declared to share their draws; its training
work (its train job, and the trials blocks of a split curve, `airfl plan`'s cost; its tune job
too where that is equal) is what sharing would save. Of each group of equal curves one is kept
(the first in registry order), the others counted, per paper, with their planned core-hours
beside the paper's total (`airfl plan`), and the total without DP as a perk (whose runs dominate
the paper profile).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

from airfl.pipeline import dag
from airfl.pipeline.params import load_params
from airfl.pipeline.plan import COSTED_STAGES, UnitCosts, job_cost, job_paper
from airfl.pipeline.registry import all_experiments

UPSTREAM = ("partition", "calibrate", "design", "tune")    # what a curve's runs are made from
TRAINING = ("train", "trials", "tune")                     # its work, shared with the runs


def signatures(params: dict) -> tuple[dict[tuple[str, str], str], dict[tuple[str, str], list]]:
    """Per (experiment, curve): the JSON of every view its runs are made from (its train job's
    and its upstream jobs', plus inputs from other experiments), and its training jobs."""
    ctx = dag.Context(params)
    signature: dict[tuple[str, str], str] = {}
    work: dict[tuple[str, str], list] = defaultdict(list)
    for experiment in all_experiments():
        jobs = dag.experiment_jobs(experiment, params, ctx)
        own = (f"/{experiment.id}/", f"/{experiment.id}.")     # its own outputs' paths
        for job in jobs:
            if job.stage != "train":
                continue
            curve = job.args[1]
            related = [j for j in jobs if (j.stage in UPSTREAM or j.stage in TRAINING)
                       and (len(j.args) == 1 or j.args[1] == curve)]
            views = {f"{j.stage}:{'/'.join(j.args[2:])}": dag.rule_params(ctx, j.stage,
                                                                          tuple(j.args[:2]))
                     for j in related if j.stage != "trials"}
            outside = sorted(d for j in related for d in j.deps
                             if not any(mark in d for mark in own))
            signature[(experiment.id, curve)] = json.dumps({"views": views, "inputs": outside},
                                                           sort_keys=True, default=str)
            work[(experiment.id, curve)] = [j for j in related if j.stage in TRAINING]
    return signature, work


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default="paper", choices=("quick", "paper"))
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    params = load_params("params.yaml", {"profile": args.profile})
    units = UnitCosts.load()
    signature, work = signatures(params)
    groups: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for key, sig in signature.items():
        groups[sig].append(key)
    total: dict[str, float] = defaultdict(float)
    for jobs in work.values():
        for job in jobs:
            total[job_paper(job)] += job_cost(job, params, units).core_s
    every = {job.name: job for job in dag.jobs(params)}
    paper_total: dict[str, float] = defaultdict(float)
    for job in every.values():
        paper_total[job_paper(job)] += job_cost(job, params, units).core_s
    saved: dict[str, dict] = defaultdict(lambda: {"train_jobs": 0, "core_s": 0.0, "pairs": []})
    for members in groups.values():
        experiments = {e for e, _ in members}
        if len(experiments) < 2:
            continue
        kept = members[0]
        for experiment_id, curve in members[1:]:
            if experiment_id == kept[0]:
                continue                          # two curves of one experiment: not this
            paper = experiment_id.split("/")[0]
            row = saved[paper]
            row["train_jobs"] += 1
            row["core_s"] += sum(job_cost(j, params, units).core_s
                                 for j in work[(experiment_id, curve)]
                                 if j.stage in COSTED_STAGES)
            row["pairs"].append(f"{experiment_id}:{curve} = {kept[0]}:{kept[1]}")
    print(f"profile {args.profile}: train jobs whose runs equal another experiment's "
          "(planned core-hours of their training work)")
    print(f"{'paper':<10} {'train jobs':>10} {'sharable':>9} {'core-h':>8} {'of paper':>9}")
    trains = defaultdict(int)
    for experiment_id, _ in signature:
        trains[experiment_id.split("/")[0]] += 1
    for paper in sorted(paper_total):
        row = saved.get(paper, {"train_jobs": 0, "core_s": 0.0})
        print(f"{paper:<10} {trains.get(paper, 0):>10} {row['train_jobs']:>9} "
              f"{row['core_s'] / 3600:>8.3f} {paper_total[paper] / 3600:>9.2f}")
    all_s = sum(paper_total.values())
    perk = paper_total.get("dp_perk", 0.0)
    shared_s = sum(r["core_s"] for r in saved.values())
    shared_not_perk = shared_s - saved.get("dp_perk", {"core_s": 0.0})["core_s"]
    print(f"total: {sum(r['train_jobs'] for r in saved.values())} sharable train jobs, "
          f"{shared_s / 3600:.3f} of {all_s / 3600:.2f} core-hours; without DP as a perk "
          f"{shared_not_perk / 3600:.3f} of {(all_s - perk) / 3600:.2f} core-hours "
          f"({100 * shared_not_perk / max(all_s - perk, 1e-9):.1f} %)")
    for paper, row in sorted(saved.items()):
        for pair in row["pairs"]:
            print(f"  {pair}")
    if args.json:
        args.json.write_text(json.dumps({"profile": args.profile, "papers": saved,
                                         "paper_core_s": paper_total}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
