"""Benchmark: one tune job's CPU time and the work it did (runs, run-rounds, gradient rows,
design and aggregation time), to check `airfl plan`'s cost of it.

Usage (from the repository root; the experiment's partition and the reference must exist)::

    OMP_NUM_THREADS=1 AIRFL_PROGRESS_SECONDS=1000 nice -n 10 python benchmarks/tune_job_rounds.py \
        biased_fl/fig3b_snr30 best_channel [--profile paper] [--json OUT.json]

It runs the tune stage's own `run` in this process (it writes the job's tuning file as the
stage does) and counts, by wrapping the round loop's `TrialRun` and the lockstep's gradient
and aggregation calls (timing only; every call is the original), the runs and run-rounds per
scheme, the clients' gradients computed, and the CPU time of the gradients, the aggregations
and the designs. CPU time of this process (`time.process_time`), the job's start-up (imports,
~2.4 s, `job_startup.py`) not included; the plan's figure for the job is printed beside it.
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import time

import torch


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("experiment")
    parser.add_argument("curve")
    parser.add_argument("--profile", default="paper")
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)

    import airfl.core.lockstep as lockstep
    import airfl.core.loop as loop
    import airfl.pipeline.runs as runs
    from airfl.pipeline import plan
    from airfl.pipeline.params import load_params
    from airfl.pipeline.stages import tune

    counts = {"runs": collections.Counter(), "run_rounds": collections.Counter(),
              "gradient_rows": 0, "gradient_s": 0.0, "aggregate_s": 0.0, "design_s": 0.0}
    init, finish = loop.TrialRun.__init__, loop.TrialRun.finish
    gradients, aggregate, design = (lockstep.client_gradients_many, lockstep.aggregate_runs,
                                    runs.design_trials)

    def counted_init(self, *a, **k):
        init(self, *a, **k)
        counts["runs"][self.scheme.name] += 1

    def counted_finish(self, *a, **k):
        counts["run_rounds"][self.scheme.name] += 1
        return finish(self, *a, **k)

    def timed(key, function):
        def call(*a, **k):
            start = time.process_time()
            out = function(*a, **k)
            counts[key] += time.process_time() - start
            return out
        return call

    def counted_gradients(model, params, batch, rows=None):
        counts["gradient_rows"] += int(rows.sum()) if rows is not None \
            else params.shape[0] * batch.num_clients
        return timed("gradient_s", gradients)(model, params, batch, rows)

    loop.TrialRun.__init__, loop.TrialRun.finish = counted_init, counted_finish
    lockstep.client_gradients_many = counted_gradients
    lockstep.aggregate_runs = timed("aggregate_s", aggregate)
    runs.design_trials = timed("design_s", design)
    params = load_params("params.yaml", {"profile": args.profile})
    start = time.process_time()
    tune.run(params, args.experiment, args.curve)
    cpu = time.process_time() - start
    job = plan.PlannedJob("tune", f"tune-{args.experiment.replace('/', '-')}-{args.curve}",
                          (args.experiment, args.curve))
    planned = plan.job_cost(job, params, plan.UnitCosts.load())
    result = {"job": [args.experiment, args.curve], "profile": args.profile, "cpu_s": cpu,
              "planned_s": planned.core_s, "runs": dict(counts["runs"]),
              "run_rounds": dict(counts["run_rounds"]),
              **{k: counts[k] for k in ("gradient_rows", "gradient_s", "aggregate_s",
                                        "design_s")}}
    print(json.dumps(result))
    if args.json:
        with open(args.json, "w") as out:
            json.dump(result, out, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
