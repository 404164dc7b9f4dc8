"""The step-size protocol of Biased FL (the paper's step sizes are "tuned"), for any experiment with `tuning`.

`mode: fixed` keeps the panel's eta (quick profile: 0.05 for every scheme) and makes no
tune job. `mode: grid` searches eta in {factors} x eta_max, eta_max = 2 / (mu + L) from the
reference, on the first `selection_trials` trials; the design is re-solved for each eta (eta
enters the SCA objective). With a lead curve (the variant panels) only the lead has a tune job and
every curve takes its eta ("one common eta ... of the proposed scheme"); otherwise each scheme
gets its own. An experiment with `tuning_source` reuses that experiment's results (no search of
its own; Biased FL's SOTA panels at +30/+60 dB search their own).

Selection rule (one-standard-error rule; the paper says "tuned" but not how near-ties are broken):
each candidate's score is its mean final sub-optimality gap over the selection trials (a scheme
that trains on a fixed subset of the clients, such as BB-FL Interior, is scored instead by the
relative change of its objective over those clients, `trained_loss_score`: a rule under which a
model that does not move cannot win), with the
standard error s / sqrt(n) of that mean (s: sample standard deviation over the n trials). The
chosen eta is the LARGEST one whose score is within one standard error of the best score:
score(eta) <= score_best + SE_best. Why: with 3 selection trials two step sizes often differ by
less than the trial spread (e.g. eta 0.0136 -> gap 0.415, eta 0.0272 -> 0.419), and the argmin
then decides the speed-up claims by noise; the larger eta is the faster one of statistically
equal candidates. With one selection trial SE is 0 and the rule is the argmin. A candidate whose
gap is not finite (diverged) is never chosen; if every candidate diverged, the stage stops.
A curve with a `param_grid` entry first searches its scheme parameters (pipeline/param_search.py,
baseline grids) at the panel's eta; the eta grid then runs with the selected ones, and
the tuning file carries them ("params"), which the design and train stages apply.

Descending search (`eta_search: descending`): the step sizes are run
from the largest down, `ETA_BATCH` at a time, and the search stops as soon as one's mean final
gap exceeds the previous one's. Why it is the full grid's choice: the final gap of a fixed
horizon of constant-step projected GD on the strongly convex objective is unimodal in eta (too
small: not converged; too large: noise and bias amplified, then divergence), so once it rises
every smaller eta is worse still; every eta larger than the best has been run, which is all the
one-SE rule reads (the largest eta within one SE of the best). Checked on the 49 step-size
searches of a full paper-profile run (every one unimodal on the grid; README). A grid that is
not unimodal could make it stop early; `all` (the default) runs every step size.

Speed: `candidate_scores` runs all candidates of one search (every
combination, or every eta) x selection trials in lockstep, their full-batch gradients one
batched computation (airfl.core.lockstep). Each run keeps its own streams, so the choice is the
one the one-by-one runs make, with scores equal up to float reassociation (measured: ~1e-7
relative for OTA schemes; up to 7.5e-5 for digital ones, whose stochastic quantizer turns a tiny
difference into a different rounding of a coordinate; every chosen eta and parameter set
unchanged, benchmarks/README.md, tune_batching.py); the same grid reruns bit-identically.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Callable

import numpy as np

from airfl.pipeline import paths
from airfl.pipeline.param_search import edge_of
from airfl.core.participation import NoTransmissionError
from airfl.core.experiments import Experiment
from airfl.runtime.io import read_json


def searched(block: dict[str, Any]) -> bool:
    """Whether the step size is searched (mode grid) in this block's profile."""
    return block.get("tuning", {}).get("mode") == "grid"


def tuning_file(experiment: Experiment, block: dict[str, Any], curve: str) -> Path | None:
    """Where a curve's tuned step size is read from: the tune job of its lead curve (itself, or
    the proposed scheme in a variant panel), in `experiment.tuning_source` when it reuses another
    experiment's; None when the step size is not searched."""
    if not searched(block):
        return None
    return paths.tuning(experiment.tuning_source or experiment.id, lead_of(experiment, curve))


def has_tune_jobs(experiment: Experiment, block: dict[str, Any]) -> bool:
    return searched(block) and experiment.tuning_source is None


def tuned_curves(experiment: Experiment, block: dict[str, Any]) -> list[str]:
    """The curves that get a tune job: each lead curve, when the experiment searches itself."""
    if not has_tune_jobs(experiment, block):
        return []
    return [c for c in block["curves"] if lead_of(experiment, c) == c]


def tuned_curve(experiment: Experiment, block: dict[str, Any], curve: str
                ) -> tuple[dict[str, Any], float]:
    """A curve's params and server step size after tuning (the panel's eta, which every curve
    already carries, when the step size is not searched)."""
    curve_params = dict(block["curves"][curve])
    source = tuning_file(experiment, block, curve)
    if source is None:
        return curve_params, block["training"]["server_lr"]
    tuned = read_json(source)
    if lead_of(experiment, curve) == curve:          # searched scheme params (param_search.py)
        curve_params.update(tuned.get("params", {}))
    return with_eta(curve_params, tuned["eta"]), tuned["eta"]


def with_eta(curve_params: dict[str, Any], eta: float) -> dict[str, Any]:
    """The step size enters a design only where the scheme takes an `eta` parameter."""
    return {**curve_params, "eta": eta} if "eta" in curve_params else dict(curve_params)


def lead_of(experiment: Experiment, curve: str) -> str:
    return experiment.tuning_lead(curve) if experiment.tuning_lead else curve


def candidate_scores(params: dict[str, Any], experiment: Experiment,
                     candidates: list[tuple[dict[str, Any], float]], curve: str, trials: range,
                     reference: dict[str, Any]) -> list[dict[str, Any] | NoTransmissionError]:
    """Each candidate's score, candidate = (block, eta): the final gap of each selection trial,
    their mean and its standard error, and the mean normalised accuracy; a candidate whose
    design leaves no device transmitting gets its NoTransmissionError instead.

    All candidates' selection trials run together, in lockstep with their gradients as one
    batched computation (airfl.core.lockstep; benchmarks/tune_batching.py); each
    candidate draws from its own trial streams as when run alone, and its scores equal its
    one-by-one run's up to float reassociation. A candidate whose runs are provably those of
    an earlier one (`run_key`) is not run again: it gets that candidate's scores and
    `same_runs_as`, the earlier candidate's index."""
    from airfl.pipeline.runs import design_trials, run_jobs, trial_frame, trial_jobs   # torch
    from airfl.pipeline.trial import check_channel_model, curve_inputs

    # the candidates differ only in the curve's parameters and eta: one copy of the data
    # and model for all (what lets them run in lockstep)
    shared = curve_inputs(params, experiment, candidates[0][0], training_metrics=False) \
        if candidates else None
    jobs, spans, out, runs_of = [], [], [], {}
    for block, eta in candidates:
        curve_params = with_eta(block["curves"][curve], eta)
        check_channel_model(block, f"{experiment.config_key}.channel")
        try:
            designs = design_trials(params, experiment.id, block, curve, curve_params, trials)
        except NoTransmissionError as error:
            out.append(error)
            continue
        key = run_key(curve, curve_params, eta, designs, shared.model.dim,
                      block["training"]["lr"])
        if key in runs_of:                          # the same runs as an earlier candidate
            out.append(runs_of[key])
            continue
        runs_of[key] = len(out)
        spans.append((len(out), eta, len(jobs)))
        out.append(None)
        jobs += trial_jobs(params, experiment, block, curve, curve_params, eta, designs, trials,
                           final_only=True, shared=shared)
    results = run_jobs(experiment, jobs, batched=True)
    for index, eta, start in spans:
        frame = trial_frame([table for table, _ in results[start:start + len(trials)]], trials)
        gaps, accuracy = final_results(frame, reference)
        out[index] = {"eta": eta, "final_gaps": gaps, **gap_score(gaps),
                      "final_normalized_accuracy": accuracy, **trained_loss_score(frame)}
    return [{**out[entry], "same_runs_as": entry} if isinstance(entry, int) else entry
            for entry in out]


def run_key(curve: str, curve_params: dict[str, Any], eta: float,
            designs: list[dict[str, Any]], dim: int, local_lr: float | None = None) -> str:
    """What determines a candidate's runs on the selection trials: its step size, its
    designs, and its parameters less those its scheme proves inert for every trial's design
    (`Scheme.inert_params`, e.g. FedTOE's T_TOE when no round can reach it). Candidates with
    equal keys make the same runs, so `candidate_scores` runs the first and gives the others
    its scores, marked `same_runs_as` (at +60 dB this cuts FedTOE's 96 grid
    combinations to 24 runs of 3 trials)."""
    from airfl.pipeline.registry import build_scheme
    from airfl.pipeline.runs import stored_design

    scheme = build_scheme(curve, curve_params, local_lr)
    inert = frozenset.intersection(*(scheme.inert_params(*stored_design(d), dim)
                                     for d in designs)) if designs else frozenset()
    kept = {k: v for k, v in curve_params.items() if k not in inert}
    return json.dumps([eta, kept, designs], sort_keys=True, default=str)


def final_results(frame, reference: dict[str, Any]) -> tuple[list[float], float]:
    """Each trial's final sub-optimality gap F(w_T) - F* and the mean normalised accuracy, read
    at the last evaluated round of each trial (accuracy is a number even for a diverged model,
    whose objective is then NaN or inf, so its gap is not finite and its score inf)."""
    last = frame.dropna(subset=["test_accuracy"]).groupby("trial").tail(1)
    gaps = [float(g) for g in last["objective"] - reference["F_star"]]
    return gaps, float(last["test_accuracy"].mean() / reference["accuracy_star"])


TRAINED_LOSS_METRIC = ("relative change of the objective over the clients the scheme trains on, "
                       "(F_S(w_T) - F_S(w_0)) / F_S(w_0), mean over the selection trials")


def trained_loss_score(frame) -> dict[str, Any]:
    """The selection score of a scheme that trains on a fixed subset S of the clients
    (`Scheme.trained_clients`; the frame then has `objective_trained`, F_S): each trial's
    relative change of F_S from the first to the last evaluated round, their mean
    (`selection_score`, lower is better) and its standard error; {} for other schemes (their
    score is the final gap). Why: F_S is what such a scheme descends, so a step size that does
    not move the model scores 0 and any step size that trains scores below it, while the global
    gap of a scheme that never sees some classes can be lowest for a model that barely moves
    (BB-FL Interior: training on the interior classes raises the loss of the others). Not
    finite (diverged): inf."""
    if "objective_trained" not in frame:
        return {}
    rows = frame.dropna(subset=["objective_trained"]).groupby("trial")
    first, last = rows.head(1).set_index("trial"), rows.tail(1).set_index("trial")
    changes = ((last["objective_trained"] - first["objective_trained"])
               / first["objective_trained"]).tolist()
    score = gap_score(changes)
    return {"trained_loss_changes": [float(c) for c in changes],
            "selection_score": score["final_gap"], "selection_score_se": score["final_gap_se"],
            "selection_metric": TRAINED_LOSS_METRIC}


def score_of(entry: dict[str, Any]) -> tuple[float, float]:
    """A candidate's selection score and its standard error: the trained-loss change where the
    candidate has one (`trained_loss_score`), else the mean final gap."""
    if "selection_score" in entry:
        return entry["selection_score"], entry["selection_score_se"]
    return entry["final_gap"], entry["final_gap_se"]


def gap_score(gaps: list[float]) -> dict[str, float]:
    """Mean final gap over the selection trials and its standard error s / sqrt(n) (s with
    n - 1 degrees of freedom; 0 for one trial); inf for both when a trial diverged."""
    values = np.asarray(gaps, dtype=float)
    if values.size == 0 or not np.all(np.isfinite(values)):
        return {"final_gap": math.inf, "final_gap_se": math.inf}
    se = float(values.std(ddof=1) / math.sqrt(values.size)) if values.size > 1 else 0.0
    return {"final_gap": float(values.mean()), "final_gap_se": se}


ETA_SEARCHES = ("all", "descending")
ETA_BATCH = 2
"""Step sizes run together in a descending search: the digital panels' choice is almost always
the largest eta (2 of 5 then run instead of 5), and two keep a lockstep batch of 2 x 3 runs."""


def eta_search(etas: list[float], mode: str, score_many: Callable[[list[float]], list[Any]]
               ) -> tuple[list[Any], list[float]]:
    """The scores of the step sizes a search runs (module docstring: `all`, or `descending`
    until the mean final gap rises), and the step sizes it did not run."""
    if mode not in ETA_SEARCHES:
        raise ValueError(f"eta_search {mode!r}: allowed {', '.join(ETA_SEARCHES)}")
    if mode == "all":
        return score_many(list(etas)), []
    order = sorted(etas, reverse=True)
    scored: list[Any] = []
    while len(scored) < len(order) and not _rose(scored):
        scored += score_many(order[len(scored):len(scored) + ETA_BATCH])
    return scored, order[len(scored):]


def _rose(scored: list[Any]) -> bool:
    """Whether some step size's mean final gap exceeds that of the larger one before it (an
    infeasible candidate stops the search: the stage then reports it)."""
    if any(isinstance(s, Exception) for s in scored):
        return True
    gaps = [score_of(s)[0] for s in scored]
    return any(b > a for a, b in zip(gaps, gaps[1:]))


def eta_edge(eta: float, factors: list[float], eta_max: float) -> dict[str, str]:
    """{"eta": "lowest" | "highest"} when the chosen step size is the smallest or largest of the
    grid factors x eta_max (the largest factor 1 is the bound eta <= 2/(mu + L) the papers
    state, which the grid cannot pass), else {} (param_search.edge_of)."""
    factor = min(factors, key=lambda f: abs(f * eta_max - eta))
    edge = edge_of(factor, list(factors))
    return {"eta": edge} if edge else {}


def select_eta(grid: list[dict[str, Any]]) -> dict[str, Any]:
    """The one-standard-error rule (module docstring): the largest eta whose score is within
    one standard error of the best score, score <= best + SE_best (`score_of`: the mean final
    gap, or the trained-loss change). Returns the chosen eta, the best candidate's eta, score and
    SE, the threshold used and the metric. Reads only the stored scores, so a grid search of
    other parameters can reuse it."""
    finite = [g for g in grid if math.isfinite(score_of(g)[0])]
    if not finite:
        raise ValueError("step-size search: every candidate eta diverged (final gap not finite): "
                         + ", ".join(f"{g['eta']:.4g}" for g in grid))
    best = min(finite, key=lambda g: score_of(g)[0])
    threshold = sum(score_of(best))
    chosen = max((g for g in finite if score_of(g)[0] <= threshold), key=lambda g: g["eta"])
    metric = best.get("selection_metric", "mean final gap")
    return {"eta": chosen["eta"], "score": score_of(chosen)[0], "score_se": score_of(chosen)[1],
            "best_eta": best["eta"], "best_score": score_of(best)[0],
            "best_score_se": score_of(best)[1], "threshold": threshold, "score_metric": metric,
            "rule": "largest eta with score <= best score + one standard error"}
