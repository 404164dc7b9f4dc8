"""Stage `train`: run every trial of one curve; write the per-round table and records. Trials
with full-batch gradient uploads (Biased FL) run in lockstep, their gradients batched
(airfl.core.lockstep; 1.5x on a paper-scale Fig. 2(b) train job, benchmarks/README.md)."""

from __future__ import annotations

import json
import sys
import time
from typing import Any

import pandas as pd

from airfl.runtime.io import json_form, read_frame, read_json, record_run, write_csv, write_json
from airfl.models.precision import arithmetic_record
from airfl.pipeline import paths
from airfl.pipeline.curve_job import (CurveJob, check_finite_losses, curve_job,  # noqa: F401
                                      rebuild_command, stored_designs, summary)
from airfl.pipeline.runs import ordered_columns
from airfl.pipeline.stages import StageError
from airfl.pipeline.trial import torch_device
from airfl.pipeline.trial_blocks import trial_blocks
from airfl.pipeline.twin_runs import copy_run, twin_run
from airfl.pipeline.stage_params import declared


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
