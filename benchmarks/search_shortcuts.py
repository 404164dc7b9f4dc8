"""Replay cheaper scheme-parameter searches on the scores of an exhaustive one.

Usage (from the repository root, after a paper-profile run of the Biased FL SOTA panels)::

    python benchmarks/search_shortcuts.py [--results results] [--params params.yaml]

Reads every `results/tuning/biased_fl/<panel>/<curve>.json` whose tune job searched a
`param_grid` (a {param: [values]} grid; explicit lists of combinations are skipped) and replays,
on the stored mean final gaps (ties: accuracy, our tuning rule), coordinate searches over the same
grid: from the curve's params.yaml defaults in sorted-key order (`default`), the same with K
swept last (`K last`), and, at the +30/+60 dB copies, from the literal panel's choice
(`literal start`); each sweeps one parameter at a time until a full pass changes nothing. For
each search it prints whether the replay reaches the exhaustive choice, how many combinations
it evaluates, and its chosen gap over the exhaustive best's. No run is made: a replay reads
stored scores only, so it shows what a coordinate search would have chosen on these scores.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import yaml


def _key(row: dict) -> tuple[float, float]:
    if not row["feasible"]:
        return float("inf"), 0.0
    return row["final_gap"], -row["final_normalized_accuracy"]


def coordinate(rows: dict[str, dict], grid: dict[str, list], start: dict, order: list[str]
               ) -> tuple[dict, int]:
    """A coordinate search on stored rows; returns its choice and the combinations it read."""
    current, seen = dict(start), set()

    def score(values: dict) -> tuple[float, float]:
        name = json.dumps(values, sort_keys=True)
        seen.add(name)
        return _key(rows[name])

    while True:
        before = dict(current)
        for param in order:
            current = min(({**current, param: v} for v in grid[param]), key=score)
        if current == before:
            return current, len(seen)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", default="results")
    parser.add_argument("--params", default="params.yaml")
    args = parser.parse_args()
    section = yaml.safe_load(Path(args.params).read_text())["biased_fl"]
    root = Path(args.results) / "tuning" / "biased_fl"
    misses = total = 0
    for panel in ("fig2b", "fig3b"):
        grids = section[panel]["tuning"]["paper"].get("param_grid", {})
        for curve, grid in grids.items():
            if isinstance(grid, list):
                continue
            literal = json.loads((root / panel / f"{curve}.json").read_text())["params"]
            default = {k: section[panel]["curves"][curve][k] for k in grid}
            for figure in (panel, f"{panel}_snr30", f"{panel}_snr60"):
                path = root / figure / f"{curve}.json"
                if not path.exists():
                    continue
                stored = json.loads(path.read_text())["param_search"]["grid"]
                rows = {json.dumps(r["params"], sort_keys=True): r for r in stored}
                best = min(rows.values(), key=_key)
                starts = [("default", default, sorted(grid)),
                          ("K last", default, sorted(grid, key=lambda k: (k == "K", k)))]
                if figure != panel:
                    starts.append(("literal start", literal, sorted(grid)))
                cells = []
                for label, start, order in starts:
                    chosen, read = coordinate(rows, grid, start, order)
                    ratio = rows[json.dumps(chosen, sort_keys=True)]["final_gap"] / best["final_gap"]
                    same = chosen == best["params"]
                    misses += not same
                    total += 1
                    cells.append(f"{label}: {'same' if same else 'MISS'} {read}/{len(rows)} "
                                 f"{ratio:.2f}x")
                print(f"{figure:12s} {curve:22s} " + " | ".join(cells))
    print(f"replays that miss the exhaustive choice: {misses} of {total}")


if __name__ == "__main__":
    main()
