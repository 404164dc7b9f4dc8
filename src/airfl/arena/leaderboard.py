"""The arena's leaderboard: per (eps target, edge SNR) point of the arena's grid, the schemes that meet the target ranked by
final test accuracy, each with its paired 95 % interval against the best (trials paired: every
scheme of a trial sees the same channel and data draws), then the references and the absent
schemes with why.

A scheme meets the target when its epsilon as simulated (the privacy stage's
`epsilon_simulated`: the mechanism the run adds, composed by the project's RDP accountant) is at
most the target in every trial; its paper's own statement (`epsilon_paper`) is shown beside it.
A non-private reference is listed in every group, ranked only where its accounted epsilon meets
the target. The schemes of the papers not in the arena close the table, once, with why.
"""

from __future__ import annotations

import math
import re
from typing import Any

import pandas as pd

from airfl.arena.entrants import ABSENT, PRESENT
from airfl.core.claims import ACCURACY_MARGIN, final_by_trial, paired_difference

COLUMNS = ("eps_target", "delta", "snr_db", "rank", "scheme", "wing", "status", "curve",
           "accuracy_pct", "accuracy_sd_pct", "trials", "epsilon_simulated", "epsilon_paper",
           "eps_audited_lower", "audit", "vs_best_pp", "vs_best_half_width_pp", "vs_best_verdict")

#: relative slack of "epsilon as simulated <= target" (the calibration never overshoots; this
#: only absorbs the CSV's 10 significant digits)
SLACK = 1e-8

WINGS = {e.legend: e.wing for e in PRESENT}
#: a private entrant without an audit: why (entrants.Entrant.not_audited)
NOT_AUDITED = {e.legend: e.not_audited for e in PRESENT if e.not_audited}
#: an entrant whose paper states its epsilon as a run-table column summed over the rounds
#: (entrants.Entrant.paper_epsilon_column: LAPA's eps_c of eq. 12)
PAPER_COLUMNS = {e.legend: e.paper_epsilon_column for e in PRESENT if e.paper_epsilon_column}
#: the per-round run-table columns the leaderboard reads as running sums over the rounds (the
#: figure stage adds them to its frame: `airfl.core.experiments.Table.running_sums`)
RUNNING_SUMS = tuple(dict.fromkeys(PAPER_COLUMNS.values()))


def final_eps(frame: pd.DataFrame, column: str) -> pd.Series:
    """Each curve's largest final epsilon over its trials (inf where not private)."""
    last = frame.loc[frame.groupby(["curve", "trial"])["round"].idxmax()]
    return last.groupby("curve")[column].max()


def paper_eps(frame: pd.DataFrame, curves: dict[str, dict[str, Any]]) -> pd.Series:
    """Each curve's epsilon as its paper states it, its largest over the trials: the privacy
    stage's `epsilon_paper` (its records' privacy events composed), except for an entrant whose
    paper states it as a run-table column summed over the rounds (`PAPER_COLUMNS`: LAPA's
    budget spent, eps_c = sum_t eps^[t] of eq. 12, the basic composition its paper composes;
    the frame holds its running sum, `RUNNING_SUMS`)."""
    paper = final_eps(frame, "epsilon_paper")
    for curve, params in curves.items():
        column = PAPER_COLUMNS.get(params.get("entrant"))
        if column is None:
            continue
        if column not in frame or frame.loc[frame["curve"] == curve, column].isna().all():
            raise ValueError(f"{curve}: its paper's epsilon is the run table's {column!r} "
                             "summed over the rounds, which the frame does not hold")
        paper[curve] = float(final_eps(frame[frame["curve"] == curve], column)[curve])
    return paper


def meets(simulated: float, target: float) -> bool:
    """Whether a curve's largest epsilon as simulated meets its target (SLACK)."""
    return float(simulated) <= float(target) * (1 + SLACK)


def points(curves: dict[str, dict[str, Any]]) -> list[tuple[float, float]]:
    """The (eps target, edge SNR) points of the arena's grid, by eps then SNR."""
    return sorted({(float(e), float(s)) for p in curves.values()
                   for e, s in p.get("arena_points", ())})


def point_name(curve: str, trial: int) -> str:
    """The audited point of a curve in one trial (airfl.arena.audit: its row's label in the
    audit figure's CSV, its claim `audit_<point>`)."""
    return f"{curve}_trial{trial}"


def curve_of_point(label: str) -> str:
    """The curve a point's label (`point_name`) audits; stops naming the label otherwise."""
    found = re.fullmatch(r"(.+)_trial[0-9]+", label)
    if found is None:
        raise ValueError(f"audit point {label!r}: expected <curve>_trial<k>")
    return found.group(1)


def audit_cells(curve: str, params: dict[str, Any], simulated: float,
                audits: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """The audit columns of a curve's row from its audited points, one per trial
    (airfl.arena.audit): the largest audited lower bound over the trials (beside the row's
    epsilons, the largest accounted over the trials), and the trials whose bound exceeds that
    trial's own accounting (as simulated, as its paper states), if any; a curve with no privacy
    target says "not private" (a reference whose channel noise is accounted anyway is not
    audited: its epsilon is far beyond any target)."""
    if "target_eps" not in params:
        return {"audit": "not private" + (" (reference, not audited)"
                                          if math.isfinite(simulated) else "")}
    points = sorted(audits.get(curve, ()), key=lambda p: int(p["settings"]["trial"]))
    if not points:
        return {"audit": NOT_AUDITED.get(params.get("entrant"), "") or "not audited"}
    lower = max(float(p["eps_audited_lower"]) for p in points)
    exceeded = []
    # what a point's eps_claimed is: its paper's accounting, or where the paper states another
    # relation (LAPA's eps_T, a sample's) the one its records give the audited upload
    claimed = next((p["settings"]["claimed_name"] for p in points
                    if "claimed_name" in p["settings"]), "epsilon_paper")
    for point in points:
        over = [name for name, key in (("epsilon_simulated", "eps_simulated"),
                                       (claimed, "eps_claimed"))
                if float(point["eps_audited_lower"]) > float(point[key])]
        if over:
            exceeded.append(f"trial {point['settings']['trial']} "
                            f"{float(point['eps_audited_lower']):.3g} exceeds "
                            + " and ".join(over))
    largest = (f"largest over {len(points)} trials: audited >= {lower:.3g}, simulated "
               f"{max(float(p['eps_simulated']) for p in points):.3g}, "
               f"{'paper' if claimed == 'epsilon_paper' else claimed} "
               f"{max(float(p['eps_claimed']) for p in points):.3g}")
    verdict = "; ".join(exceeded) if exceeded else "within both accountings in every trial"
    return {"eps_audited_lower": lower, "audit": f"{verdict} ({largest})"}


def by_curve(audits: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """The stored audit points grouped by the curve they audit (`settings.curve`; one point
    per trial)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for point in audits:
        out.setdefault(point["settings"]["curve"], []).append(point)
    return out


def build(frame: pd.DataFrame, curves: dict[str, dict[str, Any]],
          audits: list[dict[str, Any]] | None = None) -> pd.DataFrame:
    """The leaderboard rows (COLUMNS) from the figure stage's frame and the arena's curves: one
    group per (eps, SNR) point of the grid (entrants.curves: every eps at the base power, the
    SNR figure's eps at every power), each of the point's curves in it; `audits`: the stored
    audit points of the arena's entrants (the audit columns: `audit_cells`)."""
    audited = by_curve(audits or [])
    accuracy = final_by_trial(frame, "test_accuracy")
    simulated = final_eps(frame, "epsilon_simulated")
    paper = paper_eps(frame, curves)
    delta = next((p["delta"] for p in curves.values() if "delta" in p), None)
    rows = []
    for eps, snr in points(curves):
        group = [c for c, p in curves.items()
                 if [eps, snr] in [[float(e), float(s)] for e, s in p["arena_points"]]]
        group.sort(key=lambda c: "target_eps" not in curves[c])   # private ones first
        meeting = [c for c in group if meets(simulated[c], eps)]
        ranked = sorted(meeting, key=lambda c: -float(accuracy[c].mean()))
        best = ranked[0] if ranked else None
        for curve in ranked + [c for c in group if c not in meeting]:
            row = _row(curve, curves[curve], accuracy[curve], simulated[curve], paper[curve])
            row.update(eps_target=eps, delta=delta, snr_db=snr)
            if audits is not None:
                row.update(audit_cells(curve, curves[curve], simulated[curve], audited))
            if curve in meeting:
                row.update(rank=ranked.index(curve) + 1, status="meets the target")
                if curve != best:
                    row.update(_versus(accuracy, best, curve))
            else:
                role = "" if "target_eps" in curves[curve] else " (reference)"
                row.update(rank=None, status=f"epsilon as simulated {simulated[curve]:.3g} > "
                                             f"target{role}" if math.isfinite(
                                                 simulated[curve]) else f"not private{role}")
            rows.append(row)
    rows += [{"scheme": a.legend, "wing": a.wing, "status": f"absent: {a.reason}"}
             for a in ABSENT]                                  # once, after every group
    return pd.DataFrame(rows, columns=list(COLUMNS))


def _row(curve: str, params: dict[str, Any], accuracy: pd.Series, simulated: float,
         paper: float) -> dict[str, Any]:
    values = accuracy.dropna()
    return {"scheme": params["entrant"], "wing": WINGS.get(params["entrant"]), "curve": curve,
            "accuracy_pct": 100 * float(values.mean()),
            "accuracy_sd_pct": 100 * float(values.std(ddof=1)) if len(values) > 1 else 0.0,
            "trials": len(values), "epsilon_simulated": float(simulated),
            "epsilon_paper": float(paper)}


def _versus(accuracy: pd.DataFrame, best: str, curve: str) -> dict[str, Any]:
    """best - curve, its paired interval's half width (pp) and the verdict on 'best is more
    accurate' with the accuracy margin (airfl.core.claims.paired_difference)."""
    difference = paired_difference(accuracy, best, curve, ACCURACY_MARGIN)
    return {"vs_best_pp": 100 * difference.mean, "vs_best_half_width_pp":
            100 * difference.half_width, "vs_best_verdict": difference.verdict}


NOTE = ("Ranked per (eps target, edge SNR) point among the schemes whose epsilon as simulated (the mechanism the "
        "run adds, the project's RDP accountant, improved conversion) meets it in every trial; "
        "epsilon_paper is the scheme's paper's own accounting (LAPA's entrants: its eps_T as its "
        "eq. 12 composes it, the round budgets spent summed over the rounds, at eq. 18's "
        "per-sample sensitivity 2 lam C / |D_k|: a sample's change, not a device's upload, so "
        "it lies far below their epsilon_simulated). vs_best: the best's final "
        "accuracy minus this scheme's, mean over trials paired by trial, ± the 95 % interval's "
        "half width, and the verdict on 'the best is more accurate' with a 1 pp margin. "
        "eps_audited_lower: the largest over the trials of the privacy audit's 95 % lower bound on "
        "the curve's epsilon over its T rounds (figures/arena/audit_<entrant>: one row per "
        "trial), and the trials whose bound exceeds that trial's accounting, if any (LAPA's "
        "user-level uniform DP is audited at a device's upload, against its records' "
        "device-level epsilon and epsilon_simulated; its sample-level entrants are not "
        "audited: their rows say why). "
        "The last rows: the schemes not in the arena, with the reason.")
