"""Stage `train`: run every trial of one curve; write the per-round table and records. Trials
with full-batch gradient uploads (Biased FL) run in lockstep, their gradients batched
(airfl.core.lockstep; 1.5x on a paper-scale Fig. 2(b) train job, benchmarks/README.md)."""

from __future__ import annotations

import json
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from airfl.experiments import final_rounds_back
from airfl.io import (json_form, provenance, read_frame, read_json, record_run, write_csv,
                      write_json)
from airfl.precision import arithmetic_record
from airfl.pipeline import paths
from airfl.pipeline.registry import get_experiment
from airfl.pipeline.effective import effective_curve
from airfl.pipeline.runs import design_made_with, ordered_columns, run_trials
from airfl.pipeline.stages import StageError
from airfl.pipeline.trial import torch_device
from airfl.pipeline.trial_blocks import trial_blocks
from airfl.pipeline.twin_runs import copy_run, twin_run
from airfl.pipeline.stage_params import declared


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
                                    eval_last=final_rounds_back(self.evaluation))
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
    made = provenance({"seed": params["seed"], "profile": params["profile"],
                       "experiment": {k: v for k, v in block.items() if k != "curves"},
                       "curve": curve_params, "server_lr": server_lr, "evaluation": evaluation})
    return CurveJob(experiment, block, curve, curve_params, server_lr, designs, evaluation, made)


def merged_blocks(job: CurveJob, blocks: list[str]) -> tuple[pd.DataFrame, list[dict[str, Any]]]:
    """The run table and records of a split curve (pipeline.trial_blocks): its blocks' tables
    concatenated in trial order, as one job's `trial_frame` concatenates its trials' (equal
    column order and types, so the CSV is one job's, byte for byte), and their records. A block
    made with other parameters than this job's (a stale file) stops the merge."""
    frames, records = [], []
    for name in blocks:
        stored = read_json(paths.trial_block(job.experiment.id, job.curve, name, "json"))
        if stored.get("provenance") != json_form(job.made):
            raise StageError(f"{paths.trial_block(job.experiment.id, job.curve, name, 'json')} "
                             "was trained with other parameters than this train job's; run "
                             f"`snakemake {paths.run_table(job.experiment.id, job.curve)}` to "
                             "train its blocks again")
        frames.append(read_frame(paths.trial_block(job.experiment.id, job.curve, name, "npz")))
        records += read_json(paths.trial_block(job.experiment.id, job.curve, name,
                                               "records.json"))["trials"]
    frame = ordered_columns(pd.concat(frames, ignore_index=True))
    check_finite_losses(frame, job.experiment.id, job.curve)
    return frame, records


@declared("train")
def run(params: dict[str, Any], experiment_id: str, curve: str, progress: bool = True) -> None:
    started = time.perf_counter()
    job = curve_job(params, experiment_id, curve)
    experiment, block, made = job.experiment, job.block, job.made
    blocks = trial_blocks(params, experiment, block)
    twin = twin_run(experiment, block, curve, made, job.designs)
    if twin is not None:            # a source run made with exactly these: its output is ours
        print(f"{experiment_id} {curve}: the stored run of {twin} was made with the same "
              "parameters and designs; copied it, not trained again")
        copy_run(experiment_id, twin, curve)
    else:
        if blocks is None:
            frame, records = job.train(params, range(block["scale"]["trials"]), progress)
        else:                       # split: its blocks' jobs trained it (stage trials)
            frame, records = merged_blocks(job, blocks)
        print(f"train {experiment_id} {curve}: {summary(frame)}"
              + (f" (merged from blocks {', '.join(blocks)})" if blocks else "")
              + f"; parameters {json.dumps(json_form(job.curve_params), sort_keys=True)}, "
              f"server_lr {job.server_lr:g}, evaluation {job.evaluation}, scale "
              f"{json.dumps(json_form(block['scale']), sort_keys=True)}", file=sys.stderr)
        write_csv(paths.run_table(experiment_id, curve), frame)
        write_json(paths.run_records(experiment_id, curve),     # what the privacy stage composes
                   {"curve": curve, "params": job.curve_params, "trials": records})
    # as params.yaml states it (before tuning and calibration): the figure stage checks it is
    # current (its panel keys aside: figure-only tags)
    made["params"]["declared_curve"] = experiment.run_curve(block["curves"][curve])
    write_json(paths.run_info(experiment_id, curve), {"provenance": made})
    record_run(paths.run_table(experiment_id, curve), device=str(torch_device(params)),
               arithmetic=arithmetic_record(block["model"].get("precision", "fp32"),
                                            torch_device(params)),
               copied_from=twin, merged_from=blocks,
               wall_time_s=round(time.perf_counter() - started, 3))
