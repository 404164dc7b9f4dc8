"""How long the two tools take to say what is out of date.

Times, in a project folder, `snakemake -n` over the whole DAG, `dvc status` and `dvc repro
--dry` over every stage and `airfl dvc-yaml --check` (what the `dvc-dag` stage runs), each
`--repeats` times; prints the fastest wall time and the fastest CPU time of the command and its
children (on a shared machine CPU time leaves out the time other processes hold the cores), and
the load. Run it in a built, recorded tree (`make reproduce`, or a quick tree and `make
dvc-record`) for the no-op numbers; the first `dvc status` there fills DVC's hash cache
(`.dvc/tmp`), so take the minimum of several repeats.

    OMP_NUM_THREADS=1 python benchmarks/noop_status.py --repeats 3
    PYTHONPATH=<other checkout>/src python benchmarks/noop_status.py --root <other checkout>
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

BIN = Path(sys.executable).parent
COMMANDS = {
    "snakemake -n": [str(BIN / "snakemake"), "-n", "--cores", "1", "-q"],
    "dvc status": [str(BIN / "dvc"), "status", "-q"],
    "dvc repro --dry": [str(BIN / "dvc"), "repro", "--dry", "-q"],
    "airfl dvc-yaml --check": [str(BIN / "airfl"), "dvc-yaml", "--check"],
}


def timed(command: list[str], root: Path) -> tuple[float, float]:
    """(wall s, CPU s of the command and its children) of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(command, cwd=root, capture_output=True, text=True, check=False,
                   env={**os.environ, "DVC_NO_ANALYTICS": "1", "OMP_NUM_THREADS": "1"})
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", type=Path, default=Path.cwd())
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(f"{'command':<24} {'wall s (min)':>12} {'CPU s (min)':>12}   load {os.getloadavg()[0]:.1f}")
    for name, command in COMMANDS.items():
        runs = [timed(command, args.root) for _ in range(args.repeats)]
        print(f"{name:<24} {min(w for w, _ in runs):>12.1f} {min(c for _, c in runs):>12.1f}")


if __name__ == "__main__":
    main()
