"""Fixtures of the CDPB tests: every analytic figure, computed once per session."""

from __future__ import annotations

import time

import pytest

from airfl.papers.cdpb import analytic_figures as af


@pytest.fixture(scope="session")
def frames():
    """Every analytic figure once, timed (the task asks for well under a minute)."""
    start = time.perf_counter()
    out = af.all_figures()
    out["elapsed"] = time.perf_counter() - start
    return out
