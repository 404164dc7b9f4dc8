"""The four image datasets' static facts: torchvision's folder layout, file names, md5 values and
download URLs (``MNIST.resources``, ``FashionMNIST.resources``, ``CIFAR10.train_list/test_list/meta``,
``CIFAR100`` likewise), class counts, image shapes and normalisation constants.

Kept apart from fetching (:mod:`airfl.data.fetch`) and reading (:mod:`airfl.data.readers`) so
that both read one description of where every file lives and what its md5 must be.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["DATASET_NAMES", "DatasetInfo", "DatasetUnavailableError", "canonical_name",
           "dataset_files", "dataset_info"]


class DatasetUnavailableError(RuntimeError):
    """The raw files of a dataset are missing or corrupt and could not be supplied.

    Attributes: ``dataset`` (canonical name), ``problems`` (list of ``(relative path, reason)``),
    ``root`` and ``mirror`` (where it looked; ``mirror`` may be None).
    """

    def __init__(self, message: str, dataset: str, problems: list[tuple[str, str]],
                 root: Path, mirror: Path | None) -> None:
        super().__init__(message)
        self.dataset = dataset
        self.problems = problems
        self.root = root
        self.mirror = mirror



# --------------------------------------------------------------------------------------------
# Static description of the four datasets (torchvision's layout, URLs and md5 values).
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Spec:
    """Where a dataset's files live and how to verify / fetch them."""

    name: str
    folder: str                                  # folder relative to root, posix style
    files: tuple[tuple[str, str], ...]           # (file name inside folder, torchvision md5)
    splits: dict[str, tuple[str, ...]]           # split -> file names it needs (in read order)
    base_urls: tuple[str, ...] = ()              # per-file download mirrors (MNIST style)
    archive_url: str | None = None               # tarball holding ``folder`` (CIFAR style)
    archive_md5: str | None = None

    @property
    def archive_name(self) -> str | None:
        return None if self.archive_url is None else self.archive_url.rsplit("/", 1)[-1]

    def relpath(self, fname: str) -> str:
        return f"{self.folder}/{fname}"


_MNIST_NAMES = ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
                "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz")
_IDX_SPLITS = {"train": _MNIST_NAMES[:2], "test": _MNIST_NAMES[2:]}

_SPECS: dict[str, _Spec] = {
    "mnist": _Spec(
        name="mnist",
        folder="MNIST/raw",
        files=tuple(zip(_MNIST_NAMES, (
            "f68b3c2dcbeaaa9fbdd348bbdeb94873",
            "d53e105ee54ea40749a09fcbcd1e9432",
            "9fb629c4189551a2d022fa330f9573f3",
            "ec29112dd5afa0611ce80d1b7f02629c",
        ))),
        splits=_IDX_SPLITS,
        base_urls=("https://ossci-datasets.s3.amazonaws.com/mnist/",
                   "http://yann.lecun.com/exdb/mnist/"),
    ),
    "fashion_mnist": _Spec(
        name="fashion_mnist",
        folder="FashionMNIST/raw",
        files=tuple(zip(_MNIST_NAMES, (
            "8d4fb7e6c68d591d4c3dfef9ec88bf0d",
            "25c81989df183df01b3e8a0aad5dffbe",
            "bef4ecab320f06d8554ea6380940ec79",
            "bb300cfdad3c16e7a12a480ee83cd310",
        ))),
        splits=_IDX_SPLITS,
        base_urls=("http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/",),
    ),
    "cifar10": _Spec(
        name="cifar10",
        folder="cifar-10-batches-py",
        files=(
            ("data_batch_1", "c99cafc152244af753f735de768cd75f"),
            ("data_batch_2", "d4bba439e000b95fd0a9bffe97cbabec"),
            ("data_batch_3", "54ebc095f3ab1f0389bbae665268c751"),
            ("data_batch_4", "634d18415352ddfa80567beed471001a"),
            ("data_batch_5", "482c414d41f54cd18b22e5b47cb7c3cb"),
            ("test_batch", "40351d587109b95175f43aff81a1287e"),
            ("batches.meta", "5ff9c542aee3614f3951f8cda6e48888"),
        ),
        splits={"train": tuple(f"data_batch_{i}" for i in range(1, 6)),
                "test": ("test_batch",)},
        archive_url="https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz",
        archive_md5="c58f30108f718f92721af3b95e74349a",
    ),
    "cifar100": _Spec(
        name="cifar100",
        folder="cifar-100-python",
        files=(
            ("train", "16019d7e3df5f24257cddd939b257f8d"),
            ("test", "f0ef6b0ae62326f3e7ffdfab6717acfc"),
            ("meta", "7973b15100ade9c7d40fb424638fde48"),
        ),
        splits={"train": ("train",), "test": ("test",)},
        archive_url="https://www.cs.toronto.edu/~kriz/cifar-100-python.tar.gz",
        archive_md5="eb9058c3a382ffc7106e4002c42a8d85",
    ),
}

#: Canonical dataset names.
DATASET_NAMES: tuple[str, ...] = tuple(_SPECS)

_ALIASES = {
    "mnist": "mnist",
    "fashion_mnist": "fashion_mnist", "fashionmnist": "fashion_mnist", "fmnist": "fashion_mnist",
    "fashion-mnist": "fashion_mnist",
    "cifar10": "cifar10", "cifar-10": "cifar10", "cifar_10": "cifar10",
    "cifar100": "cifar100", "cifar-100": "cifar100", "cifar_100": "cifar100",
}


@dataclass(frozen=True)
class DatasetInfo:
    """Static facts about a dataset.

    ``mean``/``std`` are the per-channel normalisation constants commonly used with it (of pixels
    scaled to [0, 1]): MNIST 0.1307/0.3081, Fashion-MNIST 0.2860/0.3530,
    CIFAR-10 (0.4914, 0.4822, 0.4465)/(0.2470, 0.2435, 0.2616), CIFAR-100
    (0.5071, 0.4865, 0.4409)/(0.2673, 0.2564, 0.2762). Supports ``info["num_classes"]`` as well.
    """

    name: str
    num_classes: int
    height: int
    width: int
    channels: int
    num_train: int
    num_test: int
    mean: tuple[float, ...]
    std: tuple[float, ...]

    @property
    def image_shape(self) -> tuple[int, int, int]:
        """Shape of one image as a float tensor, ``(C, H, W)``."""
        return (self.channels, self.height, self.width)

    @property
    def raw_shape(self) -> tuple[int, ...]:
        """Shape of one image as returned by :func:`load_dataset` (``(H, W)`` or ``(H, W, C)``)."""
        if self.channels == 1:
            return (self.height, self.width)
        return (self.height, self.width, self.channels)

    def __getitem__(self, key: str) -> Any:
        return getattr(self, key)


_INFO: dict[str, DatasetInfo] = {
    "mnist": DatasetInfo("mnist", 10, 28, 28, 1, 60000, 10000, (0.1307,), (0.3081,)),
    "fashion_mnist": DatasetInfo("fashion_mnist", 10, 28, 28, 1, 60000, 10000,
                                 (0.2860,), (0.3530,)),
    "cifar10": DatasetInfo("cifar10", 10, 32, 32, 3, 50000, 10000,
                           (0.4914, 0.4822, 0.4465), (0.2470, 0.2435, 0.2616)),
    "cifar100": DatasetInfo("cifar100", 100, 32, 32, 3, 50000, 10000,
                            (0.5071, 0.4865, 0.4409), (0.2673, 0.2564, 0.2762)),
}


def canonical_name(name: str) -> str:
    """Map a dataset name or alias (``fmnist``, ``cifar-10``, ...) to its canonical name."""
    key = str(name).strip().lower()
    if key not in _ALIASES:
        raise ValueError(f"unknown dataset {name!r}; allowed: {', '.join(DATASET_NAMES)} "
                         f"(aliases: {', '.join(sorted(set(_ALIASES) - set(DATASET_NAMES)))})")
    return _ALIASES[key]


def dataset_info(name: str) -> DatasetInfo:
    """Number of classes, image shape, channels, split sizes and normalisation constants."""
    return _INFO[canonical_name(name)]


def dataset_files(name: str) -> list[tuple[str, str]]:
    """``(path relative to root, torchvision md5)`` of every raw file of the dataset."""
    spec = _SPECS[canonical_name(name)]
    return [(spec.relpath(f), md5) for f, md5 in spec.files]

