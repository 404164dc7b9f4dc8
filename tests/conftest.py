"""Shared fixtures: the repository root and the offline dataset mirror (shared/data)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from checkout import REPO, data_mirror


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


@pytest.fixture()
def extra_wings(monkeypatch):
    """Install wings for one test, beside the entry points' (a wing's catalogue may be a module
    object the test makes): `extra_wings(wing, catalogue_module)`."""
    import sys

    from airfl.pipeline import registry

    installed = registry.wings()
    added = []

    def install(wing, catalogue=None):
        if catalogue is not None:
            monkeypatch.setitem(sys.modules, wing.catalogue, catalogue)
        added.append(wing)

    def clear():
        for cached in (registry.all_experiments, registry.all_analytic, registry.scheme_wings):
            cached.cache_clear()

    monkeypatch.setattr(registry, "wings", lambda: (*installed, *added))
    clear()
    yield install
    clear()


@pytest.fixture()
def assert_claims_survive_storage(tmp_path):
    """`check(figure, frame)`: the figure's claims hold the same on its frame as on the frame
    stored as CSV and read back (the claims stage reads the CSV, so storage must not change a
    verdict; some checks test identities to float precision), and there is at least one claim."""
    import pandas as pd

    from airfl.runtime.io import write_csv

    def check(figure, frame):
        path = tmp_path / f"{figure.figure}.csv"
        write_csv(path, frame, float_format="%.17g")
        stored = pd.read_csv(path)
        stored.attrs.update(frame.attrs)
        claims = figure.check(frame)
        assert claims, f"{figure.figure}: no claims to compare"
        assert [c[3] for c in figure.check(stored)] == [c[3] for c in claims], figure.figure

    return check
