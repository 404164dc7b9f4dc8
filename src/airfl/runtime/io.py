"""Atomic, open-format artifact writing with provenance (parameters and code version), and
checked reading of the artifacts one stage hands the next.

Every stage writes through these helpers: a temp file in the destination folder, then
`os.replace`, so an interrupted or failing stage never leaves a half-written output. A stage
reads a stored table or JSON through `read_table` / `read_json`, which stop on a file that is not
what a stage writes (cut short, garbled, not parseable) with `ArtifactError` naming it, and
remove it: the stage then fails, Snakemake removes that stage's outputs, and the next run
rebuilds both (a figure drawn from half a table is never written).
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import tempfile
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import pandas as pd


def _umask() -> int:
    """The process's umask (read by setting it, then set back)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path beside `path`; rename it onto `path` only if the block succeeds.
    The file gets the mode a plain `open(path, "w")` would give (0o666 less the umask), not
    mkstemp's private 0o600, so outputs are readable as every other file of the project."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp" + path.suffix, dir=path.parent)
    os.fchmod(fd, 0o666 & ~_umask())
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        os.replace(tmp_path, path)
    finally:
        if tmp_path.exists():
            tmp_path.unlink()


def _json_default(value: Any) -> Any:
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (np.floating,)):
        return float(value)
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def _strict(value: Any) -> Any:
    """Replace non-finite floats (not valid JSON) by the strings "inf", "-inf", "nan"."""
    if isinstance(value, float) and not np.isfinite(value):
        return "nan" if np.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, dict):
        return {k: _strict(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_strict(v) for v in value]
    return value


def json_form(payload: Any) -> Any:
    """`payload` as write_json stores it and read_json gives it back (tuples as lists, numpy
    numbers as Python ones, non-finite floats as strings): to compare a stored artifact's
    parameters with current ones."""
    return _strict(json.loads(json.dumps(payload, default=_json_default)))


def write_json(path: str | os.PathLike, payload: Any) -> None:
    """Write strict JSON with sorted keys (byte-stable for equal content)."""
    text = json.dumps(json_form(payload), indent=2, sort_keys=True, allow_nan=False)
    with atomic_path(path) as tmp:
        tmp.write_text(text + "\n")


class ArtifactError(RuntimeError):
    """A stored artifact a stage reads is missing, cut short or malformed; the message names
    the file, what is wrong with it and what rebuilds it (the CLI prints it, no traceback)."""


def _one_line(error: Exception) -> str:
    return " ".join(str(error).split())


def _rebuild(path: Path, problem: str) -> ArtifactError:
    """Remove the bad artifact and say so, with the command that rebuilds it for certain (a
    plain `snakemake` rebuilds a missing file only when something made from it is rerun)."""
    path.unlink(missing_ok=True)
    return ArtifactError(f"{path} {problem}; removed it, so that the next run rebuilds it "
                         f"(`snakemake {path}` if Snakemake finds nothing to do)")


def _stored_text(path: Path) -> bytes:
    if not path.is_file():
        raise ArtifactError(f"{path} is missing; `snakemake {path}` (or `dvc repro`) makes it")
    return path.read_bytes()


def read_json(path: str | os.PathLike) -> Any:
    """A JSON artifact; ArtifactError (the file removed) when it is not complete, valid JSON."""
    path = Path(path)
    data = _stored_text(path)
    try:
        return json.loads(data.decode())
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise _rebuild(path, f"is not valid JSON ({_one_line(error)})") from None


def read_table(path: str | os.PathLike, columns: tuple[str, ...] = ()) -> pd.DataFrame:
    """A CSV artifact as write_csv wrote it: not empty, ending with its line end (a table cut
    mid-line lacks it: pandas would read the cut number as a value), parseable, and holding
    `columns`. ArtifactError (the file removed) otherwise."""
    import io

    path = Path(path)
    data = _stored_text(path)
    if not data.strip():
        raise _rebuild(path, "is empty")
    if not data.endswith(b"\n"):
        raise _rebuild(path, "is cut short (its last line has no line end)")
    try:
        frame = pd.read_csv(io.BytesIO(data))
    except (ValueError, UnicodeDecodeError) as error:     # pandas' ParserError is a ValueError
        raise _rebuild(path, f"is not a well-formed CSV table ({_one_line(error)})") from None
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise _rebuild(path, f"lacks the column(s) {', '.join(missing)}")
    return frame


def write_csv(path: str | os.PathLike, frame: pd.DataFrame, float_format: str = "%.10g") -> None:
    """Write CSV with a fixed float format so equal numbers give equal bytes ("%.17g": every
    float64 read back exactly, for data whose claims test exact identities)."""
    with atomic_path(path) as tmp:
        frame.to_csv(tmp, index=False, float_format=float_format, lineterminator="\n")


def write_npz(path: str | os.PathLike, **arrays: np.ndarray) -> None:
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as handle:
            np.savez_compressed(handle, **arrays)


def write_frame(path: str | os.PathLike, frame: pd.DataFrame) -> None:
    """A table with every value and column type exact (npz: one array per column, their
    order in `columns`), for an intermediate table that is concatenated before it is written
    as CSV (`write_csv` rounds); numbers and booleans only (a run table's columns)."""
    arrays = {}
    for index, name in enumerate(frame.columns):
        values = frame[name].to_numpy()
        if values.dtype == object:
            raise ValueError(f"write_frame: column {name!r} holds Python objects; numbers and "
                             "booleans only")
        arrays[f"c{index}"] = values
    write_npz(path, columns=np.array([str(c) for c in frame.columns]), **arrays)


def read_frame(path: str | os.PathLike) -> pd.DataFrame:
    """A table `write_frame` wrote, with its columns' order and types."""
    with np.load(path, allow_pickle=False) as stored:
        columns = [str(c) for c in stored["columns"]]
        return pd.DataFrame({name: stored[f"c{i}"] for i, name in enumerate(columns)},
                            columns=columns)


def write_text(path: str | os.PathLike, text: str) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(text)


def write_generated(path: str | os.PathLike, text: str, check: bool, command: str) -> int:
    """Write a generated file, or with `check` compare the committed copy with `text` and on a
    difference print a unified diff and how to regenerate it (`command`); returns an exit code."""
    target = Path(path)
    if not check:
        write_text(target, text)
        return 0
    current = target.read_text() if target.exists() else ""
    if current == text:
        return 0
    import difflib
    import sys

    diff = difflib.unified_diff(current.splitlines(True), text.splitlines(True),
                                f"{target} (committed)", f"{target} (generated)")
    sys.stderr.write(f"{target} drifted from what generates it; run `{command}`:\n"
                     + "".join(diff))
    return 1


def git_commit() -> str:
    """The commit of the working tree (with '+dirty' when it has changes), or 'unknown'."""
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                                check=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, check=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return commit + ("+dirty" if dirty else "")


def provenance(params: dict[str, Any]) -> dict[str, Any]:
    """What made an artifact, deterministically: its exact parameters and the library versions.

    The git commit and wall-clock times are not in tracked artifacts (they would change the bytes
    of identical results and make `dvc status` dirty); `record_run` writes them beside, under
    results/provenance/, and dvc.lock records the hash of every code file a stage depends on.
    """
    import airfl
    import torch

    return {"params": params, "airfl_version": airfl.__version__, "torch_version": torch.__version__,
            "numpy_version": np.__version__}


def record_run(artifact: str | os.PathLike, **facts: Any) -> None:
    """Untracked provenance of one stage run: git commit, host-independent facts, timings."""
    artifact = Path(artifact)
    target = Path("results") / "provenance" / artifact.with_suffix(artifact.suffix + ".json")
    write_json(target, {"artifact": str(artifact), "git_commit": git_commit(), **facts})
