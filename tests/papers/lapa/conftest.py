"""Fixtures of the LAPA tests: the repository's params.yaml, read once per session."""

from __future__ import annotations

import pytest
import yaml


@pytest.fixture(scope="session")
def params(repo_root):
    """The repository's params.yaml as a dict (tests that change it copy it first)."""
    with open(repo_root / "params.yaml") as f:
        return yaml.safe_load(f)
