"""What a train job trains with, shared by the stages that train a curve's trials (`train`:
all of them, or a split curve's merge; `trials`: one block of them): the curve's effective
parameters, its stored designs (checked to be made with them), the rounds its readers declare,
the provenance its outputs record, and the checks and summary of what it trained."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from airfl.core.experiments import final_rounds_back, measured_metrics
from airfl.runtime.io import json_form, provenance
from airfl.pipeline import paths
from airfl.pipeline.effective import effective_curve
from airfl.pipeline.registry import get_experiment
from airfl.pipeline.runs import design_made_with, run_trials
from airfl.pipeline.stage_error import StageError


def stored_designs(path: Path, trials: int, made_with: dict[str, Any] | None = None,
                   panel_keys: tuple[str, ...] = (), rebuild: str = "run again"
                   ) -> list[dict[str, Any]]:
    """The design stage's per-trial designs. A file that is not such a design (hand-edited,
    truncated, garbage) is removed, so that the next run rebuilds it instead of this stage
    crashing on it again; so is one made with other parameters than
    `made_with` (runs.design_made_with, the curve without its figure-only `panel_keys`): the
    train stage trains on what the design stage stored, never on a stale design.
    `rebuild`: what the message tells to run (`rebuild_command`)."""
    try:
        stored = json.loads(path.read_text())
        designs = stored["trials"]
        if not (isinstance(designs, list) and len(designs) >= trials
                and all(isinstance(d, dict) for d in designs[:trials])):
            raise ValueError(f"it holds no design for each of the {trials} trials")
    except (ValueError, KeyError, TypeError) as error:
        path.unlink(missing_ok=True)
        raise StageError(f"{path} is not a design made by the design stage "
                         f"({' '.join(str(error).split())}); removed it: {rebuild} and the "
                         "design stage rebuilds it") from None
    if made_with is not None:
        differ = _differences(stored.get("provenance", {}).get("params", {}), made_with,
                              panel_keys)
        if differ:
            path.unlink(missing_ok=True)
            raise StageError(f"{path} was designed with other parameters than the train stage's "
                             f"({', '.join(differ)} differ); removed it: {rebuild} and the "
                             "design stage rebuilds it")
    return designs


def _differences(stored: Any, made_with: dict[str, Any], panel_keys: tuple[str, ...]
                 ) -> list[str]:
    """The parameters (`curve.<key>` for a curve's) whose stored value is not the current one."""
    def run_curve(view: Any) -> Any:
        if not isinstance(view, dict) or not isinstance(view.get("curve"), dict):
            return view
        return {**view, "curve": {k: v for k, v in view["curve"].items() if k not in panel_keys}}

    stored, current = run_curve(stored), run_curve(json_form(made_with))
    if not isinstance(stored, dict):
        return ["all"]
    out = []
    for key in sorted(set(stored) | set(current)):
        a, b = stored.get(key), current.get(key)
        if key == "curve" and isinstance(a, dict) and isinstance(b, dict):
            out += [f"curve.{k}" for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]
        elif a != b:
            out.append(key)
    return out


def check_finite_losses(frame: pd.DataFrame, experiment_id: str, curve: str) -> None:
    """Stop a run whose loss became NaN or infinite at an evaluated round (a diverged step size,
    an overflow) before it writes anything a figure would draw. Rounds that
    were not evaluated hold NaN by design and are not looked at."""
    evaluated = frame[frame["test_accuracy"].notna()]
    for column in ("train_loss", "test_loss", "objective"):
        if column not in evaluated:
            continue
        values = evaluated[column].astype(float)
        bad = evaluated[~values.map(math.isfinite)]
        if len(bad):
            first = bad.sort_values(["trial", "round"]).iloc[0]
            raise StageError(
                f"{experiment_id} curve {curve!r}: {column} is {first[column]} at round "
                f"{int(first['round'])} of trial {int(first['trial'])} (training diverged); no "
                "run table written. Lower the step size or check the curve's parameters.")


FINAL_METRICS = ("test_accuracy", "test_loss", "train_loss", "suboptimality_gap")


def summary(frame: pd.DataFrame) -> str:
    """What a train job did, for its log: trials, rounds and simulated time, and each final
    metric (a trial's last evaluated value) as the mean over the trials."""
    last = frame.groupby("trial")
    trials = frame["trial"].nunique()
    parts = [f"{trials} trial{'s' if trials != 1 else ''}, {int(last['round'].max().max())} "
             f"rounds, {last['time_s'].max().mean():g} s simulated"]
    for column in FINAL_METRICS:
        if column in frame:
            final = frame.dropna(subset=[column]).groupby("trial")[column].last()
            if len(final):
                parts.append(f"final {column} {final.mean():.4g} (mean of {len(final)})")
    return ", ".join(parts)


def rebuild_command(experiment_id: str, curve: str) -> str:
    """The command that rebuilds a curve's design and runs for certain. This job's outputs are
    gone once it fails, but a plain `snakemake` reruns it only when something made from them
    is to be remade: with the figure up to date it finds "nothing to be done" (Snakemake does
    not remake a missing intermediate file by itself); naming the run table asks for it."""
    return (f"run `snakemake {paths.run_table(experiment_id, curve)}` (or `dvc repro`; a plain "
            "`snakemake` does nothing while the figure is up to date)")


@dataclass(frozen=True)
class CurveJob:
    """What a train job (and each block of a split curve's, stage `trials`) trains with: the
    curve's effective parameters, its stored designs, the rounds its readers declare and the
    provenance its outputs record."""

    experiment: Any
    block: dict[str, Any]
    curve: str
    curve_params: dict[str, Any]
    server_lr: float
    designs: list[dict[str, Any]]
    evaluation: str
    made: dict[str, Any]
    training_metrics: bool = True     # measured where read (`Experiment.measures_training`)

    def train(self, params: dict[str, Any], trials: range, progress: bool
              ) -> tuple[pd.DataFrame, list[dict[str, Any]]]:
        """Train `trials` of the curve (their run table rows and records), stopping on a loss
        that is not finite."""
        # the trials in lockstep where they allow it (full-batch gradient uploads: Biased FL),
        # equal to one-by-one runs up to float reassociation (benchmarks/README.md)
        frame, records = run_trials(params, self.experiment, self.block, self.curve,
                                    self.curve_params, self.server_lr,
                                    self.designs[trials.start:trials.stop], trials, progress,
                                    final_only=self.evaluation != "schedule", batched=True,
                                    eval_last=final_rounds_back(self.evaluation),
                                    training_metrics=self.training_metrics)
        check_finite_losses(frame, self.experiment.id, self.curve)
        return frame, records


def curve_job(params: dict[str, Any], experiment_id: str, curve: str) -> CurveJob:
    experiment = get_experiment(experiment_id)
    block = experiment.params(params)
    trials = block["scale"]["trials"]
    curve_params, server_lr = effective_curve(experiment, block, curve, with_calibration=True)
    designed, _ = effective_curve(experiment, block, curve, with_calibration=False)
    designs = stored_designs(paths.design(experiment_id, curve), trials,
                             design_made_with(params, block, designed), experiment.panel_keys,
                             rebuild_command(experiment_id, curve))[:trials]
    # evaluated at the rounds its readers declare (`Experiment.evaluation`; the job's view):
    # a curve that only final-accuracy panels draw is evaluated at round 0 and its last round
    evaluation = experiment.evaluation(curve, block["curves"])
    # and measures the training metrics only where they declare reading one (recorded where
    # it does not: a run that measures them has the provenance it always had)
    training = experiment.measures_training(curve, block["curves"])
    made = provenance({"seed": params["seed"], "profile": params["profile"],
                       "experiment": {k: v for k, v in block.items() if k != "curves"},
                       "curve": curve_params, "server_lr": server_lr, "evaluation": evaluation,
                       **measured_metrics(training)})
    return CurveJob(experiment, block, curve, curve_params, server_lr, designs, evaluation, made,
                    training)
