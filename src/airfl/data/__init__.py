"""Datasets (torchvision layout, read without torchvision), partitions and heterogeneity."""

from .catalogue import (
    DATASET_NAMES,
    DatasetInfo,
    DatasetUnavailableError,
    canonical_name,
    dataset_files,
    dataset_info,
)
from .fetch import (MIRROR_ENV_VAR, dataset_present, ensure_dataset, find_problems, md5sum,
                    substitute_if_missing)
from .heterogeneity import (
    data_size_weights,
    label_histograms,
    label_pmfs,
    wasserstein_softmax_weights,
    wasserstein_to_global,
)
from .partition import Partition
from .partitioners import (
    PARTITION_KINDS,
    dirichlet,
    dominant_class,
    iid,
    make_partition,
    mixed,
    noniid_classes,
    one_class,
    per_class_subset,
    shards,
)
from .readers import load_dataset, load_labels, to_float_tensor

__all__ = [
    "DATASET_NAMES",
    "MIRROR_ENV_VAR",
    "PARTITION_KINDS",
    "DatasetInfo",
    "DatasetUnavailableError",
    "Partition",
    "canonical_name",
    "data_size_weights",
    "dataset_files",
    "dataset_info",
    "dataset_present",
    "dirichlet",
    "dominant_class",
    "ensure_dataset",
    "find_problems",
    "iid",
    "label_histograms",
    "label_pmfs",
    "load_dataset",
    "load_labels",
    "make_partition",
    "md5sum",
    "mixed",
    "noniid_classes",
    "one_class",
    "per_class_subset",
    "shards",
    "substitute_if_missing",
    "to_float_tensor",
    "wasserstein_softmax_weights",
    "wasserstein_to_global",
]
