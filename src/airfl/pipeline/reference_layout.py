"""Where `airfl reference-results` keeps a paper's published figures: reference/<paper>/<profile>/
(read by the publishing and checking code, `reference_results`, and by the page section,
`reference_pages`). Not in `paths`: no stage reads or writes it, so it is no stage's code.

A figure's data is stored as `<figure>.csv`, or gzip-compressed as `<figure>.csv.gz` when the
CSV is above `CSV_GZIP_ABOVE` bytes (a paper-profile panel on a time grid over 20 trials is
several MB; git holds the reference, and compressed it is ~7x smaller). The compressed file is
byte-stable (no name or time in its header), so publishing the same CSV twice gives the same
bytes."""

from __future__ import annotations

import gzip
from pathlib import Path

ROOT = Path("reference")
PROFILES = ("quick", "paper")
CSV_GZIP_ABOVE = 1_000_000


def folder(paper: str, profile: str) -> Path:
    return ROOT / paper / profile


def csv_file(where: Path, name: str) -> Path:
    """The published data of figure `name` in `where`: its `.csv.gz` if stored compressed,
    else its `.csv`."""
    packed = Path(where) / f"{name}.csv.gz"
    return packed if packed.is_file() else Path(where) / f"{name}.csv"


def read_csv_bytes(where: Path, name: str) -> bytes:
    """The published CSV's bytes as the figure stage wrote them (decompressed if stored so)."""
    path = csv_file(where, name)
    return gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()


def store_csv(source: Path, where: Path, name: str) -> Path:
    """Copy a figure's CSV into `where` (compressed above `CSV_GZIP_ABOVE` bytes), removing the
    other form a previous publish may have left; the stored file."""
    data = Path(source).read_bytes()
    plain, packed = Path(where) / f"{name}.csv", Path(where) / f"{name}.csv.gz"
    keep, drop = (packed, plain) if len(data) > CSV_GZIP_ABOVE else (plain, packed)
    drop.unlink(missing_ok=True)
    keep.write_bytes(gzip.compress(data, mtime=0) if keep is packed else data)
    return keep
