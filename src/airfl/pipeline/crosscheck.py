"""Reproducibility across machines: what a rerun on another CPU must give exactly, and what only
within a tolerance.

On one machine a rerun is byte-identical (CI compares every figure file of two runs). Across CPU
models it is not: BLAS kernels and vector widths sum floats in other orders, so float outputs
differ in their last bits (partition weights, reference optima, designs, run tables), and so do
their md5s in dvc.lock. What does not depend on floating point must still be equal bit for bit:

- dvc.lock's stages, their commands and the paths of their inputs and outputs;
- the hashes of the code (`src/airfl`) and of the per-stage manifests (`results/dvc/`: the
  params.yaml values and code digests each stage depends on), and of params.yaml itself;
- every figure CSV's columns and row count, and every claim's verdict.

Figure data must agree within `RTOL` (relative, per numeric column: its mean, minimum and maximum
over finite values, and how many values are finite). The differences seen between an AMD and an
Intel machine were at most 1e-6 relative; `RTOL` = 1e-4 leaves two orders of magnitude for a
trajectory that amplifies a last-bit difference over its rounds, and is far below any difference
a claim or a figure reads (a test image is 5e-4 of accuracy on 2,000 images).

`write` summarises the current figures/ and results/claims/ into a small JSON (committed beside
dvc.lock by `make lock`); `check` compares the current outputs with it, and the current dvc.lock
with the committed one. CI runs `check` where the lock's output hashes differ (another CPU).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

RTOL = 1e-4
ATOL = 1e-12            # for values at 0
FIGURES = Path("figures")
CLAIMS = Path("results") / "claims"
#: dvc.lock entries whose hashes never depend on floating point
EXACT_PREFIXES = ("src/", "results/dvc", "params.yaml", "results/dvc_dag.txt")


def summarise_table(path: Path) -> dict[str, Any]:
    """A figure CSV as the check compares it: its columns, its rows, and per numeric column the
    count of finite values and their mean, minimum and maximum."""
    frame = pd.read_csv(path)
    columns: dict[str, Any] = {}
    for name in frame.columns:
        values = pd.to_numeric(frame[name], errors="coerce").to_numpy(dtype=float)
        if np.isnan(values).all() and frame[name].notna().any():
            continue                                    # a text column (labels, colours)
        finite = values[np.isfinite(values)]
        columns[name] = {"finite": int(finite.size),
                         **({"mean": float(finite.mean()), "min": float(finite.min()),
                             "max": float(finite.max())} if finite.size else {})}
    return {"rows": int(len(frame)), "columns": list(frame.columns), "numeric": columns}


def summarise(root: Path = Path(".")) -> dict[str, Any]:
    """Every figure CSV's summary and every claim's verdict under `root`."""
    figures = {str(p.relative_to(root)): summarise_table(p)
               for p in sorted((root / FIGURES).rglob("*.csv"))}
    verdicts = {}
    for path in sorted((root / CLAIMS).glob("*.json")):
        if path.name.endswith(".rows.json"):
            continue
        for figure, claims in json.loads(path.read_text())["verdicts"].items():
            for name, verdict in claims.items():
                verdicts[f"{figure}:{name}"] = verdict
    return {"rtol": RTOL, "figures": figures, "verdicts": verdicts}


def _close(a: float, b: float, rtol: float) -> bool:
    return a == b or abs(a - b) <= max(ATOL, rtol * max(abs(a), abs(b)))


def compare_summaries(reference: dict[str, Any], current: dict[str, Any],
                      rtol: float = RTOL) -> list[str]:
    """What differs beyond the tolerance, one line each (empty: the outputs agree)."""
    problems = []
    ref_figs, cur_figs = reference["figures"], current["figures"]
    for path in sorted(set(ref_figs) ^ set(cur_figs)):
        problems.append(f"{path}: {'missing' if path in ref_figs else 'not in the reference'}")
    for path in sorted(set(ref_figs) & set(cur_figs)):
        ref, cur = ref_figs[path], cur_figs[path]
        if ref["rows"] != cur["rows"] or ref["columns"] != cur["columns"]:
            problems.append(f"{path}: {cur['rows']} rows, columns {cur['columns']}; reference "
                            f"{ref['rows']} rows, columns {ref['columns']}")
            continue
        for column, stats in ref["numeric"].items():
            now = cur["numeric"].get(column)
            if now is None or now["finite"] != stats["finite"]:
                problems.append(f"{path}: column {column}: finite values "
                                f"{None if now is None else now['finite']} vs {stats['finite']}")
                continue
            for key in ("mean", "min", "max"):
                if key in stats and not _close(stats[key], now[key], rtol):
                    problems.append(f"{path}: column {column}: {key} {now[key]!r} vs reference "
                                    f"{stats[key]!r} (relative tolerance {rtol:g})")
    ref_v, cur_v = reference["verdicts"], current["verdicts"]
    for claim in sorted(set(ref_v) | set(cur_v)):
        if ref_v.get(claim) != cur_v.get(claim):
            problems.append(f"claim {claim}: {cur_v.get(claim)} vs reference {ref_v.get(claim)}")
    return problems


def _exact(path: str) -> bool:
    return path.startswith(EXACT_PREFIXES)


def _entries(stage: dict[str, Any], kind: str) -> dict[str, str | None]:
    return {e["path"]: e.get("md5") for e in stage.get(kind, [])}


def compare_locks(committed: dict[str, Any], made: dict[str, Any]) -> list[str]:
    """What differs between two dvc.lock files beyond float-dependent output hashes."""
    problems = []
    old, new = committed.get("stages", {}), made.get("stages", {})
    for name in sorted(set(old) ^ set(new)):
        problems.append(f"stage {name}: {'missing' if name in old else 'not in the committed lock'}")
    for name in sorted(set(old) & set(new)):
        if old[name].get("cmd") != new[name].get("cmd"):
            problems.append(f"stage {name}: command {new[name].get('cmd')!r} vs "
                            f"{old[name].get('cmd')!r}")
        if old[name].get("params") != new[name].get("params"):
            problems.append(f"stage {name}: params differ")
        for kind in ("deps", "outs"):
            was, now = _entries(old[name], kind), _entries(new[name], kind)
            if set(was) != set(now):
                problems.append(f"stage {name}: {kind} {sorted(set(was) ^ set(now))} differ")
                continue
            problems += [f"stage {name}: {kind} {path} hash {now[path]} vs {was[path]} (it does "
                         "not depend on floating point)"
                         for path in sorted(was) if _exact(path) and was[path] != now[path]]
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m airfl.pipeline.crosscheck",
                                     description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="action", required=True)
    write = sub.add_parser("write", help="summarise figures/ and results/claims/ into SUMMARY")
    write.add_argument("summary", type=Path)
    check = sub.add_parser("check", help="compare the outputs with SUMMARY (and, given, two "
                                         "dvc.lock files) within the tolerance")
    check.add_argument("summary", type=Path)
    check.add_argument("--committed-lock", type=Path, help="the dvc.lock of the commit")
    check.add_argument("--lock", type=Path, default=Path("dvc.lock"), help="the one just made")
    args = parser.parse_args(argv)
    if args.action == "write":
        tmp = args.summary.with_suffix(".tmp")
        tmp.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(json.dumps(summarise(), indent=1, sort_keys=True) + "\n")
        tmp.replace(args.summary)
        print(f"wrote {args.summary}")
        return 0
    reference = json.loads(args.summary.read_text())
    problems = compare_summaries(reference, summarise(), float(reference.get("rtol", RTOL)))
    if args.committed_lock:
        problems += compare_locks(yaml.safe_load(args.committed_lock.read_text()),
                                  yaml.safe_load(args.lock.read_text()))
    for line in problems[:50]:
        print(line, file=sys.stderr)
    if problems:
        print(f"crosscheck: {len(problems)} difference(s) beyond what another CPU explains",
              file=sys.stderr)
        return 1
    count = len(reference["figures"])
    print(f"crosscheck: {count} figure tables within relative {reference.get('rtol', RTOL):g}, "
          f"{len(reference['verdicts'])} verdicts identical"
          + (", dvc.lock equal in everything that does not depend on floating point"
             if args.committed_lock else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
