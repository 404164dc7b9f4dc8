"""Benchmark: the chunk of test rows one evaluation (and one OTA-FD soft-label) forward takes.

Usage (from the repository root)::

    OMP_NUM_THREADS=1 python benchmarks/eval_chunks.py [--rows 4096] [--repeats 5] [--json OUT]

`airfl.core.engine.evaluate_many` runs E models over the evaluation rows in chunks; each
chunk's [chunk, E, C] logits are reduced (cross-entropy in float64, argmax). This script times it
at several chunk sizes for each paper's CNN at the number of models it evaluates together
(CDPB and DP as a perk: one snapshot; OTA-FD: its 10 devices' models; Biased FL's softmax
regression: a batch of 64 snapshots, as `core.loop.DeferredEvaluation` evaluates them), with one thread, the chunk
sizes interleaved and the median of `--repeats` CPU times taken, and checks that every chunk
size gives the same accuracy (exact: integer counts) and the loss up to float64 summation order
(the largest difference printed). LAPA's BatchNorm CNN is left out: its logits use the batch's
statistics, so its chunk (`eval_batch`) is part of the model, not a speed knob.

The soft labels of OTA-FD (`soft_labels`: each device's mean softmax per class over its local
samples) are timed the same way on the same rows (one device's samples), in chunks.

Ratios are only compared within one run (one machine, one load).
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import time

import torch

from airfl.core.engine import evaluate_many
from airfl.models.flat import build_model

MODELS = (("cdpb", "cnn_mnist", 1), ("dp_perk", "fedavg_cnn", 1), ("ota_fd", "cnn_mnist_k3", 10),
          ("biased_fl", "softmax", 64))
CHUNKS = (128, 256, 512, 1024, 4096)


def cpu_name() -> str:
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
        return next(line.split(":", 1)[1].strip() for line in out.splitlines()
                    if line.startswith("Model name"))
    except (OSError, subprocess.CalledProcessError, StopIteration):
        return platform.processor() or "unknown"


def soft_label_sums(model, params, x, y, num_classes: int, chunk: int) -> torch.Tensor:
    """sum over samples of class k of softmax(G(x)) [K, K] (OTA-FD's soft labels before the
    division by the class counts), the forward in chunks of `chunk` rows."""
    sums = torch.zeros(num_classes, num_classes, dtype=torch.float64)
    for start in range(0, x.shape[0], chunk):
        probs = torch.softmax(model.logits(params, x[start:start + chunk]), dim=-1).double()
        sums.index_add_(0, y[start:start + chunk], probs)
    return sums


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=4096)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    torch.set_num_threads(1)
    gen = torch.Generator().manual_seed(0)
    x = torch.rand(args.rows, 1, 28, 28, generator=gen)
    y = torch.randint(0, 10, (args.rows,), generator=gen)
    result = {"cpu": cpu_name(), "threads": 1, "rows": args.rows, "repeats": args.repeats,
              "evaluate_many": {}, "soft_labels": {}}
    for paper, name, n_models in MODELS:
        model = build_model(name, (1, 28, 28), 10, 0.0,
                            "loop" if name == "cnn_mnist_k3" else "auto", "fp32")
        params = torch.stack([model.init(torch.Generator().manual_seed(i))
                              for i in range(n_models)])
        times = {c: [] for c in CHUNKS}
        outputs = {}
        for _ in range(args.repeats):
            for chunk in CHUNKS:                     # interleaved: the same load for each size
                start = time.process_time()
                outputs[chunk] = evaluate_many(model, params, x, y, chunk=chunk)
                times[chunk].append(time.process_time() - start)
        ref_loss, ref_acc = outputs[4096]
        entry = {}
        for chunk in CHUNKS:
            loss, acc = outputs[chunk]
            entry[chunk] = {"seconds": statistics.median(times[chunk]),
                            "speedup_vs_4096": statistics.median(times[4096])
                            / statistics.median(times[chunk]),
                            "accuracy_equal": bool(torch.equal(acc, ref_acc)),
                            "loss_max_abs_diff": float((loss - ref_loss).abs().max())}
        result["evaluate_many"][f"{paper}:{name}:E={n_models}"] = entry
        if paper == "ota_fd":
            stimes = {c: [] for c in CHUNKS}
            sums = {}
            for _ in range(args.repeats):
                for chunk in CHUNKS:
                    start = time.process_time()
                    with torch.no_grad():
                        sums[chunk] = soft_label_sums(model, params[0], x, y, 10, chunk)
                    stimes[chunk].append(time.process_time() - start)
            result["soft_labels"][f"{paper}:{name}"] = {
                chunk: {"seconds": statistics.median(stimes[chunk]),
                        "speedup_vs_4096": statistics.median(stimes[4096])
                        / statistics.median(stimes[chunk]),
                        "max_abs_diff": float((sums[chunk] - sums[4096]).abs().max())}
                for chunk in CHUNKS}
    print(json.dumps(result, indent=1))
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(result, handle, indent=1)


if __name__ == "__main__":
    main()
