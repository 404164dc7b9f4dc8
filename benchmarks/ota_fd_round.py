"""Benchmark: where a paper-scale OTA-FD round spends its time, and the round with its soft
labels read off the training forward against the separate soft-label forward.

Usage (from the repository root)::

    OMP_NUM_THREADS=1 python benchmarks/ota_fd_round.py [--repeats 3] [--rounds 4] \
        [--clock cpu] [--json OUT]

Paper setting of X4 (params.yaml `ota_fd`, paper profile; the most expensive curves): M = 10
WDs, each 1,110 samples of its dominant class and 10 of every other (1,200), OTA-FD's CNN
(`cnn_mnist_k3`, 21,680 parameters), FedSGD: one full-batch step a round with clipping (S = 5)
and the distillation term (gamma = 1), the proposed scheme (`otafd_prop`, eps = 0.05,
Theorem 1's inputs recorded as X4's fixed-T curves do), evaluation of the 10 WDs' models on the
10,000-image test set every 25 rounds. Random MNIST-shaped inputs, one thread, one warm-up
excluded. Timed, interleaved, median of `--repeats`:

* the parts of one round: the soft labels' forward (`soft_labels`, 256-row chunks, as the
  round ran it before), the training step (`local_step_`: forward, gradient, clipped update of
  every WD), the OTA aggregation (`OtaFdScheme.aggregate`: design applied, noise drawn), the
  shared-forward round (every WD's training forward, its soft labels from those logits, the
  gradients and updates: `shares_training_forward`), one evaluation (10 models, 10,000
  samples) and the run's design (`OtaFdScheme.design`, once a run);
* whole runs of `--rounds` rounds (`run_fd_trial`, evaluated at round 0 and the last) with the
  shared forward and with the separate soft-label forward: their CPU time per round (the
  rounds' Python overhead included) and their run tables compared (largest difference; equal
  bit for bit is the claim of `shares_training_forward`).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import time

import numpy as np
import torch

from airfl.core.engine import ClientData, evaluate_many, full_batches
from airfl.core.scheme import ChannelStatistics, DesignContext
from airfl.core.trial_setup import LocalWork, ServerStep, TrialSetup
from airfl.models.flat import build_model
from airfl.papers.ota_fd import distillation as fd
from airfl.papers.ota_fd.schemes import OtaFdScheme

M, K, DOMINANT, OTHERS, TEST = 10, 10, 1110, 10, 10_000
SCHEME = dict(power=1.0, snr_db=10.0, delta=1e-8, gamma=1.0, clip_S=5.0,
              sensitivity_mode="paper", an_mode="none", eps=0.05,
              theory={"L1": 2.0, "L2": 1.0})


def cpu_model() -> str:
    for line in subprocess.run(["lscpu"], capture_output=True, text=True).stdout.splitlines():
        if line.startswith("Model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor()


def paper_setup(rounds: int) -> TrialSetup:
    """X4's data shape: WD m holds 1,110 samples of class m and 10 of each other class."""
    gen = torch.Generator().manual_seed(0)
    per = DOMINANT + (K - 1) * OTHERS
    labels = []
    for m in range(M):
        labels += [m] * DOMINANT + [k for k in range(K) if k != m for _ in range(OTHERS)]
    y = torch.tensor(labels)
    n = M * per
    x = torch.rand(n, 1, 28, 28, generator=gen)
    sizes = torch.full((M,), per)
    offsets = torch.arange(0, n + 1, per)
    data = ClientData(x, y, torch.arange(n), offsets, sizes)
    stats = ChannelStatistics(path_gain=torch.ones(M, dtype=torch.float64), reference_gain=1.0,
                              bandwidth_hz=1.0, distances_m=torch.zeros(M, dtype=torch.float64))
    test = (torch.rand(TEST, 1, 28, 28, generator=gen), torch.randint(0, K, (TEST,), generator=gen))
    model = build_model("cnn_mnist_k3", (1, 28, 28), K, engine="loop")
    return TrialSetup("ota_fd/x4", 0, 0, model, data, test, None, stats, rounds, rounds,
                      LocalWork(1, 48, 1.0, full_batch=True), ServerStep(1.0))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=4, help="rounds of each whole run")
    parser.add_argument("--clock", choices=("wall", "cpu"), default="cpu",
                        help="cpu: the process's own CPU time (one thread; shared machine)")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    clock = time.process_time if args.clock == "cpu" else time.perf_counter
    torch.set_num_threads(1)
    setup = paper_setup(args.rounds)
    scheme = OtaFdScheme("otafd_prop", method="otafd_prop", **SCHEME)
    context = DesignContext(M, setup.model.dim, args.rounds, setup.data.sizes, setup.statistics)
    start = clock()
    design = scheme.design(context)
    design_s = clock() - start
    params = setup.model.init(torch.Generator().manual_seed(1)).repeat(M, 1)
    batch = full_batches(setup.data)
    counts = fd.class_counts(setup, K)
    targets = torch.softmax(torch.randn(K, K, generator=torch.Generator().manual_seed(2)), -1)

    from airfl.core.loop import draw_channel_power
    from airfl.core.scheme import RoundState
    from airfl.runtime.rng import RoundStreams

    def state():
        streams = RoundStreams(setup.seed, setup.experiment, setup.trial, 1)
        power = draw_channel_power(setup.statistics.path_gain, streams)
        return RoundState(1, power, setup.data.sizes, setup.statistics, streams,
                          extras={"class_counts": counts})

    q = fd.soft_labels(setup, params, K)

    def shared_round():
        p = params.clone()
        forwards = [fd._device_forward(setup, p, m, batch[0][m]) for m in range(M)]
        fd.soft_labels_from_logits(setup, [f[1] for f in forwards], K)
        grads = [fd._device_gradient(setup, m, *forwards[m], batch, targets, 1.0)
                 for m in range(M)]
        for m, (g, norm, _) in enumerate(grads):
            fd._clipped_step_(setup, p, m, g, norm, 1.0, 5.0)

    parts = {
        "soft labels (separate forward)": lambda: fd.soft_labels(setup, params, K),
        "training step (local_step_)": lambda: fd.local_step_(
            setup, params.clone(), batch, targets, gamma=1.0, lr=1.0, clip_S=5.0),
        "aggregation": lambda: scheme.aggregate(q.reshape(M, -1), state(), design),
        "shared-forward round (soft labels + step)": shared_round,
        "evaluation (10 models x 10,000)": lambda: evaluate_many(setup.model, params, *setup.test),
    }
    times: dict[str, list[float]] = {key: [] for key in parts}
    for fn in parts.values():                                   # warm-up
        fn()
    for _ in range(args.repeats):                               # interleaved repeats
        for key, fn in parts.items():
            start = clock()
            fn()
            times[key].append(clock() - start)
    part_s = {key: statistics.median(ts) for key, ts in times.items()}

    def whole_run(shared: bool):
        original = fd.shares_training_forward
        fd.shares_training_forward = (lambda s: original(s)) if shared else (lambda s: False)
        try:
            start = clock()
            table, records = fd.run_fd_trial(setup, scheme, design, False)
            return clock() - start, table, records
        finally:
            fd.shares_training_forward = original

    run_times: dict[str, list[float]] = {"shared forward": [], "separate forward": []}
    tables = {}
    for _ in range(args.repeats):
        for key, shared in (("shared forward", True), ("separate forward", False)):
            seconds, table, records = whole_run(shared)
            run_times[key].append(seconds)
            tables[key] = (table, records)
    a, b = tables["shared forward"][0], tables["separate forward"][0]
    numeric = a.select_dtypes("number").columns
    gap = float(np.nanmax(np.abs(a[numeric].to_numpy(float) - b[numeric].to_numpy(float))))
    run_s = {key: statistics.median(ts) for key, ts in run_times.items()}
    evaluations = 2 * part_s["evaluation (10 models x 10,000)"]
    per_round = {key: (s - evaluations) / args.rounds for key, s in run_s.items()}
    out = {
        "cpu": cpu_model(), "logical_cores": os.cpu_count(), "threads": 1,
        "date": time.strftime("%Y-%m-%d"), "torch": torch.__version__,
        "python": platform.python_version(), "load_average": os.getloadavg(),
        "clock": args.clock, "devices": M, "samples_per_device": DOMINANT + (K - 1) * OTHERS,
        "model": "cnn_mnist_k3", "repeats": args.repeats, "rounds": args.rounds,
        "design_s": design_s, "part_repeats_s": times, "part_s": part_s,
        "python_overhead_of_a_round_s": per_round["separate forward"] - (
            part_s["soft labels (separate forward)"] + part_s["training step (local_step_)"]
            + part_s["aggregation"]),
        "run_repeats_s": run_times, "run_s": run_s,
        "round_s_without_evaluation": per_round,
        "speedup_of_a_round": per_round["separate forward"] / per_round["shared forward"],
        "run_tables_identical": bool(a.equals(b)) and tables["shared forward"][1] == tables[
            "separate forward"][1],
        "run_table_largest_difference": gap,
    }
    print(json.dumps(out, indent=1))
    if args.json:
        with open(args.json + ".tmp", "w") as handle:
            json.dump(out, handle, indent=1)
        os.replace(args.json + ".tmp", args.json)


if __name__ == "__main__":
    main()
