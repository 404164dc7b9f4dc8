"""Compare the final test accuracies of two runs of the same quick figures.

Usage (from the repository root, after running the same targets in two checkouts)::

    python benchmarks/precision_compare.py REFERENCE_ROOT CANDIDATE_ROOT [--markdown OUT]

REFERENCE_ROOT and CANDIDATE_ROOT are repository roots whose results/runs/ hold the same curves
(e.g. fp32 and bf16 runs of `workflow/overrides/quick_cnn.yaml`, or the fp32 runs of two engine
versions). For every run table present in both, per trial the final evaluation's test accuracy
(the last evaluated round) is compared; trials share every random draw (same seed), so the
differences are paired.

Verdict per curve: **within** when |mean(candidate) - mean(reference)| <= the reference's sample
standard deviation over trials, i.e. the candidate's mean lies inside the +-1 s.d. band the
figures draw around the reference curve at its last point; **outside** otherwise. With one
trial there is no spread and only an equal mean is within. The script also says which run
tables and figure CSVs are byte-identical.
"""

from __future__ import annotations

import argparse
import filecmp
import statistics
import sys
from pathlib import Path

import pandas as pd


def final_accuracies(table: Path) -> dict[int, float]:
    frame = pd.read_csv(table)
    frame = frame[frame["test_accuracy"].notna()]
    last = frame.loc[frame.groupby("trial")["round"].idxmax()]
    return {int(t): float(a) for t, a in zip(last["trial"], last["test_accuracy"])}


def compare(reference: Path, candidate: Path) -> tuple[list[dict], list[str]]:
    rows, identical = [], []
    for table in sorted((reference / "results" / "runs").rglob("*.csv")):
        other = candidate / table.relative_to(reference)
        if not other.exists():
            continue
        ref, cand = final_accuracies(table), final_accuracies(other)
        trials = sorted(set(ref) & set(cand))
        a = [ref[t] for t in trials]
        b = [cand[t] for t in trials]
        spread = statistics.stdev(a) if len(a) > 1 else 0.0
        delta = statistics.mean(b) - statistics.mean(a)
        rows.append({"curve": str(table.relative_to(reference / "results" / "runs"))[:-4],
                     "trials": len(trials), "reference": a, "candidate": b,
                     "mean_reference": statistics.mean(a), "mean_candidate": statistics.mean(b),
                     "delta": delta, "sd_reference": spread,
                     "within": abs(delta) <= spread,
                     "identical": filecmp.cmp(table, other, shallow=False)})
    for figure in sorted((reference / "figures").rglob("*.csv")):
        other = candidate / figure.relative_to(reference)
        if other.exists() and filecmp.cmp(figure, other, shallow=False):
            identical.append(str(figure.relative_to(reference)))
    return rows, identical


def markdown(rows: list[dict], identical_figures: list[str]) -> str:
    lines = ["| curve | trials | reference final acc. (%) | candidate (%) | mean diff (pp) | "
             "reference s.d. (pp) | within | run table identical |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        fmt = lambda xs: ", ".join(f"{100 * x:.2f}" for x in xs)   # noqa: E731
        lines.append(f"| {r['curve']} | {r['trials']} | {fmt(r['reference'])} | "
                     f"{fmt(r['candidate'])} | {100 * r['delta']:+.2f} | "
                     f"{100 * r['sd_reference']:.2f} | {'yes' if r['within'] else 'NO'} | "
                     f"{'yes' if r['identical'] else 'no'} |")
    within = sum(r["within"] for r in rows)
    lines.append("")
    lines.append(f"{within} of {len(rows)} curves within the reference's +-1 s.d. band; "
                 f"{sum(r['identical'] for r in rows)} run tables byte-identical; figure CSVs "
                 f"byte-identical: {', '.join(identical_figures) or 'none'}")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("reference", type=Path)
    parser.add_argument("candidate", type=Path)
    parser.add_argument("--markdown", type=Path, default=None)
    args = parser.parse_args(argv)
    rows, identical = compare(args.reference, args.candidate)
    text = markdown(rows, identical)
    print(text)
    if args.markdown:
        args.markdown.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
