"""Benchmark: one round of local training for all clients, batched engine vs. a per-client loop.

Usage (from the repository root)::

    OMP_NUM_THREADS=1 python benchmarks/engine.py [--clients 100] [--steps 1] [--batch 32]
        [--repeats 5] [--threads 1] [--models softmax,cnn_mnist] [--json OUT]

What is timed, per model, is one round of local training: every client runs `--steps` SGD steps
of batch `--batch` from the same global model, on MNIST-sized random inputs [N, B, 1, 28, 28]
(fixed seeds), and the round returns the updates w_m - w as an [N, d] tensor.

Implementations:

* ``batched/<engine>``: `airfl.core.engine.local_sgd` with the model from
  `airfl.models.build_model` (softmax: closed-form einsum gradient; CNNs: engine ``vmap`` and
  engine ``loop``, both reported; ``auto`` is ``loop`` on CPU).
* ``per-client nn.Module``: the way typical paper code does it. For each client,
  ``copy.deepcopy(global_module)``, ``torch.optim.SGD``, then per step ``zero_grad``, forward,
  ``cross_entropy``, ``backward``, ``step``; finally the client's ``parameters()`` are flattened
  into its update. Softmax uses ``nn.Linear(784, 10)``; CNNs use ``MnistCNN``/``FedAvgCNN`` from
  airfl.models.

Both implementations consume the same mini-batches: the per-client loop draws the round's batch
indices with `airfl.core.engine.sample_batches` from a generator with the same seed, in the same
order as `local_sgd`. Before timing, the updates of every implementation are compared on the
same initial parameters and batches (max abs diff printed; asserted < 1e-4 relative to the
largest update entry).

Timing: `time.perf_counter` around a whole round, one warm-up round excluded, median of
`--repeats` rounds.

FLOP count (analytic, multiply-add = 2 FLOPs, forward + backward = 3 x forward):

    FLOPs per round = 3 * 2 * MACs_per_sample * B * N * steps

with MACs_per_sample summed over the matmul/conv layers only (activations, pooling, softmax,
loss and the SGD update are ignored):

* Linear(i, o):               i * o                (softmax: 784 * 10 + 10 bias = 7,850 = 785 * 10)
* Conv2d(ci, co, k x k):      H_out * W_out * co * ci * k * k

  - cnn_mnist:  conv1 24*24*10*1*25 = 144,000; conv2 8*8*20*10*25 = 320,000;
                fc1 320*50 = 16,000; fc2 50*10 = 500               -> 480,500 MACs per sample
  - fedavg_cnn: conv1 24*24*32*1*25 = 460,800; conv2 8*8*64*32*25 = 3,276,800;
                fc1 1024*512 = 524,288; fc2 512*10 = 5,120          -> 4,267,008 MACs per sample

(The script derives these counts from the modules' layer shapes and prints them.) The "3 x
forward" convention counts the input-gradient of the first layer, which is not actually needed,
so it slightly overstates the work (for softmax the true backward is 1 x, i.e. 2 x forward in
total); it is the usual "model FLOPs" convention and is the same for all implementations, so the
ratios are exact. Achieved GFLOP/s = FLOPs per round / median round time.

Reference: the machine's float32 matmul throughput, a 2048 x 2048 @ 2048 x 2048 product
(2 * 2048^3 FLOPs) timed at the same thread count (median of repeats after a warm-up).

Threads: the script calls ``torch.set_num_threads(--threads)``. Set ``OMP_NUM_THREADS`` to the same
value in the environment (as in the usage line above) so OpenMP/BLAS pools also use that many;
on a busy 2-core machine more than one thread was measured to be much slower (ENVIRONMENT.md).

fedavg_cnn (d = 582,026) is optional: ``--models softmax,cnn_mnist,fedavg_cnn``. It runs with
``--fedavg-clients`` clients (default: the same as ``--clients``); with 100 clients it adds about
70 s on an idle 2-core machine (its vmap engine alone takes about 5.5 s per round), so pass
``--fedavg-clients 20`` for a quicker look on a loaded machine.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import platform
import statistics
import sys
import time
from datetime import datetime, timezone

import torch
from torch import nn

from airfl.core.engine import ClientData, local_sgd, sample_batches
from airfl.models import FedAvgCNN, MnistCNN, build_model

IMAGE_SHAPE = (1, 28, 28)
NUM_CLASSES = 10
LR = 0.05
DATA_SEED = 1234
INIT_SEED = 42
BATCH_SEED = 7
REL_TOL = 1e-4


# ----------------------------------------------------------------------------------- helpers

def make_data(num_clients: int, samples_per_client: int, seed: int = DATA_SEED) -> ClientData:
    """Random MNIST-sized data, `samples_per_client` contiguous samples per client."""
    g = torch.Generator().manual_seed(seed)
    total = num_clients * samples_per_client
    x = torch.rand(total, *IMAGE_SHAPE, generator=g)
    y = torch.randint(0, NUM_CLASSES, (total,), generator=g)
    sizes = torch.full((num_clients,), samples_per_client, dtype=torch.long)
    offsets = torch.arange(0, total + 1, samples_per_client, dtype=torch.long)
    return ClientData(x, y, torch.arange(total), offsets, sizes)


def reference_module(name: str) -> nn.Module:
    if name == "softmax":
        return nn.Linear(IMAGE_SHAPE[0] * IMAGE_SHAPE[1] * IMAGE_SHAPE[2], NUM_CLASSES)
    if name == "cnn_mnist":
        return MnistCNN(IMAGE_SHAPE[0], NUM_CLASSES, IMAGE_SHAPE[1])
    if name == "fedavg_cnn":
        return FedAvgCNN(IMAGE_SHAPE[0], NUM_CLASSES, IMAGE_SHAPE[1])
    raise ValueError(f"unknown model {name!r}")


def load_flat(name: str, module: nn.Module, flat: torch.Tensor) -> None:
    """Copy the engine's flat parameter vector into `module` (in place)."""
    with torch.no_grad():
        if name == "softmax":  # engine layout: class-major blocks [w_c (784), b_c]
            w = flat.view(NUM_CLASSES, -1)
            module.weight.copy_(w[:, :-1])
            module.bias.copy_(w[:, -1])
        else:                  # engine layout = named_parameters() order
            torch.nn.utils.vector_to_parameters(flat, module.parameters())


def module_flat(name: str, module: nn.Module) -> torch.Tensor:
    """The module's parameters() flattened into the engine's layout."""
    if name == "softmax":
        return torch.cat([module.weight, module.bias.unsqueeze(1)], dim=1).reshape(-1)
    return torch.nn.utils.parameters_to_vector(module.parameters())


def macs_per_sample(module: nn.Module) -> tuple[int, list[tuple[str, int]]]:
    """Multiply-adds per sample of the Linear/Conv2d layers, from one forward pass's shapes."""
    rows: list[tuple[str, int]] = []
    hooks = []

    def hook(name):
        def record(mod, inputs, output):
            if isinstance(mod, nn.Conv2d):
                k = mod.kernel_size[0] * mod.kernel_size[1]
                per_out = (mod.in_channels // mod.groups) * k
                rows.append((name, output[0].numel() * per_out))
            else:  # nn.Linear
                rows.append((name, mod.in_features * mod.out_features))
        return record

    if isinstance(module, nn.Linear):
        rows.append(("linear", (module.in_features + 1) * module.out_features))  # incl. bias
        return sum(r[1] for r in rows), rows
    for name, mod in module.named_modules():
        if isinstance(mod, (nn.Conv2d, nn.Linear)):
            hooks.append(mod.register_forward_hook(hook(name)))
    with torch.no_grad():
        module(torch.zeros(1, *IMAGE_SHAPE))
    for h in hooks:
        h.remove()
    return sum(r[1] for r in rows), rows


# ---------------------------------------------------------------------- the two implementations

def batched_round(model, global_params, data, steps, batch, seed):
    return local_sgd(model, global_params, data, steps, batch, LR,
                     torch.Generator().manual_seed(seed))


def loop_round(name, global_module, data, steps, batch, seed):
    """Per-client Python loop over nn.Module copies (typical paper code)."""
    generator = torch.Generator().manual_seed(seed)
    # same draws, same order as local_sgd: step 0 for all clients, then step 1, ...
    indices = [sample_batches(data, batch, generator)[0] for _ in range(steps)]
    global_flat = module_flat(name, global_module).detach()
    updates = []
    for n in range(data.num_clients):
        local = copy.deepcopy(global_module)
        optimizer = torch.optim.SGD(local.parameters(), lr=LR)
        for s in range(steps):
            idx = indices[s][n]
            xb, yb = data.x[idx], data.y[idx]
            if name == "softmax":
                xb = xb.flatten(1)
            optimizer.zero_grad()
            out = local(xb)
            loss = nn.functional.cross_entropy(out, yb)
            loss.backward()
            optimizer.step()
        updates.append(module_flat(name, local).detach() - global_flat)
    return torch.stack(updates)


# ------------------------------------------------------------------------------------- timing

def median_time(fn, repeats: int) -> tuple[float, list[float]]:
    fn()  # warm-up, excluded
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), times


def matmul_gflops(repeats: int, n: int = 2048) -> tuple[float, float]:
    g = torch.Generator().manual_seed(0)
    a = torch.randn(n, n, generator=g)
    b = torch.randn(n, n, generator=g)
    t, _ = median_time(lambda: a @ b, repeats)
    return 2 * n ** 3 / t / 1e9, t


# --------------------------------------------------------------------------------------- main

def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def bench_model(name: str, clients: int, args) -> dict:
    data = make_data(clients, samples_per_client=max(2 * args.batch, 64))
    engines = ["batched"] if name == "softmax" else ["vmap", "loop"]
    models = {e: build_model(name, IMAGE_SHAPE, NUM_CLASSES, 0.0,
                             engine="auto" if e == "batched" else e) for e in engines}
    any_model = next(iter(models.values()))
    global_params = any_model.init(torch.Generator().manual_seed(INIT_SEED))
    if name == "softmax":  # zeros by default; use a random start so the check is not trivial
        global_params = 0.01 * torch.randn(any_model.dim, generator=torch.Generator().manual_seed(INIT_SEED))
    global_module = reference_module(name)
    load_flat(name, global_module, global_params)
    assert torch.equal(module_flat(name, global_module).detach(), global_params)
    macs, layers = macs_per_sample(global_module)
    flops = 3 * 2 * macs * args.batch * clients * args.steps

    impls = {f"batched/{e}" if e != "batched" else "batched/einsum":
             (lambda m=models[e]: batched_round(m, global_params, data, args.steps, args.batch,
                                                BATCH_SEED)) for e in engines}
    impls["per-client nn.Module"] = lambda: loop_round(name, global_module, data, args.steps,
                                                      args.batch, BATCH_SEED)

    # numerical check before timing: same initial parameters, same batches
    reference = impls["per-client nn.Module"]()
    scale = float(reference.abs().max())
    check = {}
    for key, fn in impls.items():
        if key == "per-client nn.Module":
            continue
        diff = float((fn() - reference).abs().max())
        check[key] = diff
        print(f"  check {name:10s} {key:16s} vs per-client loop: max|diff| = {diff:.3e} "
              f"(max|update| = {scale:.3e}, rel {diff / scale:.2e})", flush=True)
        assert diff <= REL_TOL * scale, f"{name}/{key}: updates differ ({diff} > {REL_TOL}*{scale})"

    results = {}
    for key, fn in impls.items():
        t, times = median_time(fn, args.repeats)
        results[key] = {"median_s": t, "times_s": times, "gflops": flops / t / 1e9}
        print(f"  timed {name:10s} {key:22s} median {t * 1e3:9.1f} ms", flush=True)
    loop_t = results["per-client nn.Module"]["median_s"]
    for key, r in results.items():
        r["speedup_vs_loop"] = loop_t / r["median_s"]
    return {"model": name, "clients": clients, "dim": any_model.dim, "macs_per_sample": macs,
            "layers_macs": layers, "flops_per_round": flops, "max_abs_diff": check,
            "max_abs_update": scale, "results": results}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--clients", type=int, default=100)
    p.add_argument("--fedavg-clients", type=int, default=None,
                   help="clients for fedavg_cnn (default: --clients; 20 is quicker on 2 cores)")
    p.add_argument("--steps", type=int, default=1, help="local SGD steps per round")
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--models", default="softmax,cnn_mnist",
                   help="comma-separated subset of softmax,cnn_mnist,fedavg_cnn")
    p.add_argument("--json", default=None, help="write the results as JSON to this file")
    args = p.parse_args(argv)

    names = [m.strip() for m in args.models.split(",") if m.strip()]
    for m in names:
        if m not in ("softmax", "cnn_mnist", "fedavg_cnn"):
            p.error(f"unknown model {m!r}")
    torch.set_num_threads(args.threads)
    omp = os.environ.get("OMP_NUM_THREADS")
    if omp != str(args.threads):
        print(f"note: OMP_NUM_THREADS={omp!r}; set OMP_NUM_THREADS={args.threads} to match "
              f"--threads", file=sys.stderr)

    date = datetime.now(timezone.utc).isoformat(timespec="seconds")
    print(f"{date}  {cpu_model()}  ({os.cpu_count()} logical CPUs)")
    print(f"torch {torch.__version__}, threads {torch.get_num_threads()}, "
          f"OMP_NUM_THREADS={omp}, clients {args.clients}, steps {args.steps}, "
          f"batch {args.batch}, repeats {args.repeats}", flush=True)
    mm_gflops, mm_t = matmul_gflops(args.repeats)
    print(f"  matmul 2048^3 float32: {mm_t * 1e3:.1f} ms -> {mm_gflops:.1f} GFLOP/s", flush=True)

    reports = []
    for name in names:
        clients = args.clients
        if name == "fedavg_cnn" and args.fedavg_clients is not None:
            clients = args.fedavg_clients
        reports.append(bench_model(name, clients, args))

    header = (f"{'model':10s} {'N':>4s} {'d':>8s} {'implementation':22s} {'median ms':>10s} "
              f"{'GFLOP/s':>8s} {'speed-up':>9s} {'max|diff|':>10s}")
    lines = [header, "-" * len(header)]
    for rep in reports:
        for key, r in rep["results"].items():
            diff = rep["max_abs_diff"].get(key)
            lines.append(f"{rep['model']:10s} {rep['clients']:4d} {rep['dim']:8d} {key:22s} "
                         f"{r['median_s'] * 1e3:10.1f} {r['gflops']:8.2f} "
                         f"{r['speedup_vs_loop']:8.2f}x "
                         f"{'ref' if diff is None else f'{diff:.1e}':>10s}")
    lines.append(f"matmul 2048x2048 float32, {args.threads} thread(s): {mm_gflops:.1f} GFLOP/s "
                 f"({mm_t * 1e3:.1f} ms)")
    lines.append("speed-up = per-client nn.Module time / implementation time; "
                 "GFLOP/s = 6 * MACs/sample * B * N * steps / time")
    print()
    print("\n".join(lines))

    if args.json:
        out = {"date": date, "torch": torch.__version__, "python": platform.python_version(),
               "cpu": cpu_model(), "cpu_count": os.cpu_count(), "threads": args.threads,
               "omp_num_threads": omp, "clients": args.clients,
               "fedavg_clients": args.fedavg_clients, "steps": args.steps, "batch": args.batch,
               "repeats": args.repeats, "lr": LR, "matmul_gflops": mm_gflops,
               "matmul_s": mm_t, "models": reports, "table": lines}
        with open(args.json, "w") as f:
            json.dump(out, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
