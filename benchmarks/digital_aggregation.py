"""Benchmark: one round's aggregation of a lockstep group of Biased FL digital runs, per scheme:
CPU milliseconds per run and round.

Paper shapes: N = 10 devices at quantile radii of the Sec. V disc (E_s = 1e-9 J, N0 = -161 dBm/Hz,
B = 1 MHz), d = 7850 (softmax on MNIST), J = 32 runs (lockstep.MAX_BATCH) of 3 trials, as in a
tune job's group; float32 uploads; each scheme at its paper-profile default parameters.
Modes: "per run" calls each run's `aggregate` (the one-by-one path, and the lockstep path before
`aggregate_many`); "many" calls the class's `aggregate_many` for the J runs (absent before).
CPU time (`time.process_time`), the best of `--repeats`, so that a shared machine's load
changes it less than wall time. To compare with an older tree, run this file with PYTHONPATH at
that tree's src (benchmarks/README.md).

    OMP_NUM_THREADS=1 python benchmarks/digital_aggregation.py [--rounds 10] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np
import torch

import airfl
import airfl.schemes  # noqa: F401
from airfl.core.scheme import ChannelStatistics, DesignContext, RoundState, Scheme
from airfl.pipeline.registry import build_scheme
from airfl.runtime.rng import RoundStreams

N0, ES, B, D, N, J = 10.0 ** ((-161 - 30) / 10), 1e-9, 1e6, 7850, 10, 32
KINDS = {   # the paper profile's curve parameters (params.yaml, biased_fl/fig3b)
    "biased_digital": {},
    "best_channel": {"K": 5},
    "best_channel_norm": {"K": 5, "K_prime": 7},
    "proportional_fairness": {"K": 5, "T_PF_s": 0.5},
    "uqos": {"K": 5, "R": 0.2, "r_U": 8},
    "qml": {"K": 5, "eps0_rel": 0.01},
    "fedtoe": {"K": 5, "p_out": 0.1, "T_TOE_s": 0.5},
}


def _statistics() -> ChannelStatistics:
    radii = 1200.0 * np.sqrt((np.arange(1, N + 1) - 0.5) / N)          # Sec. V disc, quantile radii
    lam = torch.tensor(10.0 ** (-(50.0 + 22.0 * np.log10(radii)) / 10.0))
    return ChannelStatistics(lam, float(lam.min()), B, torch.as_tensor(radii),
                             energy_per_symbol=ES, noise_psd=N0)


def _state(stats, trial: int, t: int) -> RoundState:
    streams = RoundStreams(0, "bench/digital", trial, t)
    power = stats.path_gain * torch.empty(N, dtype=torch.float64).exponential_(
        generator=streams("channel"))
    return RoundState(t, power, torch.full((N,), 100), stats, streams)


def time_kind(kind: str, rounds: int, repeats: int) -> dict:
    stats = _statistics()
    scheme = build_scheme(kind, {"scheme": kind, **KINDS[kind]})
    design = scheme.design(DesignContext(N, D, 10, torch.full((N,), 100), stats, trial=0))
    updates = torch.randn(J, N, D, generator=torch.Generator().manual_seed(1)) * 0.05
    modes = {"per run": None}
    many = getattr(type(scheme), "aggregate_many", None)
    if many is not None and many.__func__ is not Scheme.aggregate_many.__func__:
        modes["many"] = many
    best = {}
    for _ in range(repeats):
        for mode, many in modes.items():
            start = time.process_time()
            for t in range(1, rounds + 1):
                states = [_state(stats, j % 3, t) for j in range(J)]
                if many is None:
                    [scheme.aggregate(updates[j], states[j], design) for j in range(J)]
                else:
                    many([scheme] * J, updates, states, [design] * J)
            ms = (time.process_time() - start) / (rounds * J) * 1e3
            best[mode] = round(min(best.get(mode, np.inf), ms), 3)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--kinds", nargs="+", default=list(KINDS))
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    torch.set_num_threads(1)
    out = {"tree": str(Path(airfl.__file__).resolve().parents[2].name), "ms_cpu_per_run_round": {}}
    for kind in args.kinds:
        out["ms_cpu_per_run_round"][kind] = time_kind(kind, args.rounds, args.repeats)
        print(kind, out["ms_cpu_per_run_round"][kind], flush=True)
    out["load_average"] = os.getloadavg()
    print(json.dumps(out))
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
