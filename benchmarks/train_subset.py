"""Benchmark: what skipping the training-loss subset saves where no figure or claim reads it.

Usage (from the repository root)::

    OMP_NUM_THREADS=1 python benchmarks/train_subset.py [--rounds 2] [--json OUT]

Runs the real round loop (`airfl.core.loop.run_trial`) at LAPA's paper scale (params.yaml
`lapa`, paper profile; Sec. V-A): K = 15 devices of 2,200 samples (the mean local size), the
paper's CNN `cnn_mnist_bn` (q = 21,880), 10 local SGD steps of B = 220 per round, evaluated every
round on the 10,000-image test set, once with the 10,000-sample training subset
(`scale.train_eval_subset`: `train_loss`, `train_accuracy`) and once without it (no LAPA panel
or claim reads a training metric: `Experiment.measures_training`). Random MNIST-shaped inputs,
ideal FedAvg aggregation (LAPA's clipping and Gaussian noise act on [15, 21,880] per round, far
below the local steps), process CPU time on one thread, `--rounds` rounds plus round 0's
evaluation, the two runs interleaved `--repeats` times (median). It also checks that the two
runs' shared columns are equal bit for bit.

Then `airfl plan`'s costing of the LAPA paper profile's train jobs with and without the
subset (`train_cost.train_work`, per job x its trials, at workflow/unit_costs.json's units): the
core-hours the declaration saves over the whole profile.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import statistics
import time
from pathlib import Path

import torch
import yaml

from airfl.core.engine import ClientData
from airfl.core.loop import LocalWork, ServerStep, TrialSetup, run_trial
from airfl.core.scheme import ChannelStatistics
from airfl.models.flat import build_model

DEVICES, SIZE, STEPS, BATCH, LR = 15, 2200, 10, 220, 0.01
TEST, SUBSET = 10_000, 10_000


def _setup(rounds: int, subset: bool, gen: torch.Generator) -> TrialSetup:
    total = DEVICES * SIZE
    x = torch.rand(total, 1, 28, 28, generator=gen)
    y = torch.randint(0, 10, (total,), generator=gen)
    data = ClientData(x, y, torch.arange(total), torch.arange(0, total + 1, SIZE),
                      torch.full((DEVICES,), SIZE))
    test = (torch.rand(TEST, 1, 28, 28, generator=gen), torch.randint(0, 10, (TEST,), generator=gen))
    chosen = torch.randperm(total, generator=gen)[:SUBSET].sort().values
    stats = ChannelStatistics(torch.ones(DEVICES, dtype=torch.float64), 1.0, 1e6,
                              torch.ones(DEVICES))
    return TrialSetup("bench/train_subset", 0, 0, build_model("cnn_mnist_bn", (1, 28, 28), 10),
                      data, test, (x[chosen], y[chosen]) if subset else None, stats,
                      rounds=rounds, eval_every=1, local=LocalWork(STEPS, BATCH, LR),
                      server=ServerStep(1.0))


def plan_saving() -> dict[str, float]:
    """The LAPA paper profile's train jobs as `airfl plan` costs them: CPU seconds with the
    subset everywhere and as declared."""
    from airfl.pipeline import plan, train_cost
    from airfl.pipeline.params import validate_params
    from airfl.pipeline.registry import all_experiments

    raw = yaml.safe_load(Path("params.yaml").read_text())
    params = validate_params({**copy.deepcopy(raw), "profile": "paper"})
    units = plan.UnitCosts.load()
    every = declared = 0.0
    for experiment in all_experiments():
        if experiment.paper != "lapa" or not experiment.is_enabled(params):
            continue
        block = experiment.params(params)
        trials = block["scale"]["trials"]
        for name, curve in block["curves"].items():
            evaluation = experiment.evaluation(name, block["curves"])
            full = train_cost.train_work(experiment, block, curve, evaluation=evaluation)
            read = train_cost.train_work(experiment, block, curve, evaluation=evaluation,
                                   training_metrics=experiment.measures_training(
                                       name, block["curves"]))
            every += trials * full.eval_samples * units.eval_sample(full.model)
            declared += trials * read.eval_samples * units.eval_sample(read.model)
    return {"evaluation_core_h_with_subset": every / 3600,
            "evaluation_core_h_declared": declared / 3600,
            "saved_core_h": (every - declared) / 3600}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    torch.set_num_threads(1)
    from airfl.pipeline.registry import build_scheme

    ideal = build_scheme("ideal", {"scheme": "ideal_fedavg"})
    times: dict[str, list[float]] = {"with subset": [], "without subset": []}
    tables = {}
    run_trial(_setup(1, True, torch.Generator().manual_seed(0)), ideal, {}, progress=False)
    for _ in range(args.repeats):
        for key in times:
            setup = _setup(args.rounds, key == "with subset", torch.Generator().manual_seed(0))
            start = time.process_time()
            tables[key], _ = run_trial(setup, ideal, {}, progress=False)
            times[key].append(time.process_time() - start)
    shared = [c for c in tables["with subset"].columns if c in tables["without subset"]]
    identical = tables["with subset"][shared].equals(tables["without subset"][shared])
    run = {key: statistics.median(ts) for key, ts in times.items()}
    evaluations = args.rounds + 1                         # round 0 and every round
    saved = (run["with subset"] - run["without subset"]) / evaluations
    out = {"cpu": _cpu(), "clock": "cpu (time.process_time, one thread)",
           "load_average": os.getloadavg(), "rounds": args.rounds, "evaluations": evaluations,
           "repeats": times, "run_s": run,
           "ratio_with_to_without": run["with subset"] / run["without subset"],
           "saved_per_evaluation_s": saved,
           # against workflow/unit_costs.json's cnn_mnist_bn eval_sample_s
           "saved_per_subset_sample_s": saved / SUBSET,
           "shared_columns_identical": identical, "plan_lapa_paper": plan_saving()}
    print(json.dumps(out, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2) + "\n")


def _cpu() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "unknown"


if __name__ == "__main__":
    main()
