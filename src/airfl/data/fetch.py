"""Making a dataset's raw files available under ``root`` (torchvision layout), md5-checked.

:func:`ensure_dataset` takes them from ``root``, then a local mirror, then a download, writes
every file atomically after its md5 check, and returns a small manifest that the pipeline
stores as the data stage's output. :func:`find_problems` and :func:`dataset_present` only look.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tarfile
import tempfile
import urllib.error
import urllib.request
from pathlib import Path

from airfl.data.catalogue import _SPECS, DatasetUnavailableError, _Spec, canonical_name

__all__ = ["DOWNLOAD_TIMEOUT_S", "MIRROR_ENV_VAR", "dataset_present", "ensure_dataset",
           "find_problems", "md5sum"]

#: Environment variable naming a local folder in torchvision layout (used when ``mirror`` is None).
MIRROR_ENV_VAR = "AIRFL_DATA_MIRROR"

#: Socket timeout (seconds) of every download request; without internet they fail quickly.
DOWNLOAD_TIMEOUT_S = 20.0

#: Overall deadline (seconds) of one file's download: the socket timeout bounds each read, so a
#: server trickling a byte now and then kept a download alive forever.
#: CIFAR-100's 169 MB take ~3 min at 1 MB/s.
DOWNLOAD_DEADLINE_S = 1800.0

_CHUNK = 1 << 20


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


def substitute_if_missing(pick: dict, data: dict) -> dict:
    """A figure's `dataset` and `model`, or its `offline_substitute` ({dataset, model}) when the
    dataset cannot be supplied without a download (not under data.root nor the mirror), with
    `substituted_for` naming what it replaces (the caption and the figure CSV say so). Shared by
    the wings whose paper-scale figures train on CIFAR (CDPB, OTA-FD); to download CIFAR
    instead, run `airfl data cifar10` (or cifar100) first."""
    substitute = pick.get("offline_substitute")
    if substitute is None or dataset_present(pick["dataset"], data["root"], data.get("mirror")):
        return {"dataset": pick["dataset"], "model": pick["model"]}
    return {**substitute, "substituted_for": f"{pick['dataset']} / {pick['model']}"}


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
                 verify_md5: bool, notes: list[str]) -> dict[str, str]:
    """Copy the files named in ``todo`` from ``mirror`` (torchvision layout) into ``root``;
    file name -> what is wrong with the mirror's copy, for those present there but unusable
    (a corrupt copy is reported as such, not as a missing file)."""
    wanted = dict(spec.files)
    corrupt = {}
    for fname in todo:
        src = mirror / spec.folder / fname
        reason = _status(src, wanted[fname], verify_md5)
        if reason is not None:
            if reason != "missing":
                corrupt[fname] = f"not under root; the mirror's copy {src} is corrupt: {reason}"
            continue
        try:
            _write_atomically(root / spec.folder / fname,
                              lambda tmp, s=src: shutil.copyfile(s, tmp),
                              wanted[fname] if verify_md5 else None)
        except (OSError, ValueError) as exc:
            notes.append(f"copy of {spec.relpath(fname)} from mirror failed: {exc}")
    return corrupt


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
    in_mirror: dict[str, str] = {}               # file -> what is wrong with the mirror's copy

    def todo() -> list[str]:
        return [f for f, _ in _problems(spec, root, None, verify_md5)]

    missing = todo()
    if missing and spec.archive_name and (root / spec.archive_name).is_file():
        _extract_from_archive(spec, root, root / spec.archive_name, missing, verify_md5, notes)
        missing = todo()
    if missing and mirror_path is not None and not _same_dir(mirror_path, root):
        in_mirror = _from_mirror(spec, root, mirror_path, missing, verify_md5, notes)
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
        problems = [(f, in_mirror.get(f, r) if r == "missing" else r)
                    for f, r in _problems(spec, root, None, verify_md5)]
        raise _unavailable(spec, problems, root, mirror_path, download_note, notes)
    return _manifest(spec, root)


def _manifest(spec: _Spec, root: Path) -> dict:
    files = []
    for fname, _ in spec.files:
        path = root / spec.folder / fname
        files.append({"path": spec.relpath(fname), "md5": md5sum(path),
                      "bytes": path.stat().st_size})
    return {"dataset": spec.name, "files": files}
