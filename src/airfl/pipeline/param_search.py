"""Scheme-parameter search of the tune stage (the baselines' K, K', R, p_out,
eps_0, r_U and per-round budgets were "heuristically optimized" by the authors, paper §V-D).

The grids are declared in params, per panel and profile: `tuning.<profile>.param_grid.<curve>`,
either {param: [values]} (every combination, in sorted-key order) or an explicit list of
{param: value} combinations (for coupled grids such as K' in {K + 2, N}). The quick profile has
no grid (mode fixed): the baselines keep their defaults.

Protocol: every combination is run on the selection trials at the panel's step size;
the selected one has the lowest mean final sub-optimality gap (a scheme that trains on a fixed
subset of the clients: the lowest change of its objective over them, airfl.pipeline.tuning.
score_of), ties broken by the higher mean final normalised accuracy. The tune stage then searches the step size with the selected
parameters, so the search is coordinate-wise (parameters, then eta) instead of the full product
with the eta grid (5x the cost). A combination whose design leaves (almost) no device
transmitting (NoTransmissionError, e.g. UQOS with R = 2 bit/s/Hz at the literal SNR) is recorded
as infeasible with the error text; if every combination is infeasible the search fails.

Grid edges: the result names each selected value that is the lowest or highest value its
parameter takes anywhere in the grid (`at_grid_edge`, e.g. {"K": "lowest"}). A choice on an edge
says the best value may lie beyond the grid: widen the grid there (a value at a hard bound, such
as K = 1, is then the bound's choice, not the grid's).
"""

from __future__ import annotations

import copy
import itertools
import math
from typing import Any, Callable

from airfl.core.participation import NoTransmissionError

__all__ = ["grid_of", "candidates", "with_curve_params", "search", "grid_edges", "edge_of"]


def grid_of(block: dict[str, Any], curve: str) -> Any:
    """The declared grid of a curve in this block's profile, or None."""
    return block.get("tuning", {}).get("param_grid", {}).get(curve)


def candidates(grid: Any) -> list[dict[str, Any]]:
    """Every combination a grid declares, in a fixed order (see module docstring)."""
    if isinstance(grid, list):
        return [dict(c) for c in grid]
    keys = sorted(grid)
    return [dict(zip(keys, values)) for values in itertools.product(*(grid[k] for k in keys))]


def with_curve_params(block: dict[str, Any], curve: str, values: dict[str, Any]) -> dict[str, Any]:
    """A copy of the block whose curve carries `values` (the rest of the block unchanged)."""
    out = copy.deepcopy(block)
    out["curves"][curve] = {**out["curves"][curve], **values}
    return out


def edge_of(value: Any, values: list[Any]) -> str | None:
    """"lowest" or "highest" when `value` is the smallest or largest of the distinct numeric
    `values` (at least two of them), else None (one value, or values that are not numbers)."""
    numbers = sorted({v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)})
    if len(numbers) < 2 or value not in numbers:
        return None
    return "lowest" if value == numbers[0] else "highest" if value == numbers[-1] else None


def grid_edges(chosen: dict[str, Any], combinations: list[dict[str, Any]]) -> dict[str, str]:
    """The selected values that sit on an edge of the grid: parameter -> "lowest" | "highest",
    each value against every value its parameter takes in the grid (module docstring)."""
    out = {}
    for key, value in chosen.items():
        edge = edge_of(value, [c[key] for c in combinations if key in c])
        if edge:
            out[key] = edge
    return out


def _key(entry: dict[str, Any]) -> tuple[float, float]:
    """The search criterion: lowest score (the final gap, or for a scheme that trains on a fixed
    subset of the clients its trained-loss change: airfl.pipeline.tuning.score_of), ties ->
    higher final normalised accuracy."""
    score = entry.get("selection_score", entry["final_gap"])
    return (score if math.isfinite(score) else math.inf), -entry["final_normalized_accuracy"]


def search(block: dict[str, Any], curve: str, eta: float,
           score_many: Callable[[list[dict[str, Any]], float], list[Any]]) -> dict[str, Any] | None:
    """Run the curve's grid; `score_many(blocks, eta)` returns the selection scores of each
    block (all combinations at once, so that their runs can be batched), or the
    NoTransmissionError of a block whose design leaves no device transmitting.

    Returns None when the curve has no grid, else {"params": selected combination, "eta": the
    step size of the search, "grid": every combination with its scores or its infeasibility}.
    """
    grid = grid_of(block, curve)
    if grid is None:
        return None
    combinations = candidates(grid)
    rows = []
    scored = score_many([with_curve_params(block, curve, v) for v in combinations], eta)
    for values, scores in zip(combinations, scored):
        if isinstance(scores, NoTransmissionError):
            rows.append({"params": values, "feasible": False, "reason": str(scores)})
            continue
        gap = scores["final_gap"]
        rows.append({"params": values, "feasible": True,
                     "final_gap": gap if math.isfinite(gap) else math.inf,
                     "final_normalized_accuracy": scores["final_normalized_accuracy"],
                     **{k: scores[k] for k in ("selection_score", "selection_metric")
                        if k in scores},
                     **({"same_runs_as": combinations[scores["same_runs_as"]]}
                        if "same_runs_as" in scores else {})})
    feasible = [r for r in rows if r["feasible"]]
    if not feasible:
        raise ValueError(f"param_grid of curve {curve!r}: no combination transmits "
                         f"({len(rows)} tried); first error: {rows[0]['reason']}")
    best = min(feasible, key=_key)
    return {"params": best["params"], "eta": eta, "grid": rows,
            "at_grid_edge": grid_edges(best["params"], combinations),
            "criterion": "lowest mean final sub-optimality gap on the selection trials (a scheme "
                         "that trains on a fixed subset of the clients: its trained-loss change), "
                         "ties by accuracy"}
