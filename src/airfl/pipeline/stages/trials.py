"""Stage `trials`: train one block of a split curve's trials (params.yaml `trials_per_job`;
pipeline.trial_blocks), for the curve's train job to merge. Each trial trains from its own
random streams on its stored design, exactly as in the curve's one train job, so the merged
run table is that job's, byte for byte. The block's table is stored with its exact values and
column types (`io.write_frame`), its records and the provenance the train job checks."""

from __future__ import annotations

import sys
import time
from typing import Any

from airfl.params.config import ConfigError
from airfl.runtime.io import record_run, write_frame, write_json
from airfl.pipeline import paths
from airfl.pipeline.registry import get_experiment
from airfl.pipeline.stage_params import declared
from airfl.pipeline.stages import StageError
from airfl.pipeline.curve_job import curve_job, summary
from airfl.pipeline.trial import torch_device
from airfl.pipeline.trial_blocks import block_trials, trial_blocks


@declared("trials")
def run(params: dict[str, Any], experiment_id: str, curve: str, block: str,
        progress: bool = True) -> None:
    started = time.perf_counter()
    experiment = get_experiment(experiment_id)
    try:                            # a block that is not one of the curve's jobs writes nothing
        trials = block_trials(block, trial_blocks(params, experiment, experiment.params(params)))
    except ConfigError as error:
        raise StageError(str(error)) from None
    job = curve_job(params, experiment_id, curve)
    frame, records = job.train(params, trials, progress)
    print(f"trials {experiment_id} {curve} {block}: {summary(frame)}", file=sys.stderr)
    write_frame(paths.trial_block(experiment_id, curve, block, "npz"), frame)
    write_json(paths.trial_block(experiment_id, curve, block, "records.json"),
               {"curve": curve, "trials": records})
    write_json(paths.trial_block(experiment_id, curve, block, "json"),
               {"provenance": job.made, "trials": [trials.start, trials.stop - 1]})
    record_run(paths.trial_block(experiment_id, curve, block, "npz"),
               device=str(torch_device(params)), wall_time_s=round(time.perf_counter() - started, 3))
