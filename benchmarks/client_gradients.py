"""Benchmark: the lockstep's full-batch softmax gradients of J models on Biased FL's clients,
`client_gradients_many` on every row and on a random 60 % of the rows (a digital baseline that
reads K of N uploads, `Scheme.read_rows`), against one model at a time (`client_gradients`).

Paper shapes: MNIST, 100 images of each class, device m owns class m (Sec. V; pixels / 255, as
the pipeline's loader gives them), softmax regression with mu = 0.01, d = 7850; J in 4, 12, 32
(lockstep.MAX_BATCH), 48, 64 models. CPU time (`time.process_time`), best of `--repeats` means
over `--steps` calls, one thread. Each path's rows are checked against the per-model gradients.
To compare with an older tree (before `SoftmaxRegression.grads_rows`: one bmm over the clients
on all 784 pixels, no `rows` argument), run this file with PYTHONPATH at that tree's src; the
60 % case is then reported as absent.

    OMP_NUM_THREADS=1 AIRFL_DATA_MIRROR=... python benchmarks/client_gradients.py [--json OUT]
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import time

import numpy as np
import torch

from airfl.core.engine import (ClientData, client_gradients, client_gradients_many,
                               full_batches, gather)
from airfl.data import load_dataset
from airfl.data.partitioners import make_partition
from airfl.models.flat import SoftmaxRegression


def paper_clients(root: str) -> ClientData:
    x, y = load_dataset("mnist", root, "train")
    partition = make_partition("per_class_one_class", y, 10, np.random.default_rng(0),
                               per_class=100)
    index = np.concatenate(partition.indices)
    sizes = torch.tensor([len(i) for i in partition.indices])
    inputs = torch.as_tensor(np.asarray(x[index]).reshape(len(index), -1) / 255.0,
                             dtype=torch.float32)
    offsets = torch.cat([torch.zeros(1, dtype=torch.long), torch.cumsum(sizes, 0)])
    return ClientData(inputs, torch.as_tensor(np.asarray(y[index]), dtype=torch.long),
                      torch.arange(len(index)), offsets, sizes)


def cpu_ms(call, steps: int, repeats: int) -> float:
    call()
    best = float("inf")
    for _ in range(repeats):
        start = time.process_time()
        for _ in range(steps):
            call()
        best = min(best, (time.process_time() - start) / steps * 1e3)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, nargs="+", default=[4, 12, 32, 48, 64])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    torch.set_num_threads(1)
    data = paper_clients(os.environ.get("AIRFL_DATA_MIRROR", "data"))
    batch = gather(data, full_batches(data))
    model = SoftmaxRegression(784, 10, l2=0.01)
    generator = torch.Generator().manual_seed(0)
    out = {"tree_has_rows": "rows" in inspect.signature(client_gradients_many).parameters,
           "ms_cpu_per_model_and_step": {}}
    for j in args.models:
        params = torch.randn(j, model.dim, generator=generator) * 0.01
        rows = torch.rand(j, 10, generator=generator) < 0.6
        reference = torch.stack([client_gradients(model, p, data, batch)[1] for p in params])

        def relative(got):
            return float(((got - reference).abs() / (reference.abs() + 1e-6)).amax())

        calls = {"one model at a time": lambda: torch.stack(
                     [client_gradients(model, p, data, batch)[1] for p in params]),
                 "client_gradients_many, all rows": lambda: client_gradients_many(
                     model, params, batch)}
        agree = relative(calls["client_gradients_many, all rows"]())
        if out["tree_has_rows"]:
            some = client_gradients_many(model, params, batch, rows)
            assert bool((some[~rows] == 0).all())              # rows not read are 0
            agree = max(agree, relative(torch.where(rows.unsqueeze(-1), some, reference)))
            calls["client_gradients_many, 60 % of rows"] = lambda: client_gradients_many(
                model, params, batch, rows)
        timing = {name: round(cpu_ms(call, args.steps, args.repeats) / j, 4)
                  for name, call in calls.items()}
        timing["max_relative_difference_to_per_model"] = agree
        out["ms_cpu_per_model_and_step"][j] = timing
        print(j, timing, flush=True)
    out["load_average"] = os.getloadavg()
    print(json.dumps(out))
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(out, handle, indent=1)


if __name__ == "__main__":
    main()
