"""Whether an experiment's trials share one data split or each draw their own: the block's
`partition_per` (declared in the params schema, default `experiment`). A light module (no
torch): the DAG, the captions and the stages read it alike.

* `experiment`: one partition, seeded by (seed, experiment, 'partition'); trials differ in
  placement, fading, noise, initialisation and mini-batches, as in papers that fix a dataset
  split (DP as a perk: "data partition (fixed per dataset split)"; Biased FL and OTA-FD split
  deterministically, device m holding class m or one dominant class; CDPB and the shared
  baselines state no per-trial split).
* `trial`: one partition per trial, seeded by (seed, experiment, 'trial', trial, 'partition'),
  for papers whose trials redraw the data split (LAPA, our reading: Sec. V states no trial
  procedure, and a seed fixes the partition, placement, channel, initialisation and noise), so that the spread over trials includes the
  partition's variance. Every trial's partition is in the experiment's one partition file
  (`airfl.data.partition.save_trial_partitions`): the DAG keeps one partition job and file,
  whose job also reads the number of trials.
"""

from __future__ import annotations

from typing import Any

from airfl.params.config import ConfigError

PARTITION_PER = ("experiment", "trial")

#: how a caption states the setting
PARTITION_WORDS = {"experiment": "one split shared by all trials",
                   "trial": "a split of its own per trial"}


def partition_setting(block: dict[str, Any], where: str = "partition_per") -> str:
    """The block's `partition_per`: `experiment` where the block leaves it out; anything else
    stops, naming the key (`where`) and the allowed values."""
    value = block.get("partition_per", "experiment")
    if value not in PARTITION_PER:
        raise ConfigError(f"{where}: {value!r} is not a partition setting; allowed: "
                          + ", ".join(PARTITION_PER))
    return value


def partition_trials(block: dict[str, Any]) -> range | None:
    """The trials that get a partition of their own (`partition_per: trial`: every trial of
    the block's scale), or None: one partition for the experiment."""
    if partition_setting(block) == "experiment":
        return None
    return range(block["scale"]["trials"])
