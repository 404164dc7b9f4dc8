"""Stage `audit`: `airfl audit <wing> <mechanism>` audits one registered DP mechanism
by running its scheme's own aggregation on neighbouring inputs (airfl.privacy.auditing), and
writes results/audit/<wing>/<mechanism>.json (every audited point: claimed, as-simulated and
audited epsilons, the test, the parameters), figures/<wing>/audit_<mechanism>.csv (what is drawn)
and its figure. Timings go to the untracked provenance record (the artifacts are byte-identical
for one seed). The claims stage turns each point into the claim "audited lower bound <= claimed
epsilon" (stages/claims.py, `audit_claim_rows`): contradicted means the claimed epsilon is
exceeded, by the code or by the accounting it follows.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable

import pandas as pd

from airfl.params.declare import resolve
from airfl.runtime.io import provenance, read_json, record_run, write_csv, write_json
from airfl.pipeline import paths
from airfl.pipeline.registry import get_wing
from airfl.pipeline.stage_error import OverBound
from airfl.pipeline.stages import StageError
from airfl.pipeline.stage_params import declared

COLUMNS = ("label", "eps_claimed", "eps_simulated", "eps_audited_lower", "eps_audited_point",
           "eps_audited_upper", "gdp_eps", "tightness", "holds")


def draws_of(params: dict[str, Any], mechanism) -> int:
    """Draws per world of one audited point: its own (`AuditableMechanism.draws`, a multi-round
    audit), else the profile's `audit.draws` (batched) or `audit.loop_draws` (one call a draw).
    `airfl plan` costs an audit job by the same count."""
    if mechanism.draws:
        return int(mechanism.draws)
    block = params["audit"]["draws" if mechanism.batched else "loop_draws"]
    return int(resolve(block, params["profile"]))


@declared("audit")
def run(params: dict[str, Any], wing: str, mechanism: str,
        over_bound: Callable[..., str | None] | None = None) -> None:
    """Audit every point the wing's factory builds. `over_bound(points=...)`: the job's cost
    guard (`cost_guard.job_over_bound`, given by `airfl audit` without --yes), called on the
    built points (costed, not built again) before any is drawn; its message stops the job
    (`stage_error.OverBound`) with nothing written."""
    started = time.perf_counter()
    from airfl.privacy.auditing import run_audit

    try:
        factory = get_wing(wing).audit_factory(mechanism)
    except KeyError as error:
        raise StageError(str(error.args[0])) from None
    seed, alpha = int(params["seed"]), float(params["audit"]["alpha"])
    candidates = list(factory(params))
    if over_bound is not None and (message := over_bound(points=candidates)):
        raise OverBound(message)
    points, timings = [], []
    for index, candidate in enumerate(candidates):
        timing: dict[str, float] = {}
        draws = draws_of(params, candidate)
        points.append(run_audit(candidate, draws,
                                seed + 1000 * index, alpha, timing))
        timings.append({"name": candidate.name, **timing})
    write_json(paths.audit(wing, mechanism), {
        "wing": wing, "mechanism": mechanism, "points": points,
        "provenance": provenance({"profile": params["profile"], "seed": seed,
                                  "audit": params["audit"]})})
    frame = pd.DataFrame([{"label": p["mechanism"], **{k: p[k] for k in COLUMNS[1:]}}
                          for p in points], columns=list(COLUMNS))
    write_csv(paths.audit_figure(wing, mechanism, "csv"), frame, float_format="%.17g")
    draw(paths.audit_figure(wing, mechanism, "csv"), paths.audit(wing, mechanism),
         f"{wing}: {mechanism}")
    record_run(paths.audit(wing, mechanism), timings=timings,
               wall_time_s=round(time.perf_counter() - started, 3))


def draw(csv: Path, audit_json: Path, title: str) -> None:
    """Claimed and as-simulated epsilon (markers) and the audited interval (bar from the valid
    lower bound to the upper end, dot at the point estimate) per audited point, from the CSV;
    the footer (profile, draws, seed) from the stored audit JSON."""
    import matplotlib.pyplot as plt
    import numpy as np

    from airfl.figures.plotting import save_figure, set_theme

    set_theme()
    frame = pd.read_csv(csv)
    values = frame[["eps_claimed", "eps_simulated", "eps_audited_lower", "eps_audited_point",
                    "eps_audited_upper"]].astype(float)
    finite = values.to_numpy()[np.isfinite(values.to_numpy()) & (values.to_numpy() > 0)]
    cap = 10 * float(finite.max()) if finite.size else 10.0
    shown = values.clip(lower=1e-3, upper=cap)
    y = np.arange(len(frame))
    fig, ax = plt.subplots(figsize=(7.0, 1.2 + 0.45 * len(frame)))
    ax.hlines(y, shown["eps_audited_lower"], shown["eps_audited_upper"], color="tab:red", lw=3,
              alpha=0.5, label="audited (95 % interval)")
    ax.plot(shown["eps_audited_point"], y, "o", color="tab:red", label="audited point")
    ax.plot(shown["eps_claimed"], y, "D", color="black", mfc="none", label="claimed (paper)")
    ax.plot(shown["eps_simulated"], y, "s", color="tab:blue", mfc="none", label="as simulated")
    ax.set_yticks(y, frame["label"])
    ax.set_xscale("log")
    ax.set_xlabel(f"epsilon (one round; values above {cap:.3g} drawn at it)")
    ax.set_title(title)
    ax.legend(fontsize=7, loc="best")
    fig.tight_layout()
    stored = read_json(audit_json)
    made = stored["provenance"]["params"]
    draws = sorted({int(p["draws"]) for p in stored["points"]})
    fig.text(0.01, 0.0, f"Profile '{made['profile']}'; "
             f"{' / '.join(f'{d:,}' for d in draws)} draws per audited point, "
             f"{100 * (1 - made['audit']['alpha']):g} % intervals (seed {made['seed']}).",
             ha="left", va="top", fontsize=7, color="#333333")
    save_figure(fig, csv.with_suffix(""))
