"""Benchmark: the lockstep's full-batch softmax gradients of J models on Biased FL's clients,
one bmm over the clients on all 784 pixels (`SoftmaxRegression.grads_many`, the path before)
vs client by client on each client's non-zero pixels (`grads_rows`), every row or a random
60 % of the rows (a digital baseline reading K of N uploads, `Scheme.read_rows`); issue 11,
"Scale and speed".

Paper shapes: MNIST, 100 images of each class, device m owns class m (spec 7; pixels / 255, as
the pipeline's loader gives them), softmax regression with mu = 0.01, d = 7850; J in 4, 12, 32
(lockstep.MAX_BATCH), 48, 64 models. CPU time (`time.process_time`), best of `--repeats` means
over `--steps` calls, one thread. Also checks that each path's rows agree with the per-model
gradients (`client_gradients`) to float32 reassociation.

    OMP_NUM_THREADS=1 AIRFL_DATA_MIRROR=... python benchmarks/client_gradients.py [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np
import torch

from airfl.core.engine import ClientData, client_gradients, full_batches, gather
from airfl.data import load_dataset
from airfl.data.partitioners import make_partition
from airfl.models import SoftmaxRegression


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
    columns = [int(c.numel()) for c in model._client_columns(batch.x)[0]]
    generator = torch.Generator().manual_seed(0)
    out = {"nonzero_pixels_per_client": columns, "ms_cpu_per_model_and_step": {}}
    for j in args.models:
        params = torch.randn(j, model.dim, generator=generator) * 0.01
        rows = torch.rand(j, 10, generator=generator) < 0.6
        stacked = params.unsqueeze(1).expand(-1, 10, -1)
        many = model.grads_many(stacked, batch.x, batch.y, batch.weights)
        every = model.grads_rows(params, batch.x, batch.y, batch.weights)
        some = model.grads_rows(params, batch.x, batch.y, batch.weights, rows)
        reference = torch.stack([client_gradients(model, p, data, batch)[1] for p in params])

        def relative(got):
            return float(((got - reference).abs() / (reference.abs() + 1e-6)).amax())

        agree = max(relative(many), relative(every),
                    relative(torch.where(rows.unsqueeze(-1), some, reference)))
        assert bool((some[~rows] == 0).all())                  # rows not read are 0
        timing = {
            "grads_many (all rows, 784 pixels)": cpu_ms(
                lambda: model.grads_many(stacked, batch.x, batch.y, batch.weights),
                args.steps, args.repeats) / j,
            "grads_rows (all rows)": cpu_ms(
                lambda: model.grads_rows(params, batch.x, batch.y, batch.weights),
                args.steps, args.repeats) / j,
            "grads_rows (60 % of rows)": cpu_ms(
                lambda: model.grads_rows(params, batch.x, batch.y, batch.weights, rows),
                args.steps, args.repeats) / j,
        }
        timing = {k: round(v, 4) for k, v in timing.items()}
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
