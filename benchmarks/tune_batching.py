"""Benchmark: paper-profile Biased FL tune jobs with the candidates run one by one vs in lockstep
with batched gradients (airfl.core.lockstep).

Usage (from the repository root, one thread)::

    OMP_NUM_THREADS=1 python benchmarks/tune_batching.py [--workdir DIR] [--json OUT]
        [--jobs biased_fl/fig2b:proposed biased_fl/fig3b:best_channel ...]

It builds the paper profile's inputs (MNIST from the data mirror, the reference w*, the panels'
partitions) with the pipeline's own stages in a scratch folder, then runs each named tune job
(`airfl.pipeline.stages.tune.run`, exactly as `airfl tune` does) twice, back to back:

* before: every candidate's selection trials one after the other (`run_trial`), as before the
  lockstep (done by making `airfl.pipeline.runs.batchable` answer False);
* after: all candidates' selection trials of each search in lockstep (`run_lockstep`).

Each run's time is split by wrappers: designs (the candidates' design solves), local gradients
(`client_updates` one by one, `client_gradients_many` in lockstep), aggregation (the schemes'
`aggregate`), the rest (channel draws, server steps, evaluation, Python). The two tuning files
are compared: the chosen step size and parameters, and the largest relative difference of any
candidate's final gap (float reassociation of the wider GEMMs). A job is rerun in lockstep with
`--rerun` to check that its tuning file is byte-identical.

`--train EXP:CURVE --train-trials N` instead times the train stage's work on N trials of one
curve (its panel's evaluation schedule, designs of trials 0..N-1), one by one (`run_trials` as
the train stage runs it) vs in lockstep (`run_jobs(..., batched=True)`), and compares the
tables (largest relative difference of any evaluated number).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from biased_fl_trial import Timers, paper_params  # noqa: E402

from airfl.pipeline.registry import get_experiment  # noqa: E402

DEFAULT_JOBS = ("biased_fl/fig2b:proposed", "biased_fl/fig2b:bbfl_interior",
                "biased_fl/fig3b:proposed", "biased_fl/fig3b:best_channel")
PARTS = ("designs", "local gradients", "aggregation")


def prepare(params, experiments):
    from airfl.pipeline import paths
    from airfl.pipeline import trial as setup
    from airfl.pipeline.stages import data, partition, reference

    if not paths.dataset_manifest("mnist").exists():
        data.run(params, "mnist")
    if not paths.reference("biased_fl", "json").exists():
        reference.run(params, "biased_fl")
    for experiment_id in experiments:
        if not paths.partition(experiment_id).exists():
            partition.run(params, experiment_id)
    for split in ("train", "test"):          # the jobs' times exclude reading MNIST
        setup.dataset_split("mnist", str(params["data"]["root"]), split)


def timed_tune(params, experiment_id, curve, batched: bool) -> tuple[dict, bytes]:
    """One tune job as `airfl tune` runs it; its time, split, and tuning file's bytes."""
    import airfl.core.lockstep as lockstep
    import airfl.core.loop as loop
    import airfl.pipeline.runs as runs
    from airfl.pipeline import paths
    from airfl.pipeline.stages import tune

    timers = Timers(PARTS)
    saved = {"batchable": runs.batchable, "design_trials": runs.design_trials,
             "build_scheme": runs.build_scheme, "client_updates": loop.client_updates,
             "client_gradients_many": lockstep.client_gradients_many,
             "aggregate_runs": getattr(lockstep, "aggregate_runs", None)}
    per_round = batched and saved["aggregate_runs"] is not None    # (absent in versions before
                                                                   # the batched aggregation)

    def build_timed(name, kind_params):
        scheme = saved["build_scheme"](name, kind_params)
        if not per_round:     # in lockstep, aggregate_runs (all runs of a round) is timed
            scheme.aggregate = timers.wrap("aggregation", scheme.aggregate)
        return scheme

    if not batched:
        runs.batchable = lambda jobs: False
    runs.design_trials = timers.wrap("designs", saved["design_trials"])
    runs.build_scheme = build_timed
    loop.client_updates = timers.wrap("local gradients", saved["client_updates"])
    lockstep.client_gradients_many = timers.wrap("local gradients",
                                                 saved["client_gradients_many"])
    if per_round:
        lockstep.aggregate_runs = timers.wrap("aggregation", saved["aggregate_runs"])
    try:
        start, cpu_start = time.perf_counter(), time.process_time()
        tune.run(params, experiment_id, curve)
        total, cpu = time.perf_counter() - start, time.process_time() - cpu_start
    finally:
        runs.batchable, runs.design_trials = saved["batchable"], saved["design_trials"]
        runs.build_scheme, loop.client_updates = saved["build_scheme"], saved["client_updates"]
        lockstep.client_gradients_many = saved["client_gradients_many"]
        if per_round:
            lockstep.aggregate_runs = saved["aggregate_runs"]
    split = {part: round(s, 3) for part, s in timers.seconds.items()}
    split["rest"] = round(total - sum(timers.seconds.values()), 3)
    calls = {"one-by-one gradient calls": timers.calls.get("client_updates", 0),
             "lockstep gradient calls": timers.calls.get("client_gradients_many", 0)}
    return {"total_s": round(total, 3), "cpu_s": round(cpu, 3), "split_s": split, **calls}, \
        paths.tuning(experiment_id, curve).read_bytes()


def profiled_tune(params, experiment_id, curve, top: int) -> tuple[dict, bytes]:
    """One tune job in lockstep; with `top` > 0 under cProfile, printing the `top` functions of
    most own time (where the time goes, by function, for the split in benchmarks/README.md)."""
    if not top:
        return timed_tune(params, experiment_id, curve, batched=True)
    import cProfile
    import io
    import pstats

    profiler = cProfile.Profile()
    profiler.enable()
    try:
        out = timed_tune(params, experiment_id, curve, batched=True)
    finally:
        profiler.disable()
    text = io.StringIO()
    pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(top)
    print(f"--- cProfile {experiment_id} {curve} (own time) ---", text.getvalue(), sep="\n",
          flush=True)
    return out


def compare(before: bytes, after: bytes) -> dict:
    a, b = json.loads(before), json.loads(after)
    rel = 0.0
    searches = [(a["grid"], b["grid"])]
    if "param_search" in a:
        searches.append(([r for r in a["param_search"]["grid"] if r["feasible"]],
                         [r for r in b["param_search"]["grid"] if r["feasible"]]))
    for rows_a, rows_b in searches:
        for ra, rb in zip(rows_a, rows_b):
            for x, y in zip(ra.get("final_gaps", [ra["final_gap"]]),
                            rb.get("final_gaps", [rb["final_gap"]])):
                if x != y:
                    rel = max(rel, abs(x - y) / max(abs(x), abs(y)))
    return {"same_eta": a["eta"] == b["eta"], "same_params": a.get("params") == b.get("params"),
            "bit_identical": before == after, "max_relative_gap_difference": rel}


def timed_train(params, experiment_id, curve, trials: int) -> dict:
    """N trials of one curve as the train stage runs them, one by one vs in lockstep."""
    import numpy as np

    import airfl.pipeline.runs as runs

    experiment = get_experiment(experiment_id)
    block = experiment.params(params)
    curve_params, eta = dict(block["curves"][curve]), block["training"]["server_lr"]
    designs = runs.design_trials(params, experiment_id, block, curve, curve_params, range(trials))
    out, tables = {}, {}
    for label, batched in (("before", False), ("after", True)):
        start = time.perf_counter()
        jobs = runs.trial_jobs(params, experiment, block, curve, curve_params, eta, designs,
                               range(trials))
        results = runs.run_jobs(experiment, jobs, batched=batched)
        out[f"{label}_s"] = round(time.perf_counter() - start, 3)
        tables[label] = runs.trial_frame([t for t, _ in results], range(trials))
    a, b = (tables[k].select_dtypes("number").to_numpy(float) for k in ("before", "after"))
    same = np.isfinite(a) & np.isfinite(b)
    rel = np.abs(a - b)[same] / np.maximum(np.abs(a[same]), 1e-30)
    return {"job": f"train {experiment_id} {curve} ({trials} trials)", **out,
            "speed_up": round(out["before_s"] / out["after_s"], 3),
            "same_nan_pattern": bool((np.isnan(a) == np.isnan(b)).all()),
            "max_relative_difference": float(rel.max()) if rel.size else 0.0}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", default=None)
    parser.add_argument("--jobs", nargs="+", default=list(DEFAULT_JOBS),
                        help="experiment:curve of each tune job")
    parser.add_argument("--rerun", action="store_true", help="rerun each job in lockstep")
    parser.add_argument("--train", default=None, help="experiment:curve of a train job")
    parser.add_argument("--train-trials", type=int, default=4)
    parser.add_argument("--json", default=None)
    parser.add_argument("--after-only", action="store_true",
                        help="run each tune job in lockstep only (no one-by-one 'before')")
    parser.add_argument("--profile", type=int, default=0, metavar="N",
                        help="cProfile each lockstep run; print the N functions of most own time")
    args = parser.parse_args()
    torch.set_num_threads(1)
    params = paper_params(Path(__file__).resolve().parents[1])
    import airfl.schemes  # noqa: F401

    jobs = [tuple(job.split(":")) for job in args.jobs]
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="airfl-bench-"))
    workdir.mkdir(parents=True, exist_ok=True)
    os.chdir(workdir)
    if args.train:
        experiment_id, curve = args.train.split(":")
        prepare(params, [experiment_id])
        row = timed_train(params, experiment_id, curve, args.train_trials)
        print(json.dumps(row), "load average:", os.getloadavg(), flush=True)
        if args.json:
            Path(args.json).write_text(json.dumps(row, indent=2))
        return
    prepare(params, sorted({e for e, _ in jobs}))
    results, totals = [], {"before_s": 0.0, "after_s": 0.0}
    for experiment_id, curve in jobs:
        if args.after_only or args.profile:
            after, after_bytes = profiled_tune(params, experiment_id, curve, args.profile)
            row = {"job": f"{experiment_id} {curve}", "after": after,
                   "tuning_sha256": hashlib.sha256(after_bytes).hexdigest()}
            totals["after_s"] += after["total_s"]
            results.append(row)
            print(json.dumps(row), flush=True)
            continue
        before, before_bytes = timed_tune(params, experiment_id, curve, batched=False)
        after, after_bytes = timed_tune(params, experiment_id, curve, batched=True)
        row = {"job": f"{experiment_id} {curve}", "before": before, "after": after,
               "speed_up": round(before["total_s"] / after["total_s"], 3),
               **compare(before_bytes, after_bytes)}
        if args.rerun:
            row["rerun_bit_identical"] = timed_tune(params, experiment_id, curve, True)[1] \
                == after_bytes
        totals["before_s"] += before["total_s"]
        totals["after_s"] += after["total_s"]
        results.append(row)
        print(json.dumps(row), flush=True)
    if totals["before_s"]:
        totals["speed_up"] = round(totals["before_s"] / totals["after_s"], 3)
    print("total:", json.dumps(totals), "load average:", os.getloadavg(), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps({"jobs": results, "total": totals,
                                               "load_average_end": os.getloadavg()}, indent=2))


if __name__ == "__main__":
    main()
