"""Fixtures of the arena's tests: the committed params.yaml at each profile."""

from __future__ import annotations

import pytest

from airfl.pipeline.params import load_params


@pytest.fixture(scope="module", params=["quick", "paper"])
def params(request, repo_root):
    """The committed params.yaml under the quick and the paper profile."""
    loaded = load_params(repo_root / "params.yaml")
    return {**loaded, "profile": request.param}
