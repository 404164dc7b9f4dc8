"""Shared fixtures: the repository root and the offline dataset mirror (shared/data)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def data_mirror() -> Path | None:
    """AIRFL_DATA_MIRROR, else the shared/data folder beside the checkout."""
    candidates = [os.environ.get("AIRFL_DATA_MIRROR"), REPO.parent / "shared" / "data"]
    for candidate in candidates:
        if candidate and (Path(candidate) / "MNIST" / "raw").is_dir():
            return Path(candidate)
    return None


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO


@pytest.fixture(scope="session")
def mnist_mirror() -> Path:
    mirror = data_mirror()
    if mirror is None:
        if os.environ.get("CI"):
            pytest.fail("CI must provide the MNIST mirror (AIRFL_DATA_MIRROR or ../shared/data)")
        pytest.skip("no MNIST mirror found (set AIRFL_DATA_MIRROR)")
    return mirror
