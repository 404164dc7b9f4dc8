"""Image-classification datasets read directly from torchvision's on-disk formats.

torchvision cannot be imported next to the CPU build of torch used by this project (its only
Linux wheel is a CUDA build), so this module reads the raw files itself:

* MNIST / Fashion-MNIST: gzip-compressed IDX files (LeCun et al.; Xiao et al. 2017,
  arXiv:1708.07747), parsed with ``gzip`` + ``numpy``;
* CIFAR-10 / CIFAR-100 (Krizhevsky 2009): the "python version" pickle batches.

The folder layout under ``root`` and every md5 value are torchvision's (``MNIST.resources``,
``FashionMNIST.resources``, ``CIFAR10.train_list/test_list/meta``, ``CIFAR100`` likewise), so an
existing torchvision data folder can be used unchanged, and the arrays returned by
:func:`load_dataset` are identical to torchvision's ``dataset.data`` / ``dataset.targets``
(images ``uint8``; CIFAR in HWC order).

The files are made available by :func:`airfl.data.fetch.ensure_dataset`; their layout and md5
values are in :mod:`airfl.data.catalogue`.
"""

from __future__ import annotations

import gzip
import os
import pickle
import struct
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from airfl.data.catalogue import _SPECS, DatasetInfo, _Spec, canonical_name, dataset_info
from airfl.data.fetch import _problems, _resolve_mirror, _unavailable

if TYPE_CHECKING:
    import torch

__all__ = ["load_dataset", "load_labels", "standardize_channels", "to_float_tensor"]


# --------------------------------------------------------------------------------------------
# Reading the formats
# --------------------------------------------------------------------------------------------

def _read_idx(path: Path, magic: int) -> np.ndarray:
    """Parse a gzip-compressed IDX file of unsigned bytes (magic 2051 images, 2049 labels)."""
    with gzip.open(path, "rb") as f:
        buf = bytearray(f.read())
    if len(buf) < 4:
        raise ValueError(f"{path.name}: not an IDX file (too short)")
    got = int.from_bytes(buf[:4], "big")
    if got != magic:
        raise ValueError(f"{path.name}: IDX magic {got}, expected {magic}")
    ndim = magic & 0xFF
    header = 4 + 4 * ndim
    dims = struct.unpack(f">{ndim}I", bytes(buf[4:header]))
    data = np.frombuffer(buf, dtype=np.uint8, offset=header)
    if data.size != int(np.prod(dims)):
        raise ValueError(f"{path.name}: {data.size} bytes of data, header says {dims}")
    return data.reshape(dims)


class _CifarUnpickler(pickle.Unpickler):
    """Unpickler that only builds numpy arrays (the CIFAR batches need nothing else)."""

    _ALLOWED = {
        ("numpy.core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "_reconstruct"),
        ("numpy.core.numeric", "_frombuffer"), ("numpy._core.numeric", "_frombuffer"),
        ("numpy", "ndarray"), ("numpy", "dtype"), ("_codecs", "encode"),
    }

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) not in self._ALLOWED:
            raise pickle.UnpicklingError(f"CIFAR batch refers to {module}.{name}; refused")
        if module.startswith("numpy.core."):
            module = "numpy._core." + module.removeprefix("numpy.core.")
        return super().find_class(module, name)


def _read_cifar_batch(path: Path) -> dict[str, Any]:
    """Load one CIFAR pickle batch; keys normalised to ``str`` (real files give bytes/str)."""
    with open(path, "rb") as f:
        # latin1 as torchvision: decodes the Python-2 strings and the numpy buffers correctly.
        entry = _CifarUnpickler(f, encoding="latin1").load()
    if not isinstance(entry, dict):
        raise ValueError(f"{path.name}: not a CIFAR batch (top level is {type(entry).__name__})")
    return {k.decode("latin1") if isinstance(k, bytes) else k: v for k, v in entry.items()}


def _load_cifar(spec: _Spec, root: Path, split: str, labels_only: bool
                ) -> tuple[np.ndarray | None, np.ndarray]:
    xs, ys = [], []
    label_key = "fine_labels" if spec.name == "cifar100" else "labels"
    for fname in spec.splits[split]:
        path = root / spec.folder / fname
        entry = _read_cifar_batch(path)
        if label_key not in entry or "data" not in entry:
            raise ValueError(f"{path.name}: CIFAR batch lacks 'data' or {label_key!r}")
        y = np.asarray(entry[label_key], dtype=np.int64)
        if not labels_only:
            x = np.asarray(entry["data"])
            if x.dtype != np.uint8 or x.ndim != 2 or x.shape[1] != 3072:
                raise ValueError(f"{path.name}: data is {x.dtype} {x.shape}, "
                                 f"expected uint8 [n, 3072]")
            if x.shape[0] != y.shape[0]:
                raise ValueError(f"{path.name}: {x.shape[0]} images but {y.shape[0]} labels")
            xs.append(x)
        ys.append(y)
    y_all = np.concatenate(ys)
    if labels_only:
        return None, y_all
    # Rows are channel-major (1024 R, 1024 G, 1024 B, each row-major 32x32): as torchvision,
    # reshape to [n, 3, 32, 32] and transpose to HWC.
    x_all = np.ascontiguousarray(np.vstack(xs).reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1))
    return x_all, y_all


def _checked_spec(name: str, root: Path, split: str, verify_md5: bool) -> _Spec:
    spec = _SPECS[canonical_name(name)]
    if split not in spec.splits:
        raise ValueError(f"unknown split {split!r}; allowed: {', '.join(spec.splits)}")
    problems = _problems(spec, root, spec.splits[split], verify_md5)
    if problems:
        # load_dataset reads root only; say so instead of "the mirror variable is empty" when
        # it is set
        mirror = _resolve_mirror(None)
        note = (f"{mirror if mirror is not None else 'data.mirror'} not read here (load_dataset "
                f"reads root only): the data stage (`airfl data {spec.name}`) copies the files "
                "from a mirror")
        raise _unavailable(spec, problems, root, mirror,
                           "not attempted by load_dataset (call ensure_dataset first)", [],
                           mirror_note=note)
    return spec


def load_dataset(name: str, root: str | os.PathLike, split: str, verify_md5: bool = True
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Read a split (``"train"`` or ``"test"``) as ``(x uint8, y int64)``.

    MNIST / Fashion-MNIST: ``x`` is ``[n, 28, 28]``; CIFAR-10/100: ``[n, 32, 32, 3]`` (HWC).
    Both equal torchvision's ``.data`` / ``.targets`` (CIFAR-100: fine labels), in file order.
    The split's files are md5-checked first unless ``verify_md5=False``.
    """
    root = Path(root)
    spec = _checked_spec(name, root, split, verify_md5)
    if spec.folder.endswith("/raw"):
        img_name, lbl_name = spec.splits[split]
        x = _read_idx(root / spec.folder / img_name, 2051)
        y = _read_idx(root / spec.folder / lbl_name, 2049).astype(np.int64)
        if x.shape[0] != y.shape[0]:
            raise ValueError(f"{spec.name} {split}: {x.shape[0]} images but {y.shape[0]} labels")
        return x, y
    x, y = _load_cifar(spec, root, split, labels_only=False)
    assert x is not None
    return x, y


def load_labels(name: str, root: str | os.PathLike, split: str, verify_md5: bool = True
                ) -> np.ndarray:
    """Only the labels of a split (int64), cheaper than :func:`load_dataset` for partitioning."""
    root = Path(root)
    spec = _checked_spec(name, root, split, verify_md5)
    if spec.folder.endswith("/raw"):
        return _read_idx(root / spec.folder / spec.splits[split][1], 2049).astype(np.int64)
    return _load_cifar(spec, root, split, labels_only=True)[1]


def to_float_tensor(x: np.ndarray, name: str, normalize: bool = False,
                    mean: Any = None, std: Any = None) -> "torch.Tensor":
    """Convert uint8 images from :func:`load_dataset` to a float32 tensor ``[n, C, H, W]``.

    Pixels are scaled to [0, 1]. With ``mean``/``std`` (one value per channel) each channel is
    then mapped to ``(x/255 - mean)/std``; ``normalize=True`` uses the dataset's canonical
    mean/std (:func:`dataset_info`), as ``transforms.Normalize`` would. Neither: ``x/255``.
    """
    import torch

    info = dataset_info(name)
    arr = np.asarray(x)
    if arr.dtype != np.uint8:
        raise ValueError(f"expected uint8 images, got {arr.dtype}")
    if arr.shape[1:] != info.raw_shape:
        dims = ", ".join(map(str, info.raw_shape))
        raise ValueError(f"{info.name} images must have shape [n, {dims}], got {list(arr.shape)}")
    t = torch.from_numpy(np.ascontiguousarray(arr)).to(torch.float32).div_(255.0)
    t = t.unsqueeze(1) if info.channels == 1 else t.permute(0, 3, 1, 2).contiguous()
    if normalize and mean is None:
        mean, std = info.mean, info.std
    if mean is not None:
        t = standardize_channels(t, mean, std, info)
    return t


def standardize_channels(t: "torch.Tensor", mean: Any, std: Any, info: DatasetInfo
                         ) -> "torch.Tensor":
    """``(t - mean) / std`` per channel of an ``[n, C, H, W]`` tensor (``transforms.Normalize``).

    ``mean`` and ``std`` hold one value per channel of ``info``; a wrong count stops with a
    message naming the dataset and its channels."""
    import torch

    mean, std = list(mean), list(std)
    if len(mean) != info.channels or len(std) != info.channels:
        raise ValueError(f"input normalisation needs one mean and one std per channel: {info.name} "
                         f"has {info.channels} channel(s), got mean {mean} and std {std}")
    if min(std) <= 0:
        raise ValueError(f"input normalisation std must be > 0, got {std}")
    m = torch.tensor(mean, dtype=torch.float32).view(1, -1, 1, 1)
    s = torch.tensor(std, dtype=torch.float32).view(1, -1, 1, 1)
    return (t - m) / s
