"""Benchmark: one round of local training of all clients, every engine variant vs. a client loop.

Usage (from the repository root)::

    OMP_NUM_THREADS=1 python benchmarks/engine.py [--models softmax,mlp32,cnn_mnist,
        fedavg_cnn,resnet18_gn] [--batch cnn_mnist=50,fedavg_cnn=10] [--clients
        cnn_mnist=100,fedavg_cnn=45] [--steps 1] [--repeats 7] [--threads 1] [--clock cpu]
        [--json OUT]

What is timed, per model, is one round of local training: every client runs `--steps` SGD steps
of its model's batch size from the same global model, on MNIST-sized random inputs
[N, B, 1, 28, 28] (fixed seeds), and the round returns the updates w_m - w as an [N, d] tensor.
Default batch sizes and client counts are the papers': softmax B = 32 (the baselines figure),
mlp32 B = 10 with 20 devices (DP as a perk, quick), cnn_mnist B = 50 with 100 clients (CDPB's
offline substitute, paper profile), fedavg_cnn B = 10 with the K = 45 active devices of DP as a
perk (paper profile), resnet18_gn B = 50 (CDPB paper profile) on [3, 32, 32] inputs with only
N = 2 clients (every variant loops over clients, so N scales all of them alike).

With ``--papers cdpb,dp_perk,lapa,ota_fd --trials J`` it times instead one round of J runs of
each paper's CNN at its paper-profile size (clients, local steps Q, batch: `PAPER_ROUNDS`),
each run from its own global model and batch stream: the per-client nn.Module loop over every
run's clients, the engine one run after the other (`local_sgd`; on CPU what the train stage
runs for every CNN but FedAvgCNN) and the runs' clients stepped together (`local_sgd_many`:
trial x client rows, what `airfl.core.lockstep` runs where `trial_batching` picks it); the
trial-batched updates must equal the one-by-one ones bit for bit.

Implementations (all in one run, interleaved: each repeat times every variant once, in turn):

* ``per-client nn.Module`` (the reference, 1.00x): what typical paper code does. For each client,
  ``copy.deepcopy(global_module)``, ``torch.optim.SGD``, then per step ``zero_grad``, forward,
  ``cross_entropy``, ``backward``, ``step``; finally the client's ``parameters()`` are flattened
  into its update. Softmax uses ``nn.Linear(784, 10)``; CNNs ``MnistCNN``/``FedAvgCNN`` (NCHW).
* ``batched/einsum`` (softmax, mlp32): `airfl.core.engine.local_sgd` with the closed-form
  gradients (one bmm per layer for all clients).
* ``vmap fp32`` (CNNs): torch.func vmap over clients, i.e. one grouped convolution with
  groups = N per layer (the grouped-convolution variant; `auto` picks it on CUDA only, and a
  configured `engine: vmap` stops on CPU, `models.check_engine`). Not timed for ResNet-18-GN.
* ``loop NCHW fp32 [N,d] grads``: the loop engine as it was before the channels-last layout (NCHW, every
  client's gradient written into an [N, d] buffer, then ``params.sub_(lr * grads)``).
* ``loop NCHW fp32``: the loop engine with the per-client in-place SGD step, NCHW.
* ``loop NHWC fp32`` (``autograd``): the same in channels-last; ``loop NHWC fp32 fused``: the
  small CNNs' hand-written backward with the SGD step fused in (`airfl.models.cnn_step`, what `auto`
  runs on CPU for them in fp32; ResNet-18-GN has no such step).
* ``loop NHWC bf16 autograd`` (``loop NCHW bf16`` for ResNet-18-GN): the autograd step under
  bfloat16 autocast (fp32 master weights and update), in the layout `auto` runs;
  ``loop NHWC bf16 fused``: cnn_step's hand-written step in bf16 with the update accumulated in
  fp32 (what ``precision: bf16`` runs on CPU for the small CNNs).

Every variant built on `local_sgd` fills the round's [N, d] buffer in huge pages
(`airfl.core.memory`; bit-identical).

Column ``offered``: whether a configuration can run the variant on CPU (what `engine: auto |
loop` with `precision: fp32 | bf16` builds there); the others are reference variants (vmap, the
engine before the channels-last layout, the layout auto does not pick). The table's last lines name every offered
variant slower than the naive loop ("none" is the target).

Before timing, every variant's update of one local step is compared with the reference's on
the same initial parameters and mini-batches (``max|diff|``, relative to the largest update entry): fp32 variants
must agree to 1e-4 (summation order only), bf16 ones to 0.1 (a smoke check against wrong code:
bf16 keeps 8 significand bits, so single-step gradients differ by ~1e-2; whether bf16 training
is good enough is measured on the quick figures, benchmarks/README.md).

Timing: `time.perf_counter` (``--clock cpu``: `time.process_time`, the process's CPU time, for a
shared machine) around a whole round, one warm-up round per variant excluded; each
repeat runs every variant once (interleaved, so load changes hit all of them alike); reported:
the median round time, and the speed-up as the median over repeats of (reference time / variant
time) within the same repeat.

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
so it slightly overstates the work; it is the same for all implementations, so the ratios are
exact. Achieved GFLOP/s = FLOPs per round / median round time; ``% mm`` compares it with the
machine's matmul rate in the variant's arithmetic: a 2048 x 2048 @ 2048 x 2048 product (2 * 2048^3
FLOPs) in float32, and in bfloat16 for the bf16 variants, timed at the same thread count.

Threads: the script calls ``torch.set_num_threads(--threads)``. Set ``OMP_NUM_THREADS`` to the same
value in the environment (as in the usage line above) so OpenMP/BLAS pools also use that many;
on a busy 2-core machine more than one thread was measured to be much slower.
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

from airfl.core.engine import ClientData, local_sgd, local_sgd_many, sample_batches
from airfl.models.flat import FedAvgCNN, FlatModel, MnistCNN, ResNet18GN, build_model

IMAGE_SHAPE = (1, 28, 28)
IMAGE_SHAPES = {"resnet18_gn": (3, 32, 32)}     # CIFAR-sized; every other model MNIST-sized
NUM_CLASSES = 10
LR = 0.05
DATA_SEED = 1234
INIT_SEED = 42
BATCH_SEED = 7
REL_TOL = 1e-4
REL_TOL_BF16 = 0.1
DEFAULT_BATCH = {"softmax": 32, "mlp32": 10, "cnn_mnist": 50, "fedavg_cnn": 10,
                 "resnet18_gn": 50}
DEFAULT_CLIENTS = {"softmax": 100, "mlp32": 20, "cnn_mnist": 100, "fedavg_cnn": 45,
                   "resnet18_gn": 2}
FLAT_INPUT = ("softmax", "mlp32")               # models whose reference takes x.flatten(1)


def image_shape(name: str) -> tuple[int, int, int]:
    return IMAGE_SHAPES.get(name, IMAGE_SHAPE)


# ----------------------------------------------------------------------------------- helpers

def make_data(num_clients: int, samples_per_client: int, seed: int = DATA_SEED,
              shape: tuple[int, int, int] = IMAGE_SHAPE) -> ClientData:
    """Random images of `shape`, `samples_per_client` contiguous samples per client."""
    g = torch.Generator().manual_seed(seed)
    total = num_clients * samples_per_client
    x = torch.rand(total, *shape, generator=g)
    y = torch.randint(0, NUM_CLASSES, (total,), generator=g)
    sizes = torch.full((num_clients,), samples_per_client, dtype=torch.long)
    offsets = torch.arange(0, total + 1, samples_per_client, dtype=torch.long)
    return ClientData(x, y, torch.arange(total), offsets, sizes)


def reference_module(name: str) -> nn.Module:
    if name == "softmax":
        return nn.Linear(IMAGE_SHAPE[0] * IMAGE_SHAPE[1] * IMAGE_SHAPE[2], NUM_CLASSES)
    if name == "mlp32":      # TwoLayerMLP's layout: fc1.weight, fc1.bias, fc2.weight, fc2.bias
        return nn.Sequential(nn.Linear(IMAGE_SHAPE[0] * IMAGE_SHAPE[1] * IMAGE_SHAPE[2], 32),
                             nn.ReLU(), nn.Linear(32, NUM_CLASSES))
    if name == "cnn_mnist":
        return MnistCNN(IMAGE_SHAPE[0], NUM_CLASSES, IMAGE_SHAPE[1])
    if name == "cnn_mnist_k3":
        return MnistCNN(IMAGE_SHAPE[0], NUM_CLASSES, IMAGE_SHAPE[1], first_kernel=3)
    if name == "cnn_mnist_bn":
        return MnistCNN(IMAGE_SHAPE[0], NUM_CLASSES, IMAGE_SHAPE[1], batch_norm=True)
    if name == "fedavg_cnn":
        return FedAvgCNN(IMAGE_SHAPE[0], NUM_CLASSES, IMAGE_SHAPE[1])
    if name == "resnet18_gn":
        return ResNet18GN(IMAGE_SHAPES[name][0], NUM_CLASSES)
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


def macs_per_sample(module: nn.Module, shape: tuple[int, int, int] = IMAGE_SHAPE
                    ) -> tuple[int, list[tuple[str, int]]]:
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
        sample = torch.zeros(1, *shape)
        module(sample.flatten(1) if isinstance(module, nn.Sequential) else sample)
    for h in hooks:
        h.remove()
    return sum(r[1] for r in rows), rows


# ---------------------------------------------------------------------- the two implementations

def batched_round(model, global_params, data, steps, batch, seed):
    return local_sgd(model, global_params, data, steps, batch, LR,
                     torch.Generator().manual_seed(seed))


class GradientBuffer:
    """A model whose SGD step goes through an [N, d] gradient buffer (`FlatModel.sgd_step_`):
    the loop engine's step as it was before the per-client in-place update."""

    def __init__(self, model):
        self.model = model

    def __getattr__(self, name):
        return getattr(self.model, name)

    def sgd_step_(self, params, x, y, weights, lr):
        FlatModel.sgd_step_(self.model, params, x, y, weights, lr)


def engine_variants(name: str) -> dict[str, tuple[object, bool]]:
    """The batched implementations of one model, by the label the table prints, each with
    whether a configuration can pick it on CPU (`offered`: what `engine: auto | loop` with
    `precision: fp32 | bf16` builds there). The rest are reference variants: vmap, which
    `models.check_engine` refuses for the CNNs on CPU (measured slower than the naive loop),
    the loop engine as it was before the channels-last layout, and the other memory format."""
    shape = image_shape(name)
    if name in FLAT_INPUT:
        return {"batched/einsum": (build_model(name, shape, NUM_CLASSES), True)}
    variants = {}
    if name != "resnet18_gn":   # vmap ResNet-18-GN: 0.07x at N = 2, B = 4 (too slow to time here)
        variants["vmap fp32"] = (build_model(name, shape, NUM_CLASSES, engine="vmap"), False)
    old = build_model(name, shape, NUM_CLASSES, engine="loop")
    old.memory_format = "contiguous"
    variants["loop NCHW fp32 [N,d] grads"] = (GradientBuffer(old), False)
    auto = build_model(name, shape, NUM_CLASSES)
    auto_nhwc, fused = auto.channels_last_on_cpu, auto.block_order is not None
    for label, memory_format, precision, manual in (
            ("loop NCHW fp32", "contiguous", "fp32", False),
            ("loop NHWC fp32 autograd", "channels_last", "fp32", False),
            ("loop NHWC fp32 fused", "channels_last", "fp32", True),
            ("loop NCHW bf16", "contiguous", "bf16", False),
            ("loop NHWC bf16 autograd", "channels_last", "bf16", False),
            ("loop NHWC bf16 fused", "channels_last", "bf16", True)):
        nhwc = memory_format == "channels_last"
        if (precision == "bf16" and nhwc != auto_nhwc) or (manual and not fused):
            continue                        # bf16 only in the layout auto runs
        model = build_model(name, shape, NUM_CLASSES, engine="loop", precision=precision)
        model.memory_format, model.manual_step = memory_format, manual
        offered = nhwc == auto_nhwc and manual == fused
        variants[label.replace(" autograd", "") if not fused else label] = (model, offered)
    return variants


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
            if name in FLAT_INPUT:
                xb = xb.flatten(1)
            optimizer.zero_grad()
            out = local(xb)
            loss = nn.functional.cross_entropy(out, yb)
            loss.backward()
            optimizer.step()
        updates.append(module_flat(name, local).detach() - global_flat)
    return torch.stack(updates)


# ------------------------------------------------------------------------------------- timing

CLOCK = time.perf_counter      # --clock cpu: time.process_time


def median_time(fn, repeats: int) -> tuple[float, list[float]]:
    fn()  # warm-up, excluded
    times = []
    for _ in range(repeats):
        t0 = CLOCK()
        fn()
        times.append(CLOCK() - t0)
    return statistics.median(times), times


def interleaved_times(impls: dict, repeats: int) -> dict[str, list[float]]:
    """Each variant's times over `repeats`, interleaved: each repeat times every variant once,
    so that a slow spell of the machine falls on all of them alike."""
    times: dict[str, list[float]] = {key: [] for key in impls}
    for _ in range(repeats):
        for key, fn in impls.items():
            t0 = CLOCK()
            fn()
            times[key].append(CLOCK() - t0)
    return times


def matmul_gflops(repeats: int, n: int = 2048, dtype=torch.float32) -> tuple[float, float]:
    g = torch.Generator().manual_seed(0)
    a = torch.randn(n, n, generator=g).to(dtype)
    b = torch.randn(n, n, generator=g).to(dtype)
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


def bench_model(name: str, clients: int, batch: int, args, mm_rate: dict[str, float]) -> dict:
    data = make_data(clients, samples_per_client=max(2 * batch, 64), shape=image_shape(name))
    variants = engine_variants(name)
    any_model = next(iter(variants.values()))[0]
    global_params = any_model.init(torch.Generator().manual_seed(INIT_SEED))
    if name == "softmax":  # zeros by default; use a random start so the check is not trivial
        global_params = 0.01 * torch.randn(any_model.dim, generator=torch.Generator().manual_seed(INIT_SEED))
    global_module = reference_module(name)
    load_flat(name, global_module, global_params)
    assert torch.equal(module_flat(name, global_module).detach(), global_params)
    macs, layers = macs_per_sample(global_module, image_shape(name))
    flops = 3 * 2 * macs * batch * clients * args.steps

    reference_key = "per-client nn.Module"
    impls = {reference_key: lambda: loop_round(name, global_module, data, args.steps, batch,
                                               BATCH_SEED)}
    for key, (model, _) in variants.items():
        impls[key] = (lambda m=model: batched_round(m, global_params, data, args.steps, batch,
                                                    BATCH_SEED))

    # numerical check before timing: same initial parameters, same batches, ONE local step
    # (over several steps an activation or max-pool decision within rounding of a tie flips
    # in a few clients and their updates then differ by up to ~1e-3 of the largest entry:
    # with --steps 2, 2 of 100 cnn_mnist clients, the other 98 within 1.1e-6)
    reference = loop_round(name, global_module, data, 1, batch, BATCH_SEED)
    scale = float(reference.abs().max())
    check = {}
    for key, (model, _) in variants.items():
        diff = float((batched_round(model, global_params, data, 1, batch, BATCH_SEED)
                      - reference).abs().max())
        check[key] = diff
        tol = REL_TOL_BF16 if "bf16" in key else REL_TOL
        print(f"  check {name:10s} {key:28s} max|diff| = {diff:.3e} (max|update| = {scale:.3e}, "
              f"rel {diff / scale:.2e}, allowed {tol:g})", flush=True)
        assert diff <= tol * scale, f"{name}/{key}: updates differ ({diff} > {tol}*{scale})"

    for fn in impls.values():      # warm-up round of every variant, excluded
        fn()
    times = interleaved_times(impls, args.repeats)
    results = {}
    for key, ts in times.items():
        t = statistics.median(ts)
        ratio = statistics.median(r / v for r, v in zip(times[reference_key], ts))
        rate = flops / t / 1e9
        reference_rate = mm_rate["bf16" if "bf16" in key else "fp32"]
        offered = key == reference_key or variants[key][1]
        results[key] = {"median_s": t, "times_s": ts, "gflops": rate, "offered": offered,
                        "fraction_of_matmul": rate / reference_rate, "speedup_vs_loop": ratio}
        print(f"  timed {name:10s} {key:28s} median {t * 1e3:9.1f} ms  {ratio:5.2f}x", flush=True)
    return {"model": name, "clients": clients, "batch": batch, "dim": any_model.dim,
            "macs_per_sample": macs, "layers_macs": layers, "flops_per_round": flops,
            "max_abs_diff": check, "max_abs_update": scale, "results": results}


# papers' CNN rounds (paper profile, params.yaml): model, clients, local steps, batch
PAPER_ROUNDS = {
    "cdpb": ("cnn_mnist", 100, 10, 50),          # the offline substitute
    "dp_perk": ("fedavg_cnn", 45, 5, 10),        # steps mode (Q = 5), the K = 45 active devices
    "lapa": ("cnn_mnist_bn", 15, 10, 220),
    "ota_fd": ("cnn_mnist_k3", 10, 5, 64),       # FL training of X2's substitute sizes
}
TRIAL_VARIANTS = ("per-client nn.Module", "engine, runs one by one", "engine, trials batched")


def bench_trials(paper: str, trials: int, args) -> dict:
    """One round of `trials` runs of a paper's CNN (each its own global model and batch
    stream): the naive per-client loop over every run's clients, the engine one run after
    the other (`local_sgd`; on CPU what the train stage runs for every CNN but FedAvgCNN), and
    every run's clients in one step (`local_sgd_many`, trial x client rows). The batched
    updates must equal the one-by-one ones bit for bit; the engine is checked against the naive
    loop after one step (fp32: a row within 1e-4 of the largest update entry, in at least
    80 % of the rows: tie flips)."""
    name, clients, steps, batch = PAPER_ROUNDS[paper]
    data = make_data(clients, samples_per_client=max(2 * batch, 64), shape=image_shape(name))
    model = build_model(name, image_shape(name), NUM_CLASSES)
    starts = torch.stack([model.init(torch.Generator().manual_seed(INIT_SEED + j))
                          for j in range(trials)])
    modules = []
    for start in starts:
        module = reference_module(name)
        load_flat(name, module, start)
        modules.append(module)
    seeds = [BATCH_SEED + j for j in range(trials)]

    # each run's updates as a list, as the train stage keeps them (concatenated for the check
    # only: a copy of every run's [N, d] updates would be timed with the one-by-one variants)
    def naive(n_steps=steps):
        return [loop_round(name, m, data, n_steps, batch, s) for m, s in zip(modules, seeds)]

    def one_by_one(n_steps=steps):
        return [local_sgd(model, start, data, n_steps, batch, LR,
                          torch.Generator().manual_seed(s)) for start, s in zip(starts, seeds)]

    def batched(n_steps=steps):
        return local_sgd_many(model, starts, [data] * trials, n_steps, batch, LR,
                              [torch.Generator().manual_seed(s) for s in seeds])

    reference = torch.cat(naive(1))
    scale = float(reference.abs().max())
    alone, together = torch.cat(one_by_one(1)), batched(1)
    per_row = (alone - reference).abs().amax(dim=1)
    outside = int((per_row > REL_TOL * scale).sum())
    diff = float(per_row.median())
    # a ReLU / max-pool decision within rounding of a tie can flip in a client (LAPA's
    # BatchNorm CNN: 3 of 30 rows at ~1e-2 of the largest entry); most rows must agree
    assert outside <= 0.2 * len(per_row), f"{paper}: engine differs from the naive loop " \
        f"in {outside} of {len(per_row)} rows"
    assert torch.equal(together, alone), f"{paper}: trial-batched differs from one by one"
    assert torch.equal(batched(), torch.cat(one_by_one())), \
        f"{paper}: trial-batched differs ({steps} steps)"
    print(f"  check {paper:8s} {name}: engine vs naive, median row max|diff| {diff:.2e}, "
          f"{outside} of {len(per_row)} rows over {REL_TOL:g} x max|update| ({scale:.2e}); "
          "trial-batched == one by one, bit for bit", flush=True)
    impls = dict(zip(TRIAL_VARIANTS, (naive, one_by_one, batched)))
    times = interleaved_times(impls, args.repeats)     # (the warm-up was the check above)
    results = {}
    for key, ts in times.items():
        ratio = statistics.median(r / v for r, v in zip(times[TRIAL_VARIANTS[0]], ts))
        results[key] = {"median_s": statistics.median(ts), "times_s": ts,
                        "speedup_vs_loop": ratio}
        print(f"  timed {paper:8s} {key:26s} median {statistics.median(ts):8.3f} s  "
              f"{ratio:5.2f}x", flush=True)
    return {"paper": paper, "model": name, "clients": clients, "steps": steps, "batch": batch,
            "trials": trials, "dim": model.dim, "median_row_max_abs_diff": diff,
            "rows_outside_tolerance": outside, "results": results}


def trial_table(reports: list[dict], threads: int) -> list[str]:
    header = (f"{'paper':8s} {'model':13s} {'J x N':>8s} {'Q':>3s} {'B':>4s} {'threads':>7s} "
              + " ".join(f"{key:>26s}" for key in TRIAL_VARIANTS))
    lines = [header, "-" * len(header)]
    for rep in reports:
        timed = [rep["results"][k] for k in TRIAL_VARIANTS]
        cells = " ".join(f"{r['median_s']:8.3f} s {r['speedup_vs_loop']:5.2f}x".rjust(26)
                         for r in timed)
        runs = f"{rep['trials']:>3d} x {rep['clients']:<3d}"
        lines.append(f"{rep['paper']:8s} {rep['model']:13s} {runs} {rep['steps']:3d} "
                     f"{rep['batch']:4d} {threads:7d} {cells}")
    return lines


def per_model(text: str, default: dict[str, int]) -> dict[str, int]:
    """'cnn_mnist=50,fedavg_cnn=10' (or one number for every model) over the defaults."""
    out = dict(default)
    for part in filter(None, (p.strip() for p in text.split(","))):
        if "=" in part:
            key, value = part.split("=", 1)
            out[key.strip()] = int(value)
        else:
            out = {key: int(part) for key in out}
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--clients", default="", help="N per model, e.g. cnn_mnist=100,fedavg_cnn=45")
    p.add_argument("--batch", default="", help="B per model, e.g. cnn_mnist=50,fedavg_cnn=10")
    p.add_argument("--steps", type=int, default=1, help="local SGD steps per round")
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--models", default=",".join(DEFAULT_BATCH),
                   help="comma-separated subset of " + ",".join(DEFAULT_BATCH))
    p.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                   help="wall: time.perf_counter; cpu: time.process_time, the process's own CPU "
                        "time (one thread), which leaves out the time other processes hold the "
                        "core on a shared machine")
    p.add_argument("--json", default=None, help="write the results as JSON to this file")
    p.add_argument("--papers", default="",
                   help="instead of --models: one round of --trials runs of these papers' CNNs "
                        "(" + ",".join(PAPER_ROUNDS) + ") at their paper-profile sizes, naive "
                        "loop vs the engine one run at a time vs trials batched")
    p.add_argument("--trials", type=int, default=2, help="runs per round with --papers")
    args = p.parse_args(argv)
    global CLOCK
    CLOCK = time.process_time if args.clock == "cpu" else time.perf_counter
    clients = per_model(args.clients, DEFAULT_CLIENTS)
    batches = per_model(args.batch, DEFAULT_BATCH)

    names = [m.strip() for m in args.models.split(",") if m.strip()]
    for m in names:
        if m not in DEFAULT_BATCH:
            p.error(f"unknown model {m!r}")
    torch.set_num_threads(args.threads)
    omp = os.environ.get("OMP_NUM_THREADS")
    if omp != str(args.threads):
        print(f"note: OMP_NUM_THREADS={omp!r}; set OMP_NUM_THREADS={args.threads} to match "
              f"--threads", file=sys.stderr)

    date = datetime.now(timezone.utc).isoformat(timespec="seconds")
    load = os.getloadavg()
    print(f"{date}  {cpu_model()}  ({os.cpu_count()} logical CPUs), load average "
          f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print(f"torch {torch.__version__}, threads {torch.get_num_threads()}, "
          f"OMP_NUM_THREADS={omp}, steps {args.steps}, repeats {args.repeats}, "
          f"clock {args.clock}", flush=True)
    mm = {}
    for label, dtype in (("fp32", torch.float32), ("bf16", torch.bfloat16)):
        mm[label], mm_t = matmul_gflops(args.repeats, dtype=dtype)
        print(f"  matmul 2048^3 {label}: {mm_t * 1e3:.1f} ms -> {mm[label]:.1f} GFLOP/s",
              flush=True)

    if args.papers:
        papers = [q.strip() for q in args.papers.split(",") if q.strip()]
        for paper in papers:
            if paper not in PAPER_ROUNDS:
                p.error(f"unknown paper {paper!r}; allowed: {', '.join(PAPER_ROUNDS)}")
        reports = [bench_trials(paper, args.trials, args) for paper in papers]
        load_end = os.getloadavg()
        lines = trial_table(reports, args.threads)
        lines.append(f"clock: {args.clock}; {args.repeats} repeats; load average at start "
                     f"{load[0]:.2f}, at end {load_end[0]:.2f}; speed-up = median over repeats "
                     "of (naive loop time / variant time); J x N = runs x clients, Q local "
                     "steps of batch B, fp32")
        print()
        print("\n".join(lines))
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"date": date, "torch": torch.__version__, "cpu": cpu_model(),
                           "cpu_count": os.cpu_count(), "threads": args.threads,
                           "omp_num_threads": omp, "load_average_start": load,
                           "load_average_end": load_end, "repeats": args.repeats,
                           "clock": args.clock, "lr": LR, "papers": reports,
                           "table": lines}, f, indent=2)
        return 0
    reports = [bench_model(name, clients[name], batches[name], args, mm) for name in names]
    load_end = os.getloadavg()

    header = (f"{'model':11s} {'N':>4s} {'B':>4s} {'d':>7s} {'implementation':28s} "
              f"{'median ms':>10s} {'GFLOP/s':>8s} {'% mm':>5s} {'speed-up':>9s} "
              f"{'max|diff|':>10s} offered")
    lines = [header, "-" * len(header)]
    for rep in reports:
        for key, r in rep["results"].items():
            diff = rep["max_abs_diff"].get(key)
            lines.append(f"{rep['model']:11s} {rep['clients']:4d} {rep['batch']:4d} "
                         f"{rep['dim']:7d} {key:28s} {r['median_s'] * 1e3:10.1f} "
                         f"{r['gflops']:8.2f} {100 * r['fraction_of_matmul']:5.1f} "
                         f"{r['speedup_vs_loop']:8.2f}x "
                         f"{'ref' if diff is None else f'{diff:.1e}':>10s} "
                         f"{'yes' if r['offered'] else 'no'}")
    slow = [f"{rep['model']}/{key} {r['speedup_vs_loop']:.2f}x" for rep in reports
            for key, r in rep["results"].items() if r["offered"] and r["speedup_vs_loop"] < 1.0]
    lines.append("offered engines slower than the naive loop: " + (", ".join(slow) or "none"))
    lines.append(f"clock: {args.clock}; matmul 2048x2048, {args.threads} thread(s): "
                 f"fp32 {mm['fp32']:.1f} GFLOP/s, "
                 f"bf16 {mm['bf16']:.1f} GFLOP/s; load average at start {load[0]:.2f}, "
                 f"at end {load_end[0]:.2f}")
    lines.append("speed-up = median over repeats of (per-client nn.Module time / variant time); "
                 "GFLOP/s = 6 * MACs/sample * B * N * steps / median time; % mm = of the matmul "
                 "rate in the variant's arithmetic")
    print()
    print("\n".join(lines))

    if args.json:
        out = {"date": date, "torch": torch.__version__, "python": platform.python_version(),
               "cpu": cpu_model(), "cpu_count": os.cpu_count(), "threads": args.threads,
               "omp_num_threads": omp, "load_average_start": load, "load_average_end": load_end,
               "steps": args.steps, "repeats": args.repeats, "clock": args.clock, "lr": LR,
               "matmul_gflops": mm,
               "models": reports, "table": lines}
        with open(args.json, "w") as f:
            json.dump(out, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
