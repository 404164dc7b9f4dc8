"""Benchmark: draws per second of every registered privacy audit.

Usage (from the repository root)::

    OMP_NUM_THREADS=1 python benchmarks/audit.py [--scale 1.0] [--clock cpu|wall] [--json OUT]

For each (wing, mechanism) the registry lists, the first audited point of its factory (the quick
profile's params.yaml) is sampled in both neighbouring worlds with the stage's number of draws
times ``--scale``; the sampling is timed (``--clock cpu``: the process's CPU time, which leaves
out the time other processes hold the core on a shared machine), then the bound is computed and
timed separately. Draws per second count both worlds. The batched mechanisms (a linear release
with fixed roles, ``airfl.core.audit_draws.linear_draws``) and the one-call-a-draw ones
(random participation, fading and coins: ``loop_draws``) differ by orders of magnitude; OTA-FD's
draw sums T releases.
"""

from __future__ import annotations

import argparse
import json
import time

from airfl.pipeline.params import load_params
from airfl.pipeline.registry import wings
from airfl.privacy.audit import audit_threshold


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="times the quick draws")
    parser.add_argument("--clock", choices=("cpu", "wall"), default="cpu")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    clock = time.process_time if args.clock == "cpu" else time.perf_counter
    params = load_params("params.yaml", {})
    rows = []
    for wing in wings():
        for name in sorted(wing.audits):
            mechanism = wing.audit_factory(name)(params)[0]
            block = "draws" if mechanism.batched else "loop_draws"
            draws = int((mechanism.draws or params["audit"][block]["quick"]) * args.scale)
            start = clock()
            present = mechanism.sample("present", draws, 1)
            absent = mechanism.sample("absent", draws, 2)
            sampling = clock() - start
            start = clock()
            audit_threshold(present, absent, mechanism.delta)
            bound = clock() - start
            rows.append({"mechanism": f"{wing.name}/{mechanism.name}", "batched": mechanism.batched,
                         "draws": 2 * draws, "sampling_s": round(sampling, 3),
                         "draws_per_s": round(2 * draws / sampling), "bound_s": round(bound, 3)})
            print(f"{rows[-1]['mechanism']:40s} {'batched' if mechanism.batched else 'loop':8s}"
                  f" {2 * draws:>9d} draws  {sampling:7.2f} s  {2 * draws / sampling:>12,.0f}/s"
                  f"  bound {bound:5.2f} s", flush=True)
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(rows, handle, indent=1)


if __name__ == "__main__":
    main()
