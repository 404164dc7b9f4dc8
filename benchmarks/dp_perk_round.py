"""Benchmark: where the time of one paper-scale DP-as-a-perk round goes (Sec. V).

Usage (from the repository root)::

    OMP_NUM_THREADS=1 python benchmarks/dp_perk_round.py [--steps 6] [--threads 1]
        [--precisions fp32,bf16] [--json OUT]

Paper setting (Sec. V-A): n = 50 devices, K = 45 active, m = 100 antennas, FedAvgCNN
(d = 582,026), batch 10; T = 50 rounds. Timed with one thread, real Fashion-MNIST-shaped random
inputs, one warm-up excluded:

* local training: `--steps` batched SGD steps of all K clients (airfl.core.engine.local_sgd, the
  engine the pipeline picks: on CPU the `loop` engine in channels-last), once per `--precisions`
  entry (fp32: exact, the default; bf16: `precision: bf16`), the precisions interleaved and the
  median of 3 repeats taken, extrapolated per round to the epochs mode (5 epochs x 120 batches
  = 600 steps, the default) and to the literal steps mode (Q = 5);
* beamforming: the trial's (P1) plan for all T rounds (ZF u = 1 and the phase-optimised ZF),
  plus the water-filling (per trial, i.e. per round / T);
* aggregation: one round of AirFL-DP on [K, d] updates (clip weights, GEMV, noise draw,
  transmit-power record) through the pipeline's scheme adapter path;
* evaluation: the full 10,000-image test set plus a 10,000-sample training-loss subset for one
  model snapshot (every round in the paper profile).

Results are printed as seconds and as shares of a round; ratios only compare parts measured in
this one run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

import torch

from airfl.core.engine import ClientData, evaluate_many, local_sgd
from airfl.models.flat import build_model
from airfl.papers.dp_perk.design import clip_threshold, design_airfl_dp
from airfl.papers.dp_perk.aggregation import airfl_dp
from airfl.papers.dp_perk.uplink import plan_uplink, trial_generators


CLOCK = time.perf_counter      # --clock cpu: time.process_time (shared machine)


def _timed(fn, repeats: int = 1) -> float:
    fn()                                                      # warm-up
    start = CLOCK()
    for _ in range(repeats):
        fn()
    return (CLOCK() - start) / repeats


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--precisions", default="fp32,bf16")
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                        help="cpu: the process's own CPU time (one thread; shared machine)")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    global CLOCK
    CLOCK = time.process_time if args.clock == "cpu" else time.perf_counter
    torch.set_num_threads(args.threads)
    n, k, m, rounds, batch, per_client = 50, 45, 100, 50, 10, 1200
    precisions = [p.strip() for p in args.precisions.split(",") if p.strip()]
    models = {p: build_model("fedavg_cnn", (1, 28, 28), 10, precision=p) for p in precisions}
    model = models["fp32"] if "fp32" in models else next(iter(models.values()))
    d = model.dim
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(k * per_client, 1, 28, 28, generator=gen)
    y = torch.randint(0, 10, (k * per_client,), generator=gen)
    sizes = torch.full((k,), per_client)
    offsets = torch.arange(0, (k + 1) * per_client, per_client)
    data = ClientData(x, y, torch.arange(k * per_client), offsets, sizes)
    params = model.init(torch.Generator().manual_seed(1))

    steps: dict[str, list[float]] = {p: [] for p in precisions}
    for p in precisions:                                      # warm-up
        local_sgd(models[p], params, data, 1, batch, 0.005, torch.Generator().manual_seed(2))
    for _ in range(3):                                        # interleaved repeats
        for p in precisions:
            start = CLOCK()
            local_sgd(models[p], params, data, args.steps, batch, 0.005,
                      torch.Generator().manual_seed(2))
            steps[p].append((CLOCK() - start) / args.steps)
    step_of = {p: statistics.median(ts) for p, ts in steps.items()}
    clip = clip_threshold(d)
    plans = {}
    for bf in ("zf", "zf_opt"):
        plans[bf] = _timed(lambda bf=bf: plan_uplink(n, 0.9, m, rounds, clip, d, 2e-3,
                                                     trial_generators(0, 0), beamformer=bf))
    plan = plan_uplink(n, 0.9, m, rounds, clip, d, 2e-3, trial_generators(0, 0))
    design = design_airfl_dp(plan.pi, eps_tilde=0.1, delta=1e-5, dim=d, clip=clip,
                             sample_ratio=0.9, sigma2=1e-13, power_w=2e-3)
    waterfill = _timed(lambda: design_airfl_dp(plan.pi, eps_tilde=0.1, delta=1e-5, dim=d,
                                               clip=clip, sample_ratio=0.9, sigma2=1e-13,
                                               power_w=2e-3))
    updates = torch.randn(k, d, generator=gen)
    aggregate = _timed(lambda: airfl_dp(updates, plan.round(0), design,
                                        torch.Generator().manual_seed(3)), repeats=5)
    test_x = torch.randn(10_000, 1, 28, 28, generator=gen)
    test_y = torch.randint(0, 10, (10_000,), generator=gen)
    evaluate = 2 * _timed(lambda: evaluate_many(model, params.unsqueeze(0), test_x, test_y))

    load = os.getloadavg()
    out = {"dim": d, "clients": k, "clock": args.clock, "load_average": load,
           "step_all_clients_s": step_of,
           "step_repeats_s": steps}
    for p, step in step_of.items():
        per_round = {"local_training_epochs": 600 * step, "local_training_steps": 5 * step,
                     "beamforming_zf": plans["zf"] / rounds, "beamforming_zf_opt":
                     plans["zf_opt"] / rounds, "waterfill": waterfill / rounds,
                     "aggregation": aggregate, "evaluation": evaluate}
        block = {"per_round_s": per_round}
        for mode in ("epochs", "steps"):
            total = per_round[f"local_training_{mode}"] + per_round["beamforming_zf"] + \
                per_round["waterfill"] + aggregate + evaluate
            block[f"round_{mode}_s"] = total
            block[f"run_{mode}_s"] = rounds * total
            block[f"share_{mode}"] = {"local_training": per_round[f"local_training_{mode}"] / total,
                                      "beamforming_zf": per_round["beamforming_zf"] / total,
                                      "aggregation": aggregate / total,
                                      "evaluation": evaluate / total}
        out[p] = block
    print(json.dumps(out, indent=2))
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(out, handle, indent=2)


if __name__ == "__main__":
    main()
