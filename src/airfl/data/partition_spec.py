"""A declared partition (params.yaml `partition`: its `kind` and options) drawn from its stream:
the one place the pipeline's `partition` stage and anything that rebuilds an experiment's split
without the pipeline (the arena's privacy audit) make it, so both get the same split.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from airfl.data.partition import Partition
from airfl.data.partitioners import make_partition, per_class_subset
from airfl.runtime.rng import numpy_generator

#: the declared partition keys that are options of `make_partition` (`kind` names the builder,
#: `pool_per_class` becomes its `pool`)
OPTION_KEYS = ("classes_per_device", "alpha", "min_size", "samples_per_device", "per_class",
               "num_iid", "size_range", "balanced", "class_pure", "dominant", "others")


def partition_stream(seed: int, experiment_id: str, trial: int | None = None
                     ) -> np.random.Generator:
    """The stream a partition is drawn from: (seed, experiment, 'partition') for the
    experiment's one partition, (seed, experiment, 'trial', trial, 'partition') for a trial's."""
    if trial is None:
        return numpy_generator(seed, experiment_id, "partition")
    return numpy_generator(seed, experiment_id, "trial", trial, "partition")


def declared_partition(spec: dict[str, Any], labels: np.ndarray, num_devices: int,
                       generator: np.random.Generator) -> Partition:
    """The partition `spec` declares (its `kind`, the options of OPTION_KEYS, `pool_per_class`:
    the first n images of every class, file order) of `labels` over `num_devices` devices."""
    options = {k: spec[k] for k in OPTION_KEYS if k in spec}
    if "pool_per_class" in spec:
        options["pool"] = per_class_subset(labels, spec["pool_per_class"])
    return make_partition(spec["kind"], labels, num_devices, generator, **options)
