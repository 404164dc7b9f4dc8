"""Fixtures of Biased FL's tests: the digital designs of Sec. IV-B, solved once per session (SCA
runs take seconds, and three test files read them)."""

from __future__ import annotations

import pytest

from airfl.papers.biased_fl.design import digital as dd

from biased_fl_digital_helpers import DESIGN_KW


@pytest.fixture(scope="session")
def designs():
    """The zero-bias QNV design and the SCA designs with and without the zero-bias constraint."""
    return {"zb_qnv": dd.design_zb_qnv(**DESIGN_KW),
            "zb_opt": dd.design_sca(**DESIGN_KW, zero_bias=True),
            "opt": dd.design_sca(**DESIGN_KW)}
