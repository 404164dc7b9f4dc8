"""Scheme-parameter search of the tune stage (Biased FL spec 6.5: the baselines' K, K', R, p_out,
eps_0, r_U and per-round budgets were "heuristically optimized" by the authors, paper §V-D).

The grids are declared in params, per panel and profile: `tuning.<profile>.param_grid.<curve>`,
either {param: [values]} (every combination, in sorted-key order) or an explicit list of
{param: value} combinations (for coupled grids such as K' in {K + 2, N}). The quick profile has
no grid (mode fixed): the baselines keep their defaults (spec 10).

Protocol (spec 6.5): every combination is run on the selection trials at the panel's step size;
the selected one has the lowest mean final sub-optimality gap, ties broken by the higher mean
final normalised accuracy. The tune stage then searches the step size with the selected
parameters, so the search is coordinate-wise (parameters, then eta) instead of the full product
with the eta grid (5x the cost). A combination whose design leaves (almost) no device
transmitting (NoTransmissionError, e.g. UQOS with R = 2 bit/s/Hz at the literal SNR) is recorded
as infeasible with the error text; if every combination is infeasible the search fails.

Screening (`param_search: screen`, issue 11 "Scale and speed"; spec 6.5 says "select on 3 seeds"
but not how to spend them): every combination runs on the first selection trial only; the
`finalists` best distinct runs on it (by the same criterion; combinations with the same runs,
`same_runs_as`, count once) run on the other selection trials too, and the choice is the best
finalist by its mean over all of them, as in the full search. It makes the full search's choice
unless that combination is not among the finalists on trial 0; the candidates see common random
numbers (the same channel and quantizer draws on a trial), so a trial ranks them much as their
mean does. Cost: n + finalists (s - 1) trial runs instead of n s (UQOS at +60 dB: 78 instead
of 216). `all` (the default) runs every combination on every selection trial.
"""

from __future__ import annotations

import copy
import itertools
import math
from typing import Any, Callable

from airfl.core.participation import NoTransmissionError
from airfl.pipeline.tuning import gap_score

__all__ = ["grid_of", "candidates", "with_curve_params", "search"]


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


def _key(entry: dict[str, Any]) -> tuple[float, float]:
    """Spec 6.5 criterion: lowest final gap, ties -> higher final normalised accuracy."""
    return entry["final_gap"], -entry["final_normalized_accuracy"]


Scorer = Callable[[list[dict[str, Any]], float, range], list[Any]]

SEARCHES = ("all", "screen")


def search(block: dict[str, Any], curve: str, eta: float, score_many: Scorer, trials: range,
           mode: str = "all", finalists: int = 3) -> dict[str, Any] | None:
    """Run the curve's grid; `score_many(blocks, eta, trials)` returns the selection scores of
    each block on those trials (all combinations at once, so that their runs can be batched),
    or the NoTransmissionError of a block whose design leaves no device transmitting. `mode`
    `screen` screens on the first trial and keeps `finalists` (module docstring).

    Returns None when the curve has no grid, else {"params": selected combination, "eta": the
    step size of the search, "grid": every combination with its scores or its infeasibility}.
    """
    grid = grid_of(block, curve)
    if grid is None:
        return None
    if mode not in SEARCHES:
        raise ValueError(f"param_search {mode!r}: allowed {', '.join(SEARCHES)}")
    combinations = candidates(grid)
    blocks = [with_curve_params(block, curve, v) for v in combinations]
    screen = None
    if mode == "screen" and len(trials) > 1:
        scored, screen = _screened(blocks, eta, trials, finalists, score_many)
    else:
        scored = score_many(blocks, eta, trials)
    rows = [_row(values, scores, combinations, None if screen is None else screen[i])
            for i, (values, scores) in enumerate(zip(combinations, scored))]
    feasible = [r for r in rows if r["feasible"] and "final_gap" in r]
    if not feasible:
        reasons = [r["reason"] for r in rows if not r["feasible"]]
        raise ValueError(f"param_grid of curve {curve!r}: no combination transmits "
                         f"({len(rows)} tried); first error: {reasons[0] if reasons else '-'}")
    best = min(feasible, key=_key)
    criterion = ("lowest mean final sub-optimality gap on the selection trials, ties by "
                 "accuracy (spec 6.5)")
    if screen is not None:
        criterion += (f"; screened: every combination on trial {trials[0]}, the {finalists} "
                      "best distinct runs there on every selection trial")
    return {"params": best["params"], "eta": eta, "grid": rows, "criterion": criterion,
            "search": mode, **({"finalists": finalists} if screen is not None else {})}


def _row(values: dict[str, Any], scores: Any, combinations: list[dict[str, Any]],
         screened: dict[str, Any] | None) -> dict[str, Any]:
    """One combination's record: infeasible with the reason, or its scores (a screened-out
    combination: its first-trial scores only, `finalist: false`)."""
    if isinstance(scores, NoTransmissionError):
        return {"params": values, "feasible": False, "reason": str(scores)}
    row: dict[str, Any] = {"params": values, "feasible": True}
    if screened is not None:
        row.update(finalist=scores is not None, screen_gap=_finite(screened["final_gap"]),
                   screen_normalized_accuracy=screened["final_normalized_accuracy"])
    if scores is not None:
        row.update(final_gap=_finite(scores["final_gap"]),
                   final_normalized_accuracy=scores["final_normalized_accuracy"])
    source = scores if scores is not None else screened
    if "same_runs_as" in source:
        row["same_runs_as"] = combinations[source["same_runs_as"]]
    return row


def _finite(gap: float) -> float:
    return gap if math.isfinite(gap) else math.inf


def _screened(blocks: list[dict[str, Any]], eta: float, trials: range, finalists: int,
              score_many: Scorer) -> tuple[list[Any], list[Any]]:
    """Screen every block on the first trial; the `finalists` best distinct runs there (and the
    combinations with the same runs) also run on the other trials. Returns each block's scores
    over all trials (None for a screened-out block; its NoTransmissionError where its design
    fails on some trial) and its first-trial scores."""
    first = score_many(blocks, eta, trials[:1])
    ok = [i for i, s in enumerate(first) if not isinstance(s, NoTransmissionError)]
    group = {i: first[i].get("same_runs_as", i) for i in ok}
    kept = sorted(set(group.values()), key=lambda i: _key(first[i]))[:finalists]
    chosen = [i for i in ok if group[i] in kept]
    rest = score_many([blocks[i] for i in chosen], eta, trials[1:])
    out: list[Any] = [first[i] if i not in ok else None for i in range(len(blocks))]
    for i, more in zip(chosen, rest):
        if isinstance(more, NoTransmissionError):
            out[i] = more
            continue
        gaps = first[i]["final_gaps"] + more["final_gaps"]
        accuracy = (first[i]["final_normalized_accuracy"]
                    + more["final_normalized_accuracy"] * (len(trials) - 1)) / len(trials)
        out[i] = {"final_gaps": gaps, **gap_score(gaps), "final_normalized_accuracy": accuracy,
                  **({"same_runs_as": chosen[more["same_runs_as"]]}
                     if "same_runs_as" in more else {})}
    return out, first
