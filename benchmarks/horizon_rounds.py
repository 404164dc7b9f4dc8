"""Benchmark: how many rounds a horizon-bounded run makes, and what one of its rounds costs in
the lockstep its tune and train jobs run it in; stored for `airfl plan` in
workflow/unit_costs.json (`horizon_runs`).

Usage (from the repository root; the experiments' partitions and references must exist, e.g.
`airfl --set profile=paper partition biased_fl/fig3b_snr30`)::

    OMP_NUM_THREADS=1 nice -n 10 python benchmarks/horizon_rounds.py --profile paper \
        [--experiments biased_fl/fig3b_snr30,...] [--fraction 0.05] [--out workflow/unit_costs.json]

Why: a run bounded by a time horizon (`scale.horizon_s`, Biased FL's digital panels) stops when
its rounds' latencies add up to the horizon, and a round's latency follows the scheme's choices
and the drawn channel (how many devices upload, at how many bits, at which capacity), known only
by running it. Costing such a run at horizon / T_max (the proposed scheme's average-latency
budget, which a baseline does not even have) undercounted the rounds several times over (Fig. 3(b)
at +30 dB: the proposed scheme's runs made ~1,190 rounds, Best Channel's ~3,100, against 600).

What it measures, per experiment of the profile with a horizon and per curve, the runs its jobs
make over `--fraction` of the horizon (the declared parameters on the selection trials, every
grid combination on trial 0), in lockstep as the tune stage runs them
(`airfl.pipeline.runs.run_jobs(batched=True)`), at the panel's step size:

* `rounds_per_s`: rounds per second of horizon of the curve's declared parameters (its train
  job's runs; a tuned curve trains at its chosen parameters, which are not known before the
  tune: the declared ones stand for them);
* `grid_rounds_per_s`: the mean over the curve's parameter grid (every combination, as its tune
  job runs them), for a curve with a `param_grid`;
* `run_round_s`: CPU seconds of one run's round in that lockstep (gradients of the clients
  read, channel draw, the scheme's aggregation, server step), over every run measured: the
  CPU time of the lockstep over `--fraction` of the horizon less that over a quarter of it,
  divided by the difference in run-rounds (a run's one-off costs, its evaluations, cancel; a
  first lockstep over the quarter, not kept, warms up).

The round latency does not depend on the step size for these schemes (it is set by the bits,
the uploads and the channel), so one step size stands for the grid of step sizes. The machine
(CPU, date, torch) and the fraction are stored with the numbers.
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import time
from pathlib import Path

import torch

from airfl.core.participation import NoTransmissionError
from airfl.pipeline import param_search
from airfl.pipeline.params import load_params
from airfl.pipeline.plan import UNIT_COSTS
from airfl.pipeline.registry import active_experiments

sys.path.insert(0, str(Path(__file__).resolve().parent))
from unit_costs import machine, write_table  # noqa: E402


def measure(params, experiment, block, curve: str, candidates: list[dict],
            fractions: tuple[float, float], trials: int = 1) -> dict:
    """Rounds per second of horizon of each candidate (trial 0, in lockstep, over the larger
    fraction of the horizon), and the CPU seconds of one run-round: the difference of two
    lockstep runs over the two fractions, divided by the difference of their run-rounds (what
    a run costs once, its evaluations at round 0 and the last and the first call's warm-up,
    drops out)."""
    from airfl.pipeline.runs import design_trials, run_jobs, trial_jobs
    from airfl.pipeline.trial import curve_inputs

    shared = curve_inputs(params, experiment, block, evaluate=True)
    eta = block["training"]["server_lr"]
    runs = {}
    for fraction in [min(fractions), *sorted(fractions)]:     # the first: warm-up, not kept
        short = copy.deepcopy(block)
        short["scale"]["horizon_s"] = horizon = block["scale"]["horizon_s"] * fraction
        jobs = []
        for values in candidates:
            curve_params = {**block["curves"][curve], **values}
            try:
                designs = design_trials(params, experiment.id, short, curve, curve_params,
                                        range(trials))
            except NoTransmissionError:     # infeasible: its tune job does not run it either
                continue
            jobs += trial_jobs(params, experiment, short, curve, curve_params, eta, designs,
                               range(trials), final_only=True, shared=shared)
        start = time.process_time()
        results = run_jobs(experiment, jobs, batched=True)
        cpu = time.process_time() - start
        # a run ended by the round budget before the horizon: its rounds over the horizon
        rates = [float(t["round"].max() / max(t["time_s"].max(), horizon)) for t, _ in results]
        runs[fraction] = (rates, sum(int(t["round"].max()) for t, _ in results), cpu)
    (_, short_rounds, short_cpu), (rates, long_rounds, long_cpu) = (runs[f] for f in sorted(runs))
    return {"rates": rates, "run_rounds": long_rounds - short_rounds,
            "cpu_s": long_cpu - short_cpu}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default="paper")
    parser.add_argument("--experiments", default=None,
                        help="comma-separated experiment ids (default: every one with a horizon)")
    parser.add_argument("--fraction", type=float, default=0.1,
                        help="share of the horizon each measured run covers")
    parser.add_argument("--out", type=Path, default=UNIT_COSTS)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    params = load_params("params.yaml", {"profile": args.profile})
    wanted = set(args.experiments.split(",")) if args.experiments else None
    table = json.loads(args.out.read_text())
    section = table.setdefault("horizon_runs", {})
    for experiment in active_experiments(params):
        block = experiment.params(params)
        if not block["scale"].get("horizon_s") or (wanted and experiment.id not in wanted):
            continue
        fractions = (args.fraction / 4, args.fraction)
        entry = {}
        for curve in block["curves"]:
            declared = measure(params, experiment, block, curve, [{}], fractions,
                               block.get("tuning", {}).get("selection_trials", 3))
            row = {"rounds_per_s": sum(declared["rates"]) / len(declared["rates"])}
            run_rounds, cpu = declared["run_rounds"], declared["cpu_s"]
            grid = param_search.grid_of(block, curve)
            if grid is not None:
                searched = measure(params, experiment, block, curve,
                                   param_search.candidates(grid), fractions)
                row["grid_rounds_per_s"] = sum(searched["rates"]) / len(searched["rates"])
                run_rounds += searched["run_rounds"]
                cpu += searched["cpu_s"]
            row["run_round_s"] = cpu / run_rounds
            entry[curve] = row
            print(f"{args.profile} {experiment.id} {curve}: "
                  + ", ".join(f"{k} {v:.4g}" for k, v in row.items()), flush=True)
        section[f"{args.profile}/{experiment.id}"] = entry
    section["measured"] = {**machine(), "fraction_of_horizon": args.fraction,
                           "method": "benchmarks/horizon_rounds.py"}
    write_table(args.out, table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
