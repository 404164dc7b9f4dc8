"""Benchmark: what one pipeline job costs before and besides its work (the quick DAG is ~340
mostly short jobs, so start-up decides much of CI's time).

Usage (from the repository root, after the quick profile has run once, so the curve's inputs
exist)::

    OMP_NUM_THREADS=1 python benchmarks/job_startup.py [--experiment dp_perk/fig3a]
        [--curve airfl_mimo_p1em07] [--repeats 5] [--json OUT]

Times, as the median wall-clock of `--repeats` fresh processes on an otherwise idle machine:

* `python -c pass` (the interpreter) and `python -c "import torch"` (the floor of every job
  that needs torch);
* `python -m airfl <stage> <experiment> <curve>` for the design, train and privacy stages of
  one curve (they rewrite that curve's outputs with identical bytes: the stages are
  deterministic, so `dvc status` stays clean).

Ratios are only taken between numbers of this one run.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time


def _median_wall(cmd: list[str], repeats: int) -> float:
    walls = []
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        walls.append(time.perf_counter() - start)
    return statistics.median(walls)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--experiment", default="dp_perk/fig3a")
    parser.add_argument("--curve", default="airfl_mimo_p1em07")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", help="also write the numbers to this file")
    args = parser.parse_args()
    py = sys.executable
    cases = {"python -c pass": [py, "-c", "pass"],
             "import torch": [py, "-c", "import torch"]}
    for stage in ("design", "train", "privacy"):
        cases[f"airfl {stage}"] = [py, "-m", "airfl", stage, args.experiment, args.curve]
    out = {name: _median_wall(cmd, args.repeats) for name, cmd in cases.items()}
    floor = out["import torch"]
    print(f"{args.experiment} {args.curve}, median of {args.repeats} processes")
    for name, wall in out.items():
        print(f"  {name:16s} {wall:6.2f} s   {wall / floor:5.2f} x import torch")
    if args.json:
        with open(args.json, "w") as handle:
            json.dump({"experiment": args.experiment, "curve": args.curve,
                       "repeats": args.repeats, "median_wall_s": out}, handle, indent=2)


if __name__ == "__main__":
    main()
