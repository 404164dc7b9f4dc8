"""A curve's trials split across jobs (params.yaml `trials_per_job`): which jobs, and which
trials each one trains.

A train job runs its trials one after the other, each from its own random streams (seed,
experiment, trial, round, stream) on the design stored for it, so a trial's result does not
depend on the other trials of its job. A curve can then be trained as several jobs (stage
`trials`), each a contiguous block of `trials_per_job` trials named `first-last` (inclusive,
the last block shorter), and the curve's `train` job merges their tables and records in trial
order into the run table and records one job would write, byte for byte (tested through
Snakemake). With `trials_per_job` null, or at least the curve's trials, a curve is one job, as
before.

One exception stays one job: trials that run in lockstep (`airfl.core.lockstep`: full-batch
gradient uploads of one model, Biased FL) share each gradient GEMM, whose summation order
follows how many runs step together, so a split would change their floats. The condition is
`lockstep.batchable`'s, read from the block before any set-up is built.

A light module (no torch): the DAG, the stages and `airfl plan` read it.
"""

from __future__ import annotations

import re
from typing import Any

from airfl.params.config import ConfigError

_BLOCK = re.compile(r"^(\d+)-(\d+)$")


def runs_in_lockstep(experiment: Any, block: dict[str, Any]) -> bool:
    """Whether the curve's trials step together (`airfl.core.lockstep.batchable`'s condition:
    the round loop of the core, full-batch gradient uploads), so a split would change them."""
    training = block["training"]
    return (experiment.trainer is None and training.get("upload") == "gradient"
            and bool(training.get("full_batch")))


def trial_blocks(params: dict[str, Any], experiment: Any, block: dict[str, Any]
                 ) -> list[str] | None:
    """The `first-last` trial blocks of each of the experiment's curves' jobs, or None when a
    curve is one job (`trials_per_job` null or at least the trials, or trials in lockstep)."""
    size = params.get("trials_per_job")
    trials = int(block["scale"]["trials"])
    if size is None or size >= trials or runs_in_lockstep(experiment, block):
        return None
    return [f"{first}-{min(first + size, trials) - 1}" for first in range(0, trials, size)]


def block_trials(name: str, blocks: list[str] | None) -> range:
    """The trials of the block `first-last`, which must be one of the curve's `blocks`
    (`trial_blocks`); stops with a one-line message naming it otherwise."""
    match = _BLOCK.match(name)
    if blocks is None or match is None or name not in blocks:
        allowed = ", ".join(blocks) if blocks else ("none: with these params every trial of "
                                                    "the curve is one train job")
        raise ConfigError(f"trials block {name!r} is not one of this curve's jobs "
                          f"(trials_per_job); allowed: {allowed}")
    return range(int(match[1]), int(match[2]) + 1)
