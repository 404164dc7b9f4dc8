"""Benchmark: QML's and FedTOE's exact per-round bit allocation, the Pareto programme against
:func:`~airfl.papers.biased_fl.bit_allocation.front_point`.

``record``: runs the design and train stages of some Biased FL curves (quick profile by default,
``--set`` overrides e.g. a paper-profile grid point) in a scratch folder whose inputs link to this
tree's results/ (data, partitions, reference: built first, e.g. by snakemake), and keeps the
arguments of ``keep`` evenly spaced ``qml_allocate`` / ``fedtoe_allocate`` calls (||g_k||_inf^2, the
seconds per bit, d, eps_0 or T_TOE, r_max) in a JSON file: real instances, recorded over the whole
run. ``time``: per recorded instance, the allocation as the programme computes it
(``pareto_bits`` on the same tables) and as the scheme now computes it (``qml_allocate`` /
``fedtoe_allocate``); checks they are equal; CPU microseconds per call (``time.process_time``,
the best of ``--repeats`` passes), per source and in total.

    OMP_NUM_THREADS=1 python benchmarks/bit_allocation.py record \\
        --runs biased_fl/fig3b_snr60:qml biased_fl/fig3b:fedtoe --out instances.json
    OMP_NUM_THREADS=1 python benchmarks/bit_allocation.py time instances.json [--json OUT]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import tempfile
import time
from pathlib import Path

import numpy as np

INPUTS = ("data", "partitions", "reference", "calibration", "derived", "tuning")


def record(runs: list[str], keep: int, params: str, overrides: list[str],
           label: str = "") -> list[dict]:
    """Instances of ``keep`` evenly spaced allocation calls of the train stage of each run."""
    import airfl.cli
    from airfl.papers.biased_fl.schemes import digital_baselines as dsb

    repo = Path.cwd()
    out: list[dict] = []
    for spec in runs:
        experiment, curve = spec.split(":")
        calls: list[dict] = []
        originals = {name: getattr(dsb, name) for name in ("qml_allocate", "fedtoe_allocate")}

        def wrap(name, fn):
            def recorder(sinf2, seconds_per_bit, dim, cap, r_max):
                calls.append({"run": spec + label, "call": len(calls), "kind": name.split("_")[0],
                              "sinf2": np.asarray(sinf2).tolist(),
                              "seconds_per_bit": np.asarray(seconds_per_bit).tolist(),
                              "dim": int(dim), "cap": float(cap), "r_max": int(r_max)})
                return fn(sinf2, seconds_per_bit, dim, cap, r_max)
            return recorder

        with tempfile.TemporaryDirectory() as scratch, contextlib.chdir(scratch):
            (Path(scratch) / "results").mkdir()
            (Path(scratch) / "data").symlink_to(repo / "data")         # data.root is relative
            for name in INPUTS:
                if (repo / "results" / name).exists():
                    (Path(scratch) / "results" / name).symlink_to(repo / "results" / name)
            for name, fn in originals.items():
                setattr(dsb, name, wrap(name, fn))
            try:
                argv = ["--params", str(repo / params)]
                for pair in overrides:
                    argv += ["--set", pair]
                rc = (airfl.cli.main(argv + ["design", experiment, curve])   # its own design:
                      or airfl.cli.main(argv + ["train", experiment, curve]))  # --set may change it
            finally:
                for name, fn in originals.items():
                    setattr(dsb, name, fn)
        if rc:
            raise SystemExit(f"train {experiment} {curve} failed ({rc})")
        chosen = np.unique(np.linspace(0, len(calls) - 1, min(keep, len(calls))).round().astype(int))
        out += [calls[i] for i in chosen]
        print(f"{spec}: {len(calls)} calls, kept {chosen.size}", flush=True)
    return out


def _old(inst: dict) -> np.ndarray:
    """The allocation as the Pareto programme gives it (the code before front_point)."""
    from airfl.papers.biased_fl.bit_allocation import allocation_tables, pareto_bits
    from airfl.papers.biased_fl.schemes.digital import HEADER

    sinf2, spb = np.asarray(inst["sinf2"]), np.asarray(inst["seconds_per_bit"])
    cost, var = allocation_tables(sinf2, spb, inst["dim"], inst["r_max"])
    if inst["kind"] == "qml":
        front = pareto_bits(cost, var, var_cap=sinf2.size * inst["cap"])
        return np.full(sinf2.size, inst["r_max"]) if front is None else front[2][0]
    front = pareto_bits(cost, var, cost_cap=inst["cap"] - HEADER * float(np.sum(spb)))
    return np.ones(sinf2.size, dtype=np.int64) if front is None else front[2][-1]


def _new(inst: dict) -> np.ndarray:
    from airfl.papers.biased_fl.schemes import digital_baselines as dsb

    fn = dsb.qml_allocate if inst["kind"] == "qml" else dsb.fedtoe_allocate
    return fn(np.asarray(inst["sinf2"]), np.asarray(inst["seconds_per_bit"]), inst["dim"],
              inst["cap"], inst["r_max"])[0]


def time_instances(instances: list[dict], repeats: int) -> dict:
    """CPU microseconds per call, old and new, per recorded run; checks equality first."""
    args = [dict(inst, sinf2=np.asarray(inst["sinf2"]),
                 seconds_per_bit=np.asarray(inst["seconds_per_bit"])) for inst in instances]
    mismatches = sum(not np.array_equal(_old(a), _new(a)) for a in args)
    result = {"instances": len(args), "mismatches": int(mismatches), "us_cpu_per_call": {}}
    groups = sorted({a["run"] for a in args}) + ["all"]
    for group in groups:
        chosen = [a for a in args if group in ("all", a["run"])]
        best = {}
        for _ in range(repeats):
            for label, fn in (("old", _old), ("new", _new)):
                start = time.process_time()
                for a in chosen:
                    fn(a)
                us = (time.process_time() - start) / len(chosen) * 1e6
                best[label] = min(best.get(label, np.inf), us)
        result["us_cpu_per_call"][group] = {"calls": len(chosen), "old": round(best["old"], 1),
                                            "new": round(best["new"], 1),
                                            "ratio": round(best["old"] / best["new"], 2)}
        print(group, result["us_cpu_per_call"][group], flush=True)
    result["load_average"] = os.getloadavg()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    rec = sub.add_parser("record")
    rec.add_argument("--runs", nargs="+", required=True, metavar="EXPERIMENT:CURVE")
    rec.add_argument("--keep", type=int, default=300, help="calls kept per run")
    rec.add_argument("--params", default="params.yaml")
    rec.add_argument("--set", action="append", default=["profile=quick"], metavar="KEY=VALUE")
    rec.add_argument("--label", default="", help="appended to each instance's run name")
    rec.add_argument("--out", required=True)
    tim = sub.add_parser("time")
    tim.add_argument("instances")
    tim.add_argument("--repeats", type=int, default=3)
    tim.add_argument("--json", default=None)
    args = parser.parse_args()
    if args.command == "record":
        out = record(args.runs, args.keep, args.params, args.set, args.label)
        Path(args.out).write_text(json.dumps(out))
        return
    result = time_instances(json.loads(Path(args.instances).read_text()), args.repeats)
    print(json.dumps(result))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
