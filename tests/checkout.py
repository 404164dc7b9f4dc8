"""Where the tests find the repository and the offline dataset mirror (shared/data). A module
of its own, imported by name: test modules cannot import `conftest`, several folders have one."""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def data_mirror() -> Path | None:
    """AIRFL_DATA_MIRROR, else the shared/data folder beside the checkout."""
    candidates = [os.environ.get("AIRFL_DATA_MIRROR"), REPO.parent / "shared" / "data"]
    for candidate in candidates:
        if candidate and (Path(candidate) / "MNIST" / "raw").is_dir():
            return Path(candidate)
    return None
