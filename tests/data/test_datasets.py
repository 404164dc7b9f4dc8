"""Tests of airfl.data.catalogue, .fetch and .readers: torchvision layout, md5, mirror, download, formats."""

from __future__ import annotations

import dataclasses
import hashlib
import io
import os
import pickle
import shutil
import struct
import tarfile
from pathlib import Path

import numpy as np
import pytest
import torch

from airfl.data import catalogue, fetch
from airfl.data import (
    DatasetUnavailableError,
    dataset_files,
    dataset_info,
    ensure_dataset,
    load_dataset,
    load_labels,
    to_float_tensor,
)

MNIST_FILES = [p for p, _ in dataset_files("mnist")]


@pytest.fixture(scope="module")
def mirror(mnist_mirror) -> Path:
    """The offline torchvision-layout data folder (conftest: the env variable or ``shared/data``
    beside the repository)."""
    return mnist_mirror


@pytest.fixture(autouse=True)
def _no_env_mirror(monkeypatch):
    """Tests pass mirrors explicitly; an inherited AIRFL_DATA_MIRROR must not leak in."""
    monkeypatch.delenv(fetch.MIRROR_ENV_VAR, raising=False)


def _copy_raw(src_root: Path, dst_root: Path, folder: str = "MNIST/raw") -> None:
    shutil.copytree(src_root / folder, dst_root / folder)
    for p in (dst_root / folder).iterdir():
        p.chmod(0o644)


# ------------------------------------------------------------------------------ metadata

def test_dataset_info_constants():
    assert dataset_info("mnist").mean == (0.1307,) and dataset_info("mnist").std == (0.3081,)
    fm = dataset_info("fmnist")
    assert fm.name == "fashion_mnist" and fm.mean == (0.2860,) and fm.std == (0.3530,)
    c10 = dataset_info("cifar-10")
    assert c10.num_classes == 10 and c10.image_shape == (3, 32, 32) and c10["channels"] == 3
    assert c10.mean == (0.4914, 0.4822, 0.4465) and c10.std == (0.2470, 0.2435, 0.2616)
    c100 = dataset_info("cifar100")
    assert c100.num_classes == 100
    assert c100.mean == (0.5071, 0.4865, 0.4409) and c100.std == (0.2673, 0.2564, 0.2762)
    with pytest.raises(ValueError, match="unknown dataset 'svhn'.*mnist"):
        dataset_info("svhn")


def test_file_lists_match_torchvision():
    files = dict(dataset_files("fashion_mnist"))
    assert files["FashionMNIST/raw/train-images-idx3-ubyte.gz"] == \
        "8d4fb7e6c68d591d4c3dfef9ec88bf0d"
    c10 = dict(dataset_files("cifar10"))
    assert len(c10) == 7 and c10["cifar-10-batches-py/batches.meta"] == \
        "5ff9c542aee3614f3951f8cda6e48888"
    assert dict(dataset_files("cifar100"))["cifar-100-python/train"] == \
        "16019d7e3df5f24257cddd939b257f8d"


# ------------------------------------------------------------------------------ MNIST / FMNIST

def test_ensure_in_place_reads_only(mirror):
    man = ensure_dataset("mnist", mirror, download=False)
    assert man["dataset"] == "mnist"
    assert [f["path"] for f in man["files"]] == MNIST_FILES
    assert [f["md5"] for f in man["files"]] == [m for _, m in dataset_files("mnist")]
    assert man["files"][0]["bytes"] == 9912422
    assert all(not Path(f["path"]).is_absolute() for f in man["files"])


def test_load_mnist(mirror):
    x, y = load_dataset("mnist", mirror, "train")
    assert x.shape == (60000, 28, 28) and x.dtype == np.uint8 and x.flags.writeable
    assert y.dtype == np.int64 and y[:5].tolist() == [5, 0, 4, 1, 9]
    counts = np.bincount(y)
    assert counts[0] == 5923 and counts[1] == 6742 and counts.sum() == 60000
    xt, yt = load_dataset("mnist", mirror, "test")
    assert xt.shape == (10000, 28, 28) and np.bincount(yt)[:2].tolist() == [980, 1135]
    assert np.array_equal(load_labels("mnist", mirror, "test"), yt)


def test_load_fashion_mnist(mirror):
    x, y = load_dataset("fmnist", mirror, "train")
    assert x.shape == (60000, 28, 28) and np.all(np.bincount(y) == 6000)
    yt = load_labels("fashion_mnist", mirror, "test")
    assert yt.shape == (10000,) and np.all(np.bincount(yt) == 1000)


def test_copy_from_mirror_is_complete_and_idempotent(mirror, tmp_path):
    root = tmp_path / "data"
    man = ensure_dataset("mnist", root, mirror=mirror, download=False)
    assert man == ensure_dataset("mnist", mirror, download=False)
    raw = root / "MNIST" / "raw"
    assert sorted(p.name for p in raw.iterdir()) == sorted(Path(p).name for p in MNIST_FILES)
    mtimes = [p.stat().st_mtime_ns for p in raw.iterdir()]
    ensure_dataset("mnist", root, mirror=mirror, download=False)
    assert [p.stat().st_mtime_ns for p in raw.iterdir()] == mtimes       # nothing re-copied


def test_env_var_mirror_used_when_mirror_is_none(mirror, tmp_path, monkeypatch):
    monkeypatch.setenv(fetch.MIRROR_ENV_VAR, str(mirror))
    man = ensure_dataset("mnist", tmp_path, download=False)
    assert len(man["files"]) == 4
    assert load_labels("mnist", tmp_path, "train").shape == (60000,)


def test_tampered_file_is_detected_and_repaired(mirror, tmp_path):
    _copy_raw(mirror, tmp_path)
    bad = tmp_path / "MNIST/raw/train-labels-idx1-ubyte.gz"
    data = bytearray(bad.read_bytes())
    data[100] ^= 0xFF
    bad.write_bytes(bytes(data))
    with pytest.raises(DatasetUnavailableError) as exc:
        ensure_dataset("mnist", tmp_path, download=False)
    msg = str(exc.value)
    assert "MNIST/raw/train-labels-idx1-ubyte.gz: wrong md5" in msg
    assert "expected d53e105ee54ea40749a09fcbcd1e9432" in msg
    assert str(tmp_path) in msg and fetch.MIRROR_ENV_VAR in msg and "data.mirror" in msg
    assert [p for p, _ in exc.value.problems] == ["MNIST/raw/train-labels-idx1-ubyte.gz"]
    with pytest.raises(DatasetUnavailableError, match="wrong md5"):
        load_labels("mnist", tmp_path, "train")
    # A mirror repairs it (atomic copy over the corrupt file).
    ensure_dataset("mnist", tmp_path, mirror=mirror, download=False)
    assert fetch.md5sum(bad) == "d53e105ee54ea40749a09fcbcd1e9432"
    assert not list(bad.parent.glob(".*.part"))


def test_missing_dataset_without_mirror_names_every_file(tmp_path):
    with pytest.raises(DatasetUnavailableError) as exc:
        ensure_dataset("mnist", tmp_path / "nothing", download=False)
    msg = str(exc.value)
    for rel in MNIST_FILES:
        assert f"{rel}: missing" in msg
    assert "mirror: none" in msg and "download=False" in msg
    assert isinstance(exc.value, RuntimeError) and exc.value.dataset == "mnist"


def test_unreachable_download_fails_fast_with_clear_message(tmp_path, monkeypatch):
    spec = dataclasses.replace(catalogue._SPECS["mnist"], base_urls=("http://127.0.0.1:9/mnist/",))
    monkeypatch.setitem(catalogue._SPECS, "mnist", spec)
    with pytest.raises(DatasetUnavailableError) as exc:
        ensure_dataset("mnist", tmp_path, download=True, timeout=2.0)
    msg = str(exc.value)
    assert "http://127.0.0.1:9/mnist/" in msg
    assert msg.count("download http://127.0.0.1:9") == 1      # dead mirror not retried per file


def test_download_path_with_file_urls(mirror, tmp_path, monkeypatch):
    base = (mirror / "FashionMNIST" / "raw").as_uri() + "/"
    spec = dataclasses.replace(catalogue._SPECS["fashion_mnist"],
                               base_urls=("http://127.0.0.1:9/", base))
    monkeypatch.setitem(catalogue._SPECS, "fashion_mnist", spec)
    man = ensure_dataset("fashion_mnist", tmp_path, download=True, timeout=2.0)
    assert [f["md5"] for f in man["files"]] == [m for _, m in dataset_files("fashion_mnist")]


# ------------------------------------------------------------------------------ CIFAR (fake files)

def _pixel(i, c, h, w):
    return (7 * i + 50 * c + 3 * h + w) % 256


def _rows(start: int, n: int) -> np.ndarray:
    """CIFAR rows: uint8 [n, 3072], channel-major, each channel a row-major 32x32 plane."""
    i, c, h, w = np.meshgrid(np.arange(start, start + n), np.arange(3), np.arange(32),
                             np.arange(32), indexing="ij")
    return _pixel(i, c, h, w).astype(np.uint8).reshape(n, 3072)


def _expected_hwc(start: int, n: int) -> np.ndarray:
    i, h, w, c = np.meshgrid(np.arange(start, start + n), np.arange(32), np.arange(32),
                             np.arange(3), indexing="ij")
    return _pixel(i, c, h, w).astype(np.uint8)


def _dump(path: Path, obj, bytes_keys: bool = True) -> None:
    if bytes_keys:       # how the Python-2 pickles read back with encoding="bytes"
        obj = {k.encode(): v for k, v in obj.items()}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(pickle.dumps(obj, protocol=2))


def _write_fake_cifar10(root: Path, n: int = 4) -> np.ndarray:
    folder = root / "cifar-10-batches-py"
    labels = (np.arange(6 * n) * 3) % 10
    for b in range(6):
        name = f"data_batch_{b + 1}" if b < 5 else "test_batch"
        sl = slice(b * n, (b + 1) * n)
        _dump(folder / name, {"batch_label": f"batch {b}".encode(), "labels": labels[sl].tolist(),
                              "data": _rows(b * n, n),
                              "filenames": [b"f%d.png" % k for k in range(n)]})
    _dump(folder / "batches.meta", {"label_names": [b"c%d" % k for k in range(10)],
                                    "num_cases_per_batch": n, "num_vis": 3072})
    return labels


def _write_fake_cifar100(root: Path, n_train: int = 6, n_test: int = 3) -> tuple:
    folder = root / "cifar-100-python"
    fine = (np.arange(n_train + n_test) * 37) % 100
    for name, start, n in (("train", 0, n_train), ("test", n_train, n_test)):
        _dump(folder / name, {"filenames": [b"x"] * n, "batch_label": name.encode(),
                              "fine_labels": fine[start:start + n].tolist(),
                              "coarse_labels": (fine[start:start + n] // 5).tolist(),
                              "data": _rows(start, n)}, bytes_keys=False)
    _dump(folder / "meta", {"fine_label_names": [b"f"] * 100, "coarse_label_names": [b"c"] * 20},
          bytes_keys=False)
    return fine[:n_train], fine[n_train:]


def _py2_batch(data: np.ndarray, labels: list[int]) -> bytes:
    """A batch pickled the way the real CIFAR files are (Python 2, protocol 2, str opcodes)."""
    def s(b: bytes) -> bytes:
        return b"U" + bytes([len(b)]) + b if len(b) < 256 else b"T" + struct.pack("<i", len(b)) + b

    arr = (b"cnumpy.core.multiarray\n_reconstruct\ncnumpy\nndarray\nK\x00\x85" + s(b"b")
           + b"\x87R(K\x01M" + struct.pack("<H", data.shape[0]) + b"M" + struct.pack("<H", 3072)
           + b"\x86cnumpy\ndtype\n" + s(b"u1") + b"K\x00K\x01\x87R(K\x03" + s(b"|")
           + b"NNNJ\xff\xff\xff\xffJ\xff\xff\xff\xffK\x00tb\x89" + s(data.tobytes()) + b"tb")
    labs = b"](" + b"".join(b"K" + bytes([v]) for v in labels) + b"e"
    return b"\x80\x02}(" + s(b"batch_label") + s(b"testing batch 1 of 1") + s(b"labels") + labs \
        + s(b"data") + arr + b"u."


def test_cifar_reader_reads_python2_pickles(tmp_path):
    labels = _write_fake_cifar10(tmp_path)
    (tmp_path / "cifar-10-batches-py" / "test_batch").write_bytes(
        _py2_batch(_rows(20, 4), labels[20:].tolist()))
    x, y = load_dataset("cifar10", tmp_path, "test", verify_md5=False)
    assert np.array_equal(x, _expected_hwc(20, 4)) and np.array_equal(y, labels[20:])


def test_cifar10_reader_transposes_to_hwc(tmp_path):
    labels = _write_fake_cifar10(tmp_path, n=4)
    x, y = load_dataset("cifar10", tmp_path, "train", verify_md5=False)
    assert x.shape == (20, 32, 32, 3) and x.dtype == np.uint8 and y.dtype == np.int64
    assert np.array_equal(x, _expected_hwc(0, 20)) and np.array_equal(y, labels[:20])
    xt, yt = load_dataset("cifar10", tmp_path, "test", verify_md5=False)
    assert np.array_equal(xt, _expected_hwc(20, 4)) and np.array_equal(yt, labels[20:])
    # Red plane of image 0 is the first 1024 bytes of its row, row-major.
    assert np.array_equal(x[0, :, :, 0].ravel(), _rows(0, 1)[0, :1024])


def test_cifar100_reader_uses_fine_labels(tmp_path):
    y_train, y_test = _write_fake_cifar100(tmp_path)
    x, y = load_dataset("cifar100", tmp_path, "train", verify_md5=False)
    assert x.shape == (6, 32, 32, 3) and np.array_equal(x, _expected_hwc(0, 6))
    assert np.array_equal(y, y_train)
    assert np.array_equal(load_labels("cifar100", tmp_path, "test", verify_md5=False), y_test)


def test_fake_cifar_rejected_when_md5_verified(tmp_path):
    _write_fake_cifar10(tmp_path)
    with pytest.raises(DatasetUnavailableError, match="data_batch_1: wrong md5"):
        load_dataset("cifar10", tmp_path, "train")
    with pytest.raises(DatasetUnavailableError) as exc:
        ensure_dataset("cifar10", tmp_path, download=False)
    assert len(exc.value.problems) == 7 and "cifar-10-python.tar.gz" in str(exc.value)
    man = ensure_dataset("cifar10", tmp_path, download=False, verify_md5=False)
    assert [f["path"] for f in man["files"]][-1] == "cifar-10-batches-py/batches.meta"


def test_cifar_reader_refuses_foreign_pickles(tmp_path):
    _write_fake_cifar10(tmp_path)
    evil = pickle.dumps({"data": os.getcwd, "labels": []}, protocol=2)    # a global, not numpy
    (tmp_path / "cifar-10-batches-py" / "test_batch").write_bytes(evil)
    with pytest.raises(pickle.UnpicklingError, match="refused"):
        load_dataset("cifar10", tmp_path, "test", verify_md5=False)


def _fake_tarball(src_root: Path, dest: Path) -> None:
    with tarfile.open(dest, "w:gz") as tar:
        tar.add(src_root / "cifar-10-batches-py", arcname="cifar-10-batches-py")
        payload = b"should never be written"
        info = tarfile.TarInfo("../evil.txt")
        info.size = len(payload)
        tar.addfile(info, io.BytesIO(payload))


def _patched_cifar10_spec(src_root: Path, archive: Path, monkeypatch) -> None:
    spec = catalogue._SPECS["cifar10"]
    files = tuple((f, fetch.md5sum(src_root / spec.folder / f)) for f, _ in spec.files)
    new = dataclasses.replace(spec, files=files, archive_url=archive.as_uri(),
                              archive_md5=hashlib.md5(archive.read_bytes()).hexdigest())
    monkeypatch.setitem(catalogue._SPECS, "cifar10", new)


def test_cifar_tarball_from_mirror_and_download(tmp_path, monkeypatch):
    src = tmp_path / "src"
    _write_fake_cifar10(src)
    mirror_dir = tmp_path / "mirror"
    mirror_dir.mkdir()
    archive = mirror_dir / "cifar-10-python.tar.gz"
    _fake_tarball(src, archive)
    _patched_cifar10_spec(src, archive, monkeypatch)

    root1 = tmp_path / "r1" / "data"                 # tarball found in the mirror
    ensure_dataset("cifar10", root1, mirror=mirror_dir, download=False)
    assert np.array_equal(load_dataset("cifar10", root1, "train")[0], _expected_hwc(0, 20))
    assert not (root1.parent / "evil.txt").exists() and not (root1 / "evil.txt").exists()

    root2 = tmp_path / "r2" / "data"                 # tarball "downloaded" (file:// URL)
    man = ensure_dataset("cifar10", root2, download=True, timeout=2.0)
    assert (root2 / "cifar-10-python.tar.gz").is_file() and len(man["files"]) == 7
    assert not (root2.parent / "evil.txt").exists()


# ------------------------------------------------------------------------------ tensors

def test_to_float_tensor_layout_and_scaling(tmp_path, mirror):
    x, _ = load_dataset("mnist", mirror, "test")
    t = to_float_tensor(x[:64], "mnist")
    assert t.shape == (64, 1, 28, 28) and t.dtype == torch.float32
    assert float(t.min()) >= 0.0 and float(t.max()) <= 1.0
    assert torch.allclose(t[3, 0], torch.from_numpy(x[3]).float() / 255)
    tn = to_float_tensor(x, "mnist", normalize=True)
    assert abs(float(tn.mean())) < 0.05 and abs(float(tn.std()) - 1.0) < 0.05

    _write_fake_cifar10(tmp_path)
    xc, _ = load_dataset("cifar10", tmp_path, "test", verify_md5=False)
    tc = to_float_tensor(xc, "cifar10")
    assert tc.shape == (4, 3, 32, 32)
    assert torch.equal(tc, torch.from_numpy(xc).permute(0, 3, 1, 2).float() / 255)
    tcn = to_float_tensor(xc, "cifar10", normalize=True)
    assert torch.allclose(tcn[:, 2], (tc[:, 2] - 0.4465) / 0.2616)
    with pytest.raises(ValueError, match="shape"):
        to_float_tensor(xc, "mnist")
