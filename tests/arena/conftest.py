"""Fixtures of the arena's tests: the committed params.yaml at each profile, reading MNIST
from the offline mirror (the arena's partition and the LAPA audit read `data.root`)."""

from __future__ import annotations

import pytest

from airfl.pipeline.params import load_params


def profile_params(repo_root, mirror, profile: str) -> dict:
    """The committed params.yaml under `profile`, its data root the MNIST mirror (read only)."""
    loaded = load_params(repo_root / "params.yaml")
    return {**loaded, "profile": profile, "data": {**loaded["data"], "root": str(mirror)}}


@pytest.fixture(scope="module", params=["quick", "paper"])
def params(request, repo_root, mnist_mirror):
    """The committed params.yaml under the quick and the paper profile."""
    return profile_params(repo_root, mnist_mirror, request.param)


@pytest.fixture(scope="module")
def quick(repo_root, mnist_mirror):
    """The committed params.yaml under the quick profile."""
    return profile_params(repo_root, mnist_mirror, "quick")
