"""Splitting a training set across federated devices (label-skew partitions), by kind.

Every function is pure numpy and deterministic given the ``np.random.Generator`` passed in (no
global random state). Each returns a :class:`~airfl.data.partition.Partition`.

All functions accept ``pool`` (a subset of training indices to split instead of the whole set),
which is how subset-based splits are built (e.g. Biased FL: :func:`per_class_subset` + one class
per device). :func:`make_partition` builds one by name (the pipeline's ``partition`` stage).
"""

from __future__ import annotations

import warnings
from typing import Any, Callable

import numpy as np

from airfl.data.partition import (
    Partition,
    _check_devices,
    _check_labels,
    _finish,
    _num_classes,
    _pool,
)

__all__ = [
    "PARTITION_KINDS",
    "dirichlet",
    "dominant_class",
    "iid",
    "make_partition",
    "mixed",
    "noniid_classes",
    "one_class",
    "per_class_subset",
    "shards",
]


# --------------------------------------------------------------------------------------------
# Partitions
# --------------------------------------------------------------------------------------------

def iid(labels: Any, num_devices: int, rng: np.random.Generator,
        samples_per_device: int | None = None, pool: Any = None,
        balanced: bool = False) -> Partition:
    """IID split: equal-size shares drawn uniformly without replacement.

    Models statistically homogeneous devices (FedAvg's IID baseline, McMahan et al. 2017; the
    split of CDPB's training figures). ``samples_per_device`` defaults to
    ``len(pool) // num_devices`` (the remainder is unused). ``balanced=True`` gives each device
    exactly ``samples_per_device / C`` samples of every class (DP as a perk's "class-balanced"
    IID split, after the authors' code: 50 clients x 120 images of each Fashion-MNIST class).
    """
    lab = _check_labels(labels)
    n_dev = _check_devices(num_devices)
    cand = _pool(lab, pool)
    spd = cand.size // n_dev if samples_per_device is None else int(samples_per_device)
    if spd < 1 or spd * n_dev > cand.size:
        raise ValueError(f"iid: {n_dev} devices x {spd} samples does not fit in "
                         f"{cand.size} samples")
    params = {"samples_per_device": spd, "balanced": bool(balanced)}
    if not balanced:
        drawn = rng.permutation(cand)[: spd * n_dev]
        return _finish(lab, list(drawn.reshape(n_dev, spd)), "iid", params)
    classes = np.unique(lab[cand])
    if spd % classes.size:
        raise ValueError(f"iid(balanced): samples_per_device={spd} is not a multiple of the "
                         f"{classes.size} classes")
    per = spd // classes.size
    parts: list[list[np.ndarray]] = [[] for _ in range(n_dev)]
    for c in classes:
        idx_c = rng.permutation(cand[lab[cand] == c])
        if idx_c.size < per * n_dev:
            raise ValueError(f"iid(balanced): class {c} has {idx_c.size} samples, "
                             f"needs {per * n_dev}")
        for m in range(n_dev):
            parts[m].append(idx_c[m * per:(m + 1) * per])
    return _finish(lab, [np.concatenate(p) for p in parts], "iid", params)


def _allocate_shards(counts: np.ndarray, total: int, cap: int) -> np.ndarray:
    """Shards per class so that shards are as equal as possible (Adams apportionment).

    Every class gets one shard, then each further shard goes to the class whose shards are
    currently largest (count / shards), which minimises the largest shard. A class gets at most
    ``cap`` shards (one per device, so no device needs two of the same class) and at most one
    shard per sample.
    """
    limit = np.minimum(counts, cap)
    if counts.size > total:
        raise ValueError(f"shards: {counts.size} classes cannot be covered by {total} class-pure "
                         f"shards; use a pool with fewer classes or class_pure=False")
    if limit.sum() < total:
        raise ValueError(f"shards: cannot cut {total} class-pure shards with at most {cap} per "
                         f"class (one per device); lower classes_per_device")
    n = np.ones(counts.size, dtype=np.int64)
    for _ in range(total - counts.size):
        size = np.where(n < limit, counts / n, -np.inf)
        n[int(np.argmax(size))] += 1
    return n


def _first_repeat(row: np.ndarray) -> int:
    """Position of the first entry of ``row`` equal to an earlier one."""
    seen: set[int] = set()
    for t, c in enumerate(row.tolist()):
        if c in seen:
            return t
        seen.add(c)
    raise ValueError("row has no repeated entry")


def _assign_distinct(shard_class: np.ndarray, n_dev: int, k: int,
                     rng: np.random.Generator) -> np.ndarray:
    """Give each device k shards with pairwise different classes, when possible.

    Random assignment (a permutation of the shards, k per device), then repair: a device holding
    a class twice swaps one of those shards with another device's shard such that neither ends up
    with a repeated class (each swap removes one repetition, so this terminates). If no swap
    exists, fall back to striping the class-sorted shards (device i gets positions i, i+N, ...),
    which is repetition-free whenever no class has more than N shards.
    """
    assign = rng.permutation(shard_class.size).reshape(n_dev, k)
    cls = shard_class[assign]
    for _ in range(shard_class.size + 1):
        bad = [d for d in range(n_dev) if np.unique(cls[d]).size < k]
        if not bad:
            return assign
        d = bad[0]
        s = _first_repeat(cls[d])
        c = cls[d, s]
        rest_d = set(np.delete(cls[d], s).tolist())
        swapped = False
        for e in rng.permutation(n_dev):
            if e == d or c in cls[e]:
                continue
            for t in range(k):
                if cls[e, t] not in rest_d:
                    assign[d, s], assign[e, t] = assign[e, t], assign[d, s]
                    cls[d, s], cls[e, t] = cls[e, t], cls[d, s]
                    swapped = True
                    break
            if swapped:
                break
        if not swapped:
            break
    # Fallback: stripe the shards sorted by (randomly ordered) class.
    class_rank = rng.permutation(int(shard_class.max()) + 1)
    order = np.lexsort((rng.permutation(shard_class.size), class_rank[shard_class]))
    assign = order.reshape(k, n_dev).T[rng.permutation(n_dev)]
    cls = shard_class[assign]
    if any(np.unique(row).size < k for row in cls):
        warnings.warn("shards: some device holds two shards of the same class (a class has more "
                      "shards than there are devices)", RuntimeWarning, stacklevel=3)
    return assign


def shards(labels: Any, num_devices: int, classes_per_device: int, rng: np.random.Generator,
           pool: Any = None, class_pure: bool = True) -> Partition:
    """Sort-and-shard label skew: each device holds ``classes_per_device`` (k) shards of k classes.

    McMahan et al. 2017 (FedAvg, "pathological non-IID"): sort the samples by label, cut
    ``num_devices * k`` shards, give each device k shards. Used by DP as a perk's non-IID
    split (k = 2, each Fashion-MNIST class cut into 10 shards of 600) and
    as a generic "k classes per device" partition.

    With ``class_pure=True`` (default) every shard lies inside one class: the number of shards
    per class is chosen to make shards as equal as possible (``_allocate_shards``; at most one per
    device) and each class is cut into near-equal shards, so each device has exactly k distinct
    classes even when classes are unequal (MNIST: device sizes then differ by up to about 15 %
    for N = 20, k = 2); on balanced data (Fashion-MNIST, CIFAR) shards are exactly equal, as in
    the classic scheme. ``class_pure=False`` is McMahan's literal scheme: equal shards along the
    label-sorted order (a shard may straddle two classes; its class is its majority label).
    Shards of different classes per device are ensured when possible (see ``_assign_distinct``).
    """
    lab = _check_labels(labels)
    n_dev = _check_devices(num_devices)
    k = int(classes_per_device)
    if k < 1:
        raise ValueError(f"shards: classes_per_device must be >= 1, got {classes_per_device!r}")
    cand = _pool(lab, pool)
    total = n_dev * k
    if cand.size < total:
        raise ValueError(f"shards: {cand.size} samples cannot make {total} shards")
    # Random order within each class, classes in ascending label order.
    shuffled = rng.permutation(cand)
    ordered = shuffled[np.argsort(lab[shuffled], kind="stable")]
    if class_pure:
        classes, counts = np.unique(lab[ordered], return_counts=True)
        n_shards = _allocate_shards(counts, total, n_dev)
        pieces, shard_class = [], []
        for c, block, ns in zip(classes, np.split(ordered, np.cumsum(counts)[:-1]), n_shards):
            for piece in np.array_split(block, ns):
                pieces.append(piece)
                shard_class.append(c)
        shard_cls = np.asarray(shard_class, dtype=np.int64)
    else:
        pieces = np.array_split(ordered, total)
        shard_cls = np.array([np.bincount(lab[p]).argmax() for p in pieces], dtype=np.int64)
    assign = _assign_distinct(shard_cls, n_dev, k, rng)
    parts = [np.concatenate([pieces[s] for s in row]) for row in assign]
    return _finish(lab, parts, "shards",
                   {"classes_per_device": k, "class_pure": bool(class_pure)})


def one_class(labels: Any, num_devices: int, rng: np.random.Generator,
              samples_per_device: int | None = None, pool: Any = None,
              num_classes: int | None = None) -> Partition:
    """Extreme label skew: device m holds only class ``m mod C``.

    Used by Biased FL (Sec. V: 10 devices, device m <-> one MNIST class,
    100 samples each; there device index 0 holds class 0). Devices sharing a class (N > C) split
    that class's candidates evenly at random. With ``samples_per_device=None`` a device owning a
    class alone gets all of its candidates, deterministically (no randomness used); otherwise
    ``samples_per_device`` random candidates of its class. ``pool`` restricts the candidates
    (e.g. ``per_class_subset(labels, 100)``).
    """
    lab = _check_labels(labels)
    n_dev = _check_devices(num_devices)
    c_num = _num_classes(lab, num_classes)
    cand = _pool(lab, pool)
    parts: list[np.ndarray] = [np.zeros(0, dtype=np.int64)] * n_dev
    for c in range(min(c_num, n_dev)):
        devices = list(range(c, n_dev, c_num))
        idx_c = np.sort(cand[lab[cand] == c])
        need = len(devices) * (samples_per_device or 1)
        if idx_c.size < need:
            raise ValueError(f"one_class: class {c} has {idx_c.size} candidates, needs {need}")
        if samples_per_device is None:
            chunks = [idx_c] if len(devices) == 1 else np.array_split(rng.permutation(idx_c),
                                                                        len(devices))
        else:
            spd = int(samples_per_device)
            drawn = rng.permutation(idx_c)[: spd * len(devices)]
            chunks = list(drawn.reshape(len(devices), spd))
        for m, chunk in zip(devices, chunks):
            parts[m] = chunk
    return _finish(lab, parts, "one_class",
                   {"samples_per_device": samples_per_device, "num_classes": c_num}, c_num)


def per_class_subset(labels: Any, per_class: int, num_classes: int | None = None) -> np.ndarray:
    """The first ``per_class`` indices of every class, in canonical file order (sorted, int64).

    Biased FL (Sec. V; our reading of which images): the 1000-sample MNIST training subset is
    the first 100 images of each class in the canonical training-file order (deterministic, no
    seed).
    Combine with :func:`one_class` (``pool=``) for the Biased FL partition.
    """
    lab = _check_labels(labels)
    out = []
    for c in range(_num_classes(lab, num_classes)):
        idx_c = np.flatnonzero(lab == c)
        if idx_c.size < per_class:
            raise ValueError(f"per_class_subset: class {c} has {idx_c.size} samples, "
                             f"fewer than {per_class}")
        out.append(idx_c[:per_class])
    return np.sort(np.concatenate(out)).astype(np.int64) if out else np.zeros(0, np.int64)


def dirichlet(labels: Any, num_devices: int, alpha: float, rng: np.random.Generator,
              min_size: int = 10, pool: Any = None, max_tries: int = 1000) -> Partition:
    """Label-skew with Dirichlet(alpha) class proportions.

    For every class, its samples are divided among the devices in proportions drawn from
    Dirichlet(alpha * 1_N) (the per-class form of Hsu et al. 2019, arXiv:1909.06335, as
    implemented by Yurochkin et al. 2019 / Wang et al. 2020 FedMA); small alpha means strong
    skew, large alpha approaches IID. The whole draw is repeated until every device has at
    least ``min_size`` samples (ValueError after ``max_tries``).
    """
    lab = _check_labels(labels)
    n_dev = _check_devices(num_devices)
    if not alpha > 0:
        raise ValueError(f"dirichlet: alpha must be > 0, got {alpha!r}")
    cand = _pool(lab, pool)
    if min_size * n_dev > cand.size:
        raise ValueError(f"dirichlet: min_size={min_size} x {n_dev} devices exceeds "
                         f"{cand.size} samples")
    classes = np.unique(lab[cand])
    for _ in range(max_tries):
        buckets: list[list[np.ndarray]] = [[] for _ in range(n_dev)]
        for c in classes:
            idx_c = rng.permutation(cand[lab[cand] == c])
            p = rng.dirichlet(np.full(n_dev, float(alpha)))
            cuts = np.minimum((np.cumsum(p)[:-1] * idx_c.size).astype(np.int64), idx_c.size)
            for m, piece in enumerate(np.split(idx_c, cuts)):
                buckets[m].append(piece)
        parts = [np.concatenate(b) for b in buckets]
        if min(p.size for p in parts) >= min_size:
            return _finish(lab, parts, "dirichlet", {"alpha": float(alpha), "min_size": min_size})
    raise ValueError(f"dirichlet: no draw gave every device >= {min_size} samples in "
                     f"{max_tries} tries (alpha={alpha}, {n_dev} devices); raise alpha or "
                     f"lower min_size")


def noniid_classes(j: int, classes_per_noniid: int = 2, num_classes: int = 10) -> list[int]:
    """Classes of the j-th non-IID device of the LAPA mixed partition (LAPA Sec. V-A; which
    two classes each device holds is our reading, the paper does not list them).

    c1 = (k j + floor(j / (C // k))) mod C and c_i = (c1 + i) mod C; with k = 2, C = 10 this is
    c1 = (2j + floor(j/5)) mod 10, c2 = (c1 + 1) mod 10 (each class used <= 3 times
    over 15 devices).
    """
    k, c_num = int(classes_per_noniid), int(num_classes)
    if not 1 <= k <= c_num:
        raise ValueError(f"classes_per_noniid must be in [1, {c_num}], got {classes_per_noniid}")
    c1 = (k * j + j // max(c_num // k, 1)) % c_num
    return [(c1 + i) % c_num for i in range(k)]


def mixed(labels: Any, num_iid: int, num_noniid: int, size_range: tuple[int, int],
          classes_per_noniid: int, rng: np.random.Generator, pool: Any = None,
          num_classes: int | None = None, max_tries: int = 100) -> Partition:
    """LAPA's mix of IID and few-class devices with unequal sizes (LAPA Sec. V-A).

    Sizes |D_k| are uniform integers in ``size_range`` (inclusive), drawn first so that one seed
    gives the same sizes for every type mix; then which devices are IID is a seeded random
    choice. Order (our reading; the paper does not say): the IID devices are drawn
    first, uniformly without replacement from the whole pool; the non-IID devices are then filled
    from the remainder, non-IID device j (j-th in device order) getting classes
    :func:`noniid_classes` with an equal share of its samples each (extra samples to the first
    classes). If a class runs short, everything is redrawn (sizes included). ``is_iid`` marks the
    IID devices.
    """
    lab = _check_labels(labels)
    n_iid, n_non = int(num_iid), int(num_noniid)
    if n_iid < 0 or n_non < 0 or n_iid + n_non < 1:
        raise ValueError(f"mixed: need num_iid, num_noniid >= 0 with a positive sum, got "
                         f"{num_iid}, {num_noniid}")
    lo, hi = (int(v) for v in size_range)
    if not 1 <= lo <= hi:
        raise ValueError(f"mixed: size_range must satisfy 1 <= low <= high, got {size_range!r}")
    c_num = _num_classes(lab, num_classes)
    k = int(classes_per_noniid)
    cand = _pool(lab, pool)
    n_dev = n_iid + n_non
    for _ in range(max_tries):
        sizes = rng.integers(lo, hi + 1, size=n_dev)
        is_iid = np.zeros(n_dev, dtype=bool)
        is_iid[rng.choice(n_dev, size=n_iid, replace=False)] = True
        parts = _fill_mixed(lab, cand, sizes, is_iid, k, c_num, rng)
        if parts is not None:
            return _finish(lab, parts, "mixed",
                           {"num_iid": n_iid, "num_noniid": n_non, "size_range": [lo, hi],
                            "classes_per_noniid": k}, c_num, is_iid)
    raise ValueError(f"mixed: could not fit the devices in {max_tries} draws (a class ran short "
                     f"every time); shrink size_range")


def _fill_mixed(lab: np.ndarray, cand: np.ndarray, sizes: np.ndarray, is_iid: np.ndarray,
                k: int, c_num: int, rng: np.random.Generator) -> list[np.ndarray] | None:
    """One attempt of :func:`mixed`; None if the pool (or a class of the remainder) runs short."""
    if sizes[is_iid].sum() > cand.size:
        return None
    perm = rng.permutation(cand)
    parts: list[np.ndarray] = [np.zeros(0, np.int64)] * sizes.size
    pos = 0
    for m in np.flatnonzero(is_iid):
        parts[m] = perm[pos:pos + sizes[m]]
        pos += sizes[m]
    rest = perm[pos:]                                   # random order, so take from the front
    by_class = {c: rest[lab[rest] == c] for c in range(c_num)}
    used = dict.fromkeys(range(c_num), 0)
    for j, m in enumerate(np.flatnonzero(~is_iid)):
        share = np.full(k, sizes[m] // k)
        share[: sizes[m] % k] += 1
        chunks = []
        for c, n_c in zip(noniid_classes(j, k, c_num), share):
            if used[c] + n_c > by_class[c].size:
                return None
            chunks.append(by_class[c][used[c]:used[c] + n_c])
            used[c] += n_c
        parts[m] = np.concatenate(chunks)
    return parts


def dominant_class(labels: Any, num_devices: int, rng: np.random.Generator,
                   dominant: int, others: int, pool: Any = None,
                   num_classes: int | None = None) -> Partition:
    """Device m gets ``dominant`` samples of class ``m mod C`` and ``others`` of every other class.

    OTA-FD's non-IID MNIST split (paper appendix: 1110 of one class + 10 of each of
    the other nine, 1200 per device). Samples are drawn at random without replacement.
    """
    lab = _check_labels(labels)
    n_dev = _check_devices(num_devices)
    c_num = _num_classes(lab, num_classes)
    cand = _pool(lab, pool)
    by_class = {c: rng.permutation(cand[lab[cand] == c]) for c in range(c_num)}
    used = dict.fromkeys(range(c_num), 0)
    parts = []
    for m in range(n_dev):
        chunks = []
        for c in range(c_num):
            n_c = int(dominant) if c == m % c_num else int(others)
            if used[c] + n_c > by_class[c].size:
                raise ValueError(f"dominant_class: class {c} has too few samples "
                                 f"({by_class[c].size}) for {n_dev} devices")
            chunks.append(by_class[c][used[c]:used[c] + n_c])
            used[c] += n_c
        parts.append(np.concatenate(chunks))
    return _finish(lab, parts, "dominant_class", {"dominant": int(dominant),
                                                  "others": int(others)}, c_num)


# --------------------------------------------------------------------------------------------
# Dispatcher
# --------------------------------------------------------------------------------------------

def _mixed_kind(labels, num_devices, rng, *, num_iid, size_range, classes_per_noniid=2,
                num_noniid=None, **kw):
    n_non = num_devices - num_iid if num_noniid is None else num_noniid
    if num_iid + n_non != num_devices:
        raise ValueError(f"mixed: num_iid + num_noniid = {num_iid + n_non} != "
                         f"num_devices = {num_devices}")
    return mixed(labels, num_iid, n_non, size_range, classes_per_noniid, rng, **kw)


def _per_class_one_class(labels, num_devices, rng, *, per_class, samples_per_device=None,
                         num_classes=None):
    subset = per_class_subset(labels, per_class, num_classes)
    part = one_class(labels, num_devices, rng, samples_per_device=samples_per_device,
                     pool=subset, num_classes=num_classes)
    part.kind = "per_class_one_class"
    part.params["per_class"] = int(per_class)
    return part


# kind -> (builder(labels, num_devices, rng, **options), required options, optional options)
_KINDS: dict[str, tuple[Callable[..., Partition], frozenset[str], frozenset[str]]] = {
    "iid": (lambda lab, n, rng, **o: iid(lab, n, rng, **o),
            frozenset(), frozenset({"samples_per_device", "pool", "balanced"})),
    "shards": (lambda lab, n, rng, **o: shards(lab, n, o.pop("classes_per_device"), rng, **o),
               frozenset({"classes_per_device"}), frozenset({"pool", "class_pure"})),
    "one_class": (lambda lab, n, rng, **o: one_class(lab, n, rng, **o),
                  frozenset(), frozenset({"samples_per_device", "pool", "num_classes"})),
    "dirichlet": (lambda lab, n, rng, **o: dirichlet(lab, n, o.pop("alpha"), rng, **o),
                  frozenset({"alpha"}), frozenset({"min_size", "pool", "max_tries"})),
    "mixed": (_mixed_kind, frozenset({"num_iid", "size_range"}),
              frozenset({"classes_per_noniid", "num_noniid", "pool", "num_classes",
                         "max_tries"})),
    "per_class_one_class": (_per_class_one_class, frozenset({"per_class"}),
                            frozenset({"samples_per_device", "num_classes"})),
    "dominant_class": (lambda lab, n, rng, **o: dominant_class(lab, n, rng, **o),
                       frozenset({"dominant", "others"}), frozenset({"pool", "num_classes"})),
}

#: Partition kinds understood by :func:`make_partition`.
PARTITION_KINDS: tuple[str, ...] = tuple(_KINDS)


def make_partition(kind: str, labels: Any, num_devices: int, rng: np.random.Generator,
                   **options: Any) -> Partition:
    """Build a partition by name (the pipeline's ``partition`` stage entry point).

    ``kind`` is one of :data:`PARTITION_KINDS`; ``options`` are the keyword arguments of the
    matching function. Unknown kinds, unknown options and missing required options raise
    ValueError naming the allowed values.
    """
    if kind not in _KINDS:
        raise ValueError(f"unknown partition kind {kind!r}; allowed: {', '.join(PARTITION_KINDS)}")
    builder, required, optional = _KINDS[kind]
    allowed = required | optional
    unknown = sorted(set(options) - allowed)
    if unknown:
        raise ValueError(f"partition kind {kind!r}: unknown option(s) {', '.join(unknown)}; "
                         f"allowed: {', '.join(sorted(allowed)) or 'none'}")
    missing = sorted(required - set(options))
    if missing:
        raise ValueError(f"partition kind {kind!r}: missing required option(s) "
                         f"{', '.join(missing)}; required: {', '.join(sorted(required))}")
    return builder(labels, _check_devices(num_devices), rng, **dict(options))
