"""The result of splitting a training set across federated devices: :class:`Partition`.

Per-device ``int64`` index arrays into the training set, disjoint, each sorted ascending (the set
of samples is what a partition fixes; the order in which a device visits them belongs to the
trainer's own random stream), with their label histograms, saved and loaded as ``.npz`` (one
partition, or one per trial in one file: :func:`save_trial_partitions`). The checks shared by
every partitioner (:mod:`airfl.data.partitioners`) live here too.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["Partition", "load_trial_partition", "save_trial_partitions"]


# --------------------------------------------------------------------------------------------
# Container
# --------------------------------------------------------------------------------------------

@dataclass
class Partition:
    """Per-device sample indices plus what is needed to audit them.

    ``indices[m]``: int64 indices (into the training set) held by device m; disjoint across
    devices. ``labels_per_device``: label histogram ``[N, C]`` (int64). ``is_iid``: per-device
    flag for mixed IID / non-IID partitions (LAPA), else None. ``kind``/``params`` record how
    the partition was made (JSON-serialisable).
    """

    indices: list[np.ndarray]
    labels_per_device: np.ndarray | None = None
    is_iid: np.ndarray | None = None
    kind: str = ""
    params: dict[str, Any] = field(default_factory=dict)

    @property
    def num_devices(self) -> int:
        return len(self.indices)

    @property
    def sizes(self) -> np.ndarray:
        """Number of samples per device, ``[N]`` int64."""
        return np.array([len(ix) for ix in self.indices], dtype=np.int64)

    def all_indices(self) -> np.ndarray:
        """Concatenation of all devices' indices (device order)."""
        if not self.indices:
            return np.zeros(0, dtype=np.int64)
        return np.concatenate(self.indices).astype(np.int64, copy=False)

    def validate(self, num_samples: int | None = None) -> None:
        """Raise ValueError unless indices are int64, in range and disjoint across devices."""
        flat = self.all_indices()
        if flat.size and flat.min() < 0:
            raise ValueError("partition has negative indices")
        if num_samples is not None and flat.size and flat.max() >= num_samples:
            raise ValueError(f"partition index {int(flat.max())} >= dataset size {num_samples}")
        if np.unique(flat).size != flat.size:
            raise ValueError("partition is not disjoint: some samples belong to several devices")

    def to_npz(self, path: str | os.PathLike, labels: np.ndarray | None = None,
               num_classes: int | None = None) -> None:
        """Write the partition atomically as ``.npz`` (CSR style).

        Arrays: ``indices`` (flat int64), ``offsets`` ([N+1] int64, device m owns
        ``indices[offsets[m]:offsets[m+1]]``), ``labels_per_device`` ([N, C] int64; computed from
        ``labels`` if the partition does not carry it), ``is_iid`` (when set), and ``kind`` /
        ``params_json`` strings. Loads with ``allow_pickle=False``.
        """
        _write_npz(path, self._arrays(labels, num_classes))

    def _arrays(self, labels: np.ndarray | None = None, num_classes: int | None = None,
                prefix: str = "") -> dict[str, np.ndarray]:
        """The arrays `to_npz` writes, each name prefixed by `prefix`."""
        hist = self.labels_per_device
        if labels is not None:
            hist = _histograms(np.asarray(labels), self.indices, num_classes)
        if hist is None:
            raise ValueError("to_npz needs labels_per_device: pass labels= to compute it")
        arrays: dict[str, np.ndarray] = {
            "indices": self.all_indices(),
            "offsets": np.concatenate([[0], np.cumsum(self.sizes)]).astype(np.int64),
            "labels_per_device": np.asarray(hist, dtype=np.int64),
            "kind": np.array(self.kind),
            "params_json": np.array(json.dumps(self.params, sort_keys=True)),
        }
        if self.is_iid is not None:
            arrays["is_iid"] = np.asarray(self.is_iid, dtype=bool)
        return {prefix + name: value for name, value in arrays.items()}

    @classmethod
    def from_npz(cls, path: str | os.PathLike) -> "Partition":
        """Read a partition written by :meth:`to_npz` (one per trial: :func:`load_trial_partition`)."""
        with np.load(path, allow_pickle=False) as z:
            if TRIALS_KEY in z.files:
                raise ValueError(f"{path} holds one partition per trial; read one with "
                                 "load_trial_partition(path, trial)")
            return cls._from_arrays(z, path)

    @classmethod
    def _from_arrays(cls, z: Any, path: str | os.PathLike, prefix: str = "") -> "Partition":
        files = set(z.files)
        flat = z[prefix + "indices"].astype(np.int64)
        off = z[prefix + "offsets"].astype(np.int64)
        if off.ndim != 1 or off[0] != 0 or off[-1] != flat.size or np.any(np.diff(off) < 0):
            raise ValueError(f"{path}: inconsistent offsets")
        indices = [flat[off[m]:off[m + 1]].copy() for m in range(off.size - 1)]
        return cls(
            indices=indices,
            labels_per_device=z[prefix + "labels_per_device"].astype(np.int64),
            is_iid=z[prefix + "is_iid"].astype(bool) if prefix + "is_iid" in files else None,
            kind=str(z[prefix + "kind"]) if prefix + "kind" in files else "",
            params=json.loads(str(z[prefix + "params_json"]))
            if prefix + "params_json" in files else {},
        )


#: the array of a per-trial partition file that holds its number of trials
TRIALS_KEY = "trials"


def _trial_prefix(trial: int) -> str:
    return f"trial{int(trial)}_"


def save_trial_partitions(path: str | os.PathLike, partitions: list[Partition],
                          labels: np.ndarray | None = None, num_classes: int | None = None
                          ) -> None:
    """Write one partition per trial into one ``.npz``, atomically: trial t's arrays are
    :meth:`Partition.to_npz`'s, named with the prefix ``trial<t>_``, and ``trials`` holds their
    number (what marks the file as per-trial)."""
    if not partitions:
        raise ValueError("save_trial_partitions needs at least one partition")
    arrays: dict[str, np.ndarray] = {TRIALS_KEY: np.array(len(partitions), dtype=np.int64)}
    for trial, partition in enumerate(partitions):
        arrays.update(partition._arrays(labels, num_classes, _trial_prefix(trial)))
    _write_npz(path, arrays)


def load_trial_partition(path: str | os.PathLike, trial: int) -> Partition:
    """Trial `trial`'s partition of a file written by :func:`save_trial_partitions`."""
    with np.load(path, allow_pickle=False) as z:
        if TRIALS_KEY not in z.files:
            raise ValueError(f"{path} holds one partition for every trial, not one per trial")
        count = int(z[TRIALS_KEY])
        if not 0 <= trial < count:
            raise ValueError(f"{path} holds the partitions of trials 0..{count - 1}, not of "
                             f"trial {trial}")
        return Partition._from_arrays(z, path, _trial_prefix(trial))


def is_per_trial(path: str | os.PathLike) -> bool:
    """Whether a partition file holds one partition per trial (:func:`save_trial_partitions`)."""
    with np.load(path, allow_pickle=False) as z:
        return TRIALS_KEY in z.files


def _write_npz(path: str | os.PathLike, arrays: dict[str, np.ndarray]) -> None:
    """`arrays` as an ``.npz`` at `path`, written to a temporary file and renamed (atomic)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".part")
    try:
        with os.fdopen(fd, "wb") as f:
            np.savez(f, **arrays)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


# --------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------

def _num_classes(labels: np.ndarray, num_classes: int | None) -> int:
    if num_classes is not None:
        if num_classes < 1:
            raise ValueError(f"num_classes must be >= 1, got {num_classes}")
        return int(num_classes)
    return int(labels.max()) + 1 if labels.size else 0


def _histograms(labels: np.ndarray, indices: list[np.ndarray], num_classes: int | None
                ) -> np.ndarray:
    c = _num_classes(labels, num_classes)
    return np.stack([np.bincount(labels[ix], minlength=c)[:c] for ix in indices]
                    ).astype(np.int64) if indices else np.zeros((0, c), dtype=np.int64)


def _check_labels(labels: Any) -> np.ndarray:
    lab = np.asarray(labels)
    if lab.ndim != 1:
        raise ValueError(f"labels must be 1-D, got shape {lab.shape}")
    if lab.size and (not np.issubdtype(lab.dtype, np.integer) or lab.min() < 0):
        raise ValueError("labels must be non-negative integers")
    return lab.astype(np.int64, copy=False)


def _pool(labels: np.ndarray, pool: Any) -> np.ndarray:
    """Candidate indices (default: the whole set), validated: in range, unique."""
    if pool is None:
        return np.arange(labels.size, dtype=np.int64)
    p = np.asarray(pool, dtype=np.int64).ravel()
    if p.size and (p.min() < 0 or p.max() >= labels.size):
        raise ValueError(f"pool indices must lie in [0, {labels.size})")
    if np.unique(p).size != p.size:
        raise ValueError("pool has duplicate indices")
    return p


def _check_devices(num_devices: int) -> int:
    if int(num_devices) != num_devices or num_devices < 1:
        raise ValueError(f"num_devices must be a positive integer, got {num_devices!r}")
    return int(num_devices)


def _finish(labels: np.ndarray, parts: list[np.ndarray], kind: str, params: dict[str, Any],
            num_classes: int | None = None, is_iid: np.ndarray | None = None) -> Partition:
    indices = [np.sort(np.asarray(p, dtype=np.int64)) for p in parts]
    part = Partition(indices=indices, labels_per_device=_histograms(labels, indices, num_classes),
                     is_iid=is_iid, kind=kind, params=params)
    part.validate(labels.size)
    return part
