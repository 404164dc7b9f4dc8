"""Benchmark: where one run-round of a paper-profile Biased FL digital tune (or train) job goes,
in microseconds per run-round, part by part.

Usage (from the repository root, one thread, nothing else running)::

    OMP_NUM_THREADS=1 AIRFL_DATA_MIRROR=... python benchmarks/run_round_split.py \
        --job biased_fl/fig3b_snr60:uqos --grid '{"K": [3, 5, 7, 10], "R": [0.2, 1.0], "r_U": [8]}' \
        [--train-trials 20] [--workdir DIR] [--json OUT]

It builds the paper profile's inputs in a scratch folder (`tune_batching.prepare`), then runs the
job as the pipeline does: the tune stage with the panel's tuning grid replaced by `--grid` (a
sub-grid keeps the run short; the runs still step in lockstep groups of up to 32), or with
`--train-trials N` the train stage's lockstep work on N trials of the curve. Wrappers with
`time.perf_counter` time each part; nested parts are included in their parents:

* gradients: `client_gradients_many` (the lockstep's per-client GEMMs and their loops);
* aggregate: `aggregate_runs`, of which plan (each run's choices: sampling, bits, latency),
  wqs (`weighted_quantized_sums`: the quantizer's uniforms and its compiled sum, wqs.kernel)
  and uniform_block (the trial's [N, d] uniform block, drawn once per trial and round);
* begin (the round's streams, channel draw and state), choose (sampling, decoding: inside
  rows_read, the lockstep asking which uploads each run reads), finish (server step, records,
  evaluation; eval_flush is the evaluation).

The wrappers add ~1 us a call. Run it against an older tree with PYTHONPATH=<tree>/src (parts that
tree lacks are reported absent).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import tune_batching  # noqa: E402
from biased_fl_trial import paper_params  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


def instrument(seconds: dict, calls: dict) -> None:
    """Wrap each part's function (module attributes looked up at call time) with a timer."""
    import airfl.core.lockstep as lockstep
    import airfl.core.loop as loop
    import airfl.papers.biased_fl.schemes.digital as digital
    import airfl.papers.biased_fl.schemes.digital_baselines as baselines
    import airfl.runtime.rng as rng

    def wrap(owner, name, label):
        if not hasattr(owner, name):
            return
        original = getattr(owner, name)

        def timed(*args, **kwargs):
            start = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                seconds[label] += time.perf_counter() - start
                calls[label] += 1
        setattr(owner, name, timed)

    wrap(lockstep, "client_gradients_many", "gradients")
    wrap(lockstep, "aggregate_runs", "aggregate")
    wrap(lockstep, "_rows_read", "rows_read")
    wrap(loop.TrialRun, "begin", "begin")
    wrap(loop.TrialRun, "finish", "finish")
    wrap(loop.DeferredEvaluation, "flush", "eval_flush")
    wrap(digital, "weighted_quantized_sums", "wqs")
    wrap(digital, "quantized_weighted_sum", "wqs.kernel")
    wrap(rng.RoundStreams, "uniform_block", "uniform_block")
    classes = [getattr(baselines, name) for name in baselines.__all__] + [digital.BiasedDigital]
    for cls in classes:
        if isinstance(cls, type) and issubclass(cls, digital._DigitalScheme):
            if "plan" in cls.__dict__:
                wrap(cls, "plan", "plan")
            if "choose" in cls.__dict__:
                wrap(cls, "choose", "choose")


def train_work(params: dict, experiment_id: str, curve: str, trials: int) -> None:
    """The train stage's lockstep work on `trials` trials of one curve (its own parameters)."""
    import airfl.pipeline.runs as runs
    from airfl.pipeline.registry import get_experiment

    experiment = get_experiment(experiment_id)
    block = experiment.params(params)
    curve_params, eta = dict(block["curves"][curve]), block["training"]["server_lr"]
    designs = runs.design_trials(params, experiment_id, block, curve, curve_params, range(trials))
    jobs = runs.trial_jobs(params, experiment, block, curve, curve_params, eta, designs,
                           range(trials))
    runs.run_jobs(experiment, jobs, batched=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--job", default="biased_fl/fig3b_snr60:uqos", help="EXPERIMENT:CURVE")
    parser.add_argument("--grid", default=None, help="JSON grid replacing the curve's tuning grid")
    parser.add_argument("--train-trials", type=int, default=0)
    parser.add_argument("--workdir", default=None)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    torch.set_num_threads(1)
    experiment_id, curve = args.job.split(":")
    params = paper_params(REPO)
    if args.grid is not None:
        panel = get_panel(params, experiment_id)
        panel["tuning"]["paper"]["param_grid"][curve] = json.loads(args.grid)
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="airfl-split-"))
    workdir.mkdir(parents=True, exist_ok=True)
    os.chdir(workdir)
    import airfl.schemes  # noqa: F401  (the registry's schemes)
    tune_batching.prepare(params, [experiment_id])
    seconds: dict = defaultdict(float)
    calls: dict = defaultdict(int)
    instrument(seconds, calls)
    start, cpu = time.perf_counter(), time.process_time()
    if args.train_trials:
        train_work(params, experiment_id, curve, args.train_trials)
    else:
        from airfl.pipeline.stages import tune
        tune.run(params, experiment_id, curve)
    total, cpu = time.perf_counter() - start, time.process_time() - cpu
    run_rounds = calls["finish"]
    out = {"job": args.job, "grid": args.grid, "train_trials": args.train_trials,
           "total_s": round(total, 2), "cpu_s": round(cpu, 2), "run_rounds": run_rounds,
           "lockstep_steps": calls["gradients"],
           "runs_per_step": round(run_rounds / max(calls["gradients"], 1), 1),
           "us_per_run_round": {"total": round(total / run_rounds * 1e6, 1),
                                **{k: round(v / run_rounds * 1e6, 1)
                                   for k, v in sorted(seconds.items())}},
           "calls": dict(sorted(calls.items()))}
    text = json.dumps(out, indent=1)
    print(text)
    if args.json:
        Path(args.json).write_text(text + "\n")


def get_panel(params: dict, experiment_id: str) -> dict:
    """The params block of the experiment's panel (biased_fl/fig3b_snr60 -> biased_fl.fig3b)."""
    paper, figure = experiment_id.split("/")
    return params[paper][figure.split("_snr")[0]]


if __name__ == "__main__":
    main()
