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

:func:`ensure_dataset` makes the files available (root, then a local mirror, then download) and
returns a small manifest that the pipeline stores as a stage output.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import pickle
import shutil
import struct
import tarfile
import tempfile
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import torch

__all__ = [
    "DatasetInfo",
    "DatasetUnavailableError",
    "DATASET_NAMES",
    "MIRROR_ENV_VAR",
    "canonical_name",
    "dataset_files",
    "dataset_info",
    "ensure_dataset",
    "find_problems",
    "load_dataset",
    "load_labels",
    "md5sum",
    "standardize_channels",
    "to_float_tensor",
]

#: Environment variable naming a local folder in torchvision layout (used when ``mirror`` is None).
MIRROR_ENV_VAR = "AIRFL_DATA_MIRROR"

#: Socket timeout (seconds) of every download request; without internet they fail quickly.
DOWNLOAD_TIMEOUT_S = 20.0

#: Overall deadline (seconds) of one file's download: the socket timeout bounds each read, so a
#: server trickling a byte now and then kept a download alive forever (issue 18, item 5).
#: CIFAR-100's 169 MB take ~3 min at 1 MB/s.
DOWNLOAD_DEADLINE_S = 1800.0

_CHUNK = 1 << 20


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
    scaled to [0, 1]): MNIST 0.1307/0.3081, Fashion-MNIST 0.2860/0.3530 (LAPA spec §8),
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


# --------------------------------------------------------------------------------------------
# Checking files
# --------------------------------------------------------------------------------------------

def md5sum(path: str | os.PathLike) -> str:
    """Hex md5 of a file (read in 1 MiB chunks)."""
    h = hashlib.md5(usedforsecurity=False)
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            h.update(chunk)
    return h.hexdigest()


def _status(path: Path, expected: str, verify_md5: bool) -> str | None:
    """None when ``path`` is usable, else a short reason ("missing", "md5 mismatch ...")."""
    if not path.is_file():
        return "missing"
    if verify_md5:
        got = md5sum(path)
        if got != expected:
            return f"wrong md5 (found {got}, expected {expected})"
    return None


def _problems(spec: _Spec, root: Path, fnames: tuple[str, ...] | None,
              verify_md5: bool) -> list[tuple[str, str]]:
    wanted = dict(spec.files)
    names = tuple(wanted) if fnames is None else fnames
    out = []
    for fname in names:
        reason = _status(root / spec.folder / fname, wanted[fname], verify_md5)
        if reason is not None:
            out.append((fname, reason))
    return out


def find_problems(name: str, root: str | os.PathLike, verify_md5: bool = True
                  ) -> list[tuple[str, str]]:
    """List ``(relative path, reason)`` of the dataset's files under ``root`` that are unusable."""
    spec = _SPECS[canonical_name(name)]
    return [(spec.relpath(f), r) for f, r in _problems(spec, Path(root), None, verify_md5)]


def dataset_present(name: str, root: str | os.PathLike, mirror: str | os.PathLike | None = None
                    ) -> bool:
    """Whether the dataset can be supplied without a download: its files (or, for CIFAR, its
    tarball) are under ``root`` or the mirror (``$AIRFL_DATA_MIRROR`` when None). Files are
    only looked for here; ensure_dataset md5-checks them when it supplies them."""
    spec = _SPECS[canonical_name(name)]
    for place in (Path(root), _resolve_mirror(mirror)):
        if place is None:
            continue
        if not _problems(spec, place, None, verify_md5=False):
            return True
        if spec.archive_name is not None and (place / spec.archive_name).is_file():
            return True
    return False


# --------------------------------------------------------------------------------------------
# Supplying files: atomic writes, mirror copies, archive extraction, downloads
# --------------------------------------------------------------------------------------------

def _write_atomically(dest: Path, fill, expected_md5: str | None) -> None:
    """Write ``dest`` via a temporary file in the same folder and ``os.replace``.

    ``fill(tmp_path)`` writes the content. When ``expected_md5`` is given the temporary file is
    checked first, so a wrong or truncated file never appears under its final name.
    """
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".part")
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        fill(tmp)
        if expected_md5 is not None:
            got = md5sum(tmp)
            if got != expected_md5:
                raise ValueError(f"wrong md5 (found {got}, expected {expected_md5})")
        os.replace(tmp, dest)
    finally:
        if tmp.exists():
            tmp.unlink()


def _from_mirror(spec: _Spec, root: Path, mirror: Path, todo: list[str],
                 verify_md5: bool, notes: list[str]) -> None:
    """Copy the files named in ``todo`` from ``mirror`` (torchvision layout) into ``root``."""
    wanted = dict(spec.files)
    for fname in todo:
        src = mirror / spec.folder / fname
        if _status(src, wanted[fname], verify_md5) is not None:
            continue
        try:
            _write_atomically(root / spec.folder / fname,
                              lambda tmp, s=src: shutil.copyfile(s, tmp),
                              wanted[fname] if verify_md5 else None)
        except (OSError, ValueError) as exc:
            notes.append(f"copy of {spec.relpath(fname)} from mirror failed: {exc}")


def _extract_from_archive(spec: _Spec, root: Path, archive: Path, todo: list[str],
                          verify_md5: bool, notes: list[str]) -> None:
    """Extract the files in ``todo`` from a CIFAR tarball into ``root/<folder>``.

    Safe by construction: only the expected member names are read (as regular files, through
    ``extractfile``) and written to destinations computed here, never to paths from the archive.
    """
    wanted = dict(spec.files)
    if verify_md5 and spec.archive_md5 is not None:
        got = md5sum(archive)
        if got != spec.archive_md5:
            notes.append(f"{archive.name}: wrong md5 (found {got}, expected {spec.archive_md5})")
            return
    try:
        with tarfile.open(archive, "r:gz") as tar:
            members = {m.name.removeprefix("./"): m for m in tar.getmembers()}
            for fname in todo:
                member = members.get(spec.relpath(fname))
                if member is None or not member.isfile():
                    notes.append(f"{archive.name} has no regular file {spec.relpath(fname)}")
                    continue

                def fill(tmp: Path, m: tarfile.TarInfo = member) -> None:
                    src = tar.extractfile(m)
                    assert src is not None
                    with src, open(tmp, "wb") as out:
                        shutil.copyfileobj(src, out, _CHUNK)

                try:
                    _write_atomically(root / spec.folder / fname, fill,
                                      wanted[fname] if verify_md5 else None)
                except (OSError, ValueError, tarfile.TarError) as exc:
                    notes.append(f"{spec.relpath(fname)} from {archive.name}: {exc}")
    except (OSError, tarfile.TarError, EOFError) as exc:
        notes.append(f"could not read {archive.name}: {exc}")


def _fetch(url: str, tmp: Path, timeout: float, deadline_s: float = DOWNLOAD_DEADLINE_S
           ) -> None:
    """Stream ``url`` into ``tmp`` (stdlib only; ``timeout`` bounds every socket operation,
    ``deadline_s`` the whole download: past it, TimeoutError)."""
    import time

    give_up = time.monotonic() + deadline_s
    req = urllib.request.Request(url, headers={"User-Agent": "airfl-data/1.0"})
    with urllib.request.urlopen(req, timeout=timeout) as resp, open(tmp, "wb") as out:
        while chunk := resp.read1(_CHUNK):
            out.write(chunk)
            if time.monotonic() > give_up:
                raise TimeoutError(f"{url}: not complete after {deadline_s:g} s "
                                   f"({out.tell()} bytes so far); gave up")


def _download(spec: _Spec, root: Path, todo: list[str], verify_md5: bool, timeout: float,
              notes: list[str]) -> None:
    """Fetch missing files: per file from the mirrors (MNIST style) or the tarball (CIFAR)."""
    wanted = dict(spec.files)
    if spec.archive_url is not None:
        archive = root / str(spec.archive_name)
        try:
            _write_atomically(archive, lambda tmp: _fetch(spec.archive_url, tmp, timeout),
                              spec.archive_md5 if verify_md5 else None)
        except (OSError, ValueError, urllib.error.URLError) as exc:
            notes.append(f"download {spec.archive_url} failed: {exc}")
            return
        _extract_from_archive(spec, root, archive, todo, verify_md5, notes)
        return
    dead: set[str] = set()
    for fname in todo:
        for base in spec.base_urls:
            if base in dead:
                continue
            url = base + fname
            try:
                _write_atomically(root / spec.folder / fname,
                                  lambda tmp, u=url: _fetch(u, tmp, timeout),
                                  wanted[fname] if verify_md5 else None)
                break
            except urllib.error.HTTPError as exc:        # server reached: try next mirror
                notes.append(f"download {url} failed: {exc}")
            except (OSError, ValueError, urllib.error.URLError) as exc:
                notes.append(f"download {url} failed: {exc}")
                if not isinstance(exc, ValueError):     # unreachable: skip it for other files
                    dead.add(base)


def _resolve_mirror(mirror: str | os.PathLike | None) -> Path | None:
    if mirror is None:
        mirror = os.environ.get(MIRROR_ENV_VAR) or None
    return None if mirror in (None, "") else Path(mirror)


def _same_dir(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve()
    except OSError:
        return False


def _unavailable(spec: _Spec, problems: list[tuple[str, str]], root: Path,
                 mirror: Path | None, download_note: str, notes: list[str],
                 mirror_note: str | None = None) -> DatasetUnavailableError:
    rel = [(spec.relpath(f), r) for f, r in problems]
    lines = [f"dataset {spec.name!r} is not available: {len(rel)} file(s) missing or corrupt:"]
    lines += [f"  {p}: {r}" for p, r in rel]
    lines.append("looked in:")
    lines.append(f"  root:   {root}")
    if mirror_note is not None:
        lines.append(f"  mirror: {mirror_note}")
    elif mirror is None:
        lines.append(f"  mirror: none (data.mirror is not set and {MIRROR_ENV_VAR} is empty)")
    else:
        lines.append(f"  mirror: {mirror} (the files above are missing or corrupt there too)")
    lines.append(f"  download: {download_note}")
    lines += [f"  note: {n}" for n in notes]
    lines.append(
        f"how to fix: put these files (torchvision layout, e.g. an existing torchvision data "
        f"folder) under {root}, or point data.mirror (or the {MIRROR_ENV_VAR} environment "
        f"variable) at a folder holding them in the same layout"
        + (f", or place {spec.archive_name} in {root}" if spec.archive_name else "")
        + ", or run with download enabled on a machine with internet access.")
    return DatasetUnavailableError("\n".join(lines), spec.name, rel, root, mirror)


def ensure_dataset(name: str, root: str | os.PathLike, mirror: str | os.PathLike | None = None,
                   download: bool = True, verify_md5: bool = True,
                   timeout: float = DOWNLOAD_TIMEOUT_S) -> dict:
    """Make sure the raw files of ``name`` exist under ``root`` (torchvision layout), md5-checked.

    Sources, in order: files already in ``root``; a CIFAR tarball already in ``root``; the local
    ``mirror`` folder (torchvision layout; ``$AIRFL_DATA_MIRROR`` when ``mirror`` is None), from
    its files or its tarball, copied atomically; then, if ``download``, the torchvision URLs
    (stdlib ``urllib``, ``timeout`` seconds per socket operation). Every file is md5-checked
    before it gets its final name. ``verify_md5=False`` accepts files that merely exist (for
    test fixtures; never for experiments).

    Returns the manifest ``{"dataset": name, "files": [{"path", "md5", "bytes"}]}`` with paths
    relative to ``root``. Raises :class:`DatasetUnavailableError` naming each missing or corrupt
    file, where it looked, and how to supply the files.
    """
    spec = _SPECS[canonical_name(name)]
    root = Path(root)
    mirror_path = _resolve_mirror(mirror)
    notes: list[str] = []

    def todo() -> list[str]:
        return [f for f, _ in _problems(spec, root, None, verify_md5)]

    missing = todo()
    if missing and spec.archive_name and (root / spec.archive_name).is_file():
        _extract_from_archive(spec, root, root / spec.archive_name, missing, verify_md5, notes)
        missing = todo()
    if missing and mirror_path is not None and not _same_dir(mirror_path, root):
        _from_mirror(spec, root, mirror_path, missing, verify_md5, notes)
        missing = todo()
        if missing and spec.archive_name and (mirror_path / spec.archive_name).is_file():
            _extract_from_archive(spec, root, mirror_path / spec.archive_name, missing,
                                  verify_md5, notes)
            missing = todo()
    download_note = "disabled (download=False)"
    if missing and download:
        n_before = len(notes)
        _download(spec, root, missing, verify_md5, timeout, notes)
        missing = todo()
        download_note = "attempted, failed (see notes)" if len(notes) > n_before else "attempted"
    if missing:
        raise _unavailable(spec, _problems(spec, root, None, verify_md5), root, mirror_path,
                           download_note, notes)
    return _manifest(spec, root)


def _manifest(spec: _Spec, root: Path) -> dict:
    files = []
    for fname, _ in spec.files:
        path = root / spec.folder / fname
        files.append({"path": spec.relpath(fname), "md5": md5sum(path),
                      "bytes": path.stat().st_size})
    return {"dataset": spec.name, "files": files}


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
        # it is set (issue 18, item 5)
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
