"""Benchmark: the compute of one paper-scale LAPA round.

Usage (from the repository root)::

    OMP_NUM_THREADS=1 python benchmarks/lapa_round.py [--repeats 3] [--clock cpu] [--json OUT]

Paper setting (params.yaml `lapa`, paper profile; Sec. V): K = 15 devices, the LAPA CNN
(`--model`: `cnn_mnist_bn`, the paper's with BatchNorm, q = 21,880, what the pipeline trains;
`cnn_mnist`, q = 21,840, the earlier runs'), `local_steps` = 10 SGD steps per round with mini-batches of
`batch_fraction` = 10 % of the mean local size (sizes 800-3,600, mean 2,200: B = 220), T = 200
rounds, evaluation every round on the 10,000-image test set (the 10,000-sample training-loss
subset is not evaluated: no LAPA panel or claim reads it, benchmarks/train_subset.py). Timed with one thread on random MNIST-shaped inputs, one warm-up excluded:

* local training: one round of all K devices (`airfl.core.engine.local_sgd`, the engine the
  pipeline picks: on CPU the loop engine in channels-last) for each precision (fp32: exact, the
  default, cnn_step.py's hand-written step; "fp32 autograd": the same engine with the autograd
  step; bf16: `precision: bf16`), and the naive per-client nn.Module loop of
  benchmarks/engine.py on the same batches for reference; interleaved, median of `--repeats`;
  the hand-written round's update against the autograd round's (largest difference over the
  largest update entry: summation order only);
* evaluation: one model snapshot on the 10,000 test samples (fp32, as the
  pipeline evaluates whatever the training precision).

The aggregation (clipping, two Gaussian draws and one weighted sum over [15, 21,840]) is not
timed: it reads and writes ~0.3 M numbers per round, O(K q), against the local steps' 15 x 10 x 220
samples x ~2.9 MFLOP (~95 GFLOP per round), so it is far below the timing noise. Results: seconds per round and per paper run (200 rounds, one curve).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

import torch

from airfl.core.engine import ClientData, evaluate_many, local_sgd
from airfl.models.flat import MnistCNN, build_model
from engine import load_flat, loop_round  # benchmarks/engine.py (same folder)
from ota_fd_round import cpu_model         # benchmarks/ota_fd_round.py (same folder)

DEVICES, STEPS, BATCH, ROUNDS, MEAN_SIZE, LR = 15, 10, 220, 200, 2200, 0.01
EVAL_SAMPLES = 10_000                   # the test set, every round


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                        help="cpu: the process's own CPU time (one thread; shared machine)")
    parser.add_argument("--json", default=None)
    parser.add_argument("--model", choices=("cnn_mnist_bn", "cnn_mnist"), default="cnn_mnist_bn")
    args = parser.parse_args()
    clock = time.process_time if args.clock == "cpu" else time.perf_counter
    torch.set_num_threads(1)
    gen = torch.Generator().manual_seed(0)
    total = DEVICES * MEAN_SIZE
    data = ClientData(torch.rand(total, 1, 28, 28, generator=gen),
                      torch.randint(0, 10, (total,), generator=gen), torch.arange(total),
                      torch.arange(0, total + 1, MEAN_SIZE), torch.full((DEVICES,), MEAN_SIZE))
    models = {p: build_model(args.model, (1, 28, 28), 10, precision=p)
              for p in ("fp32", "bf16")}
    models["fp32 autograd"] = build_model(args.model, (1, 28, 28), 10)
    models["fp32 autograd"].manual_step = False
    params = models["fp32"].init(torch.Generator().manual_seed(1))
    module = MnistCNN(batch_norm=args.model == "cnn_mnist_bn")
    load_flat(args.model, module, params)
    runs = {p: (lambda m=m: local_sgd(m, params, data, STEPS, BATCH, LR,
                                      torch.Generator().manual_seed(2)))
            for p, m in models.items()}
    runs["naive per-client loop"] = lambda: loop_round(args.model, module, data, STEPS, BATCH, 2)
    fused, autograd = runs["fp32"](), runs["fp32 autograd"]()
    update_gap = float((fused - autograd).abs().max() / autograd.abs().max())
    times: dict[str, list[float]] = {key: [] for key in runs}
    for fn in runs.values():                                  # warm-up
        fn()
    for _ in range(args.repeats):                             # interleaved repeats
        for key, fn in runs.items():
            start = clock()
            fn()
            times[key].append(clock() - start)
    test_x = torch.rand(EVAL_SAMPLES, 1, 28, 28, generator=gen)
    test_y = torch.randint(0, 10, (EVAL_SAMPLES,), generator=gen)
    evaluate_many(models["fp32"], params.unsqueeze(0), test_x, test_y)      # warm-up
    start = clock()
    evaluate_many(models["fp32"], params.unsqueeze(0), test_x, test_y)
    evaluation = clock() - start
    training = {key: statistics.median(ts) for key, ts in times.items()}
    out = {"model": args.model, "cpu": cpu_model(), "date": time.strftime("%Y-%m-%d"),
           "devices": DEVICES, "local_steps": STEPS, "batch": BATCH, "rounds": ROUNDS,
           "fused_vs_autograd_update_gap": update_gap,
           "speedup_fused_vs_autograd": statistics.median(
               a / f for a, f in zip(times["fp32 autograd"], times["fp32"])),
           "clock": args.clock, "load_average": os.getloadavg(), "training_repeats_s": times,
           "training_s": training, "evaluation_s": evaluation,
           "speedup_vs_naive": {key: statistics.median(
               n / v for n, v in zip(times["naive per-client loop"], ts))
               for key, ts in times.items()},
           "round_s": {key: t + evaluation for key, t in training.items()},
           "run_s": {key: ROUNDS * (t + evaluation) for key, t in training.items()}}
    print(json.dumps(out, indent=2))
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(out, handle, indent=2)


if __name__ == "__main__":
    main()
