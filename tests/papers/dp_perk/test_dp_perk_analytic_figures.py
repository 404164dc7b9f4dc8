"""AirFL-DP's analytic frames (analytic_figures.py): Fig. 2's frame, the perk-threshold frame,
and the allocation frame's two regimes."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from airfl.papers.dp_perk import analytic_figures as af


torch.set_num_threads(1)

#: Two trials keep the Monte Carlo diagnostics cheap; claim tolerances: our reading of Sec. V.
SMALL = {**af.DEFAULTS, "trials": 2, "threshold_eps_tilde": [0.05, 0.1, 0.2],
         "fig3_eps_tilde": [0.04, 0.1]}


def test_fig2_frame_shape():
    frame = af.fig2_frame(af.DEFAULTS)
    assert set(frame.curve) == {"ours", "liu_linear"}
    assert frame.groupby(["curve", "D"]).size().eq(80).all()
    assert frame["T"].min() == 1 and frame["T"].max() == 80
    assert frame.groupby("D").ngroups == 1 + len(af.DEFAULTS["fig2_D_variants"])  # inf shared
    main = frame[(frame.curve == "ours") & np.isclose(frame.B, 50.0)]
    # at T = 50 the RDP is eps/2 (the App. C choice eps' = eps/2 with q = sqrt(T/A))
    at50 = main[main["T"] == 50].iloc[0]
    assert at50.rdp == pytest.approx(0.1 * math.sqrt(af.DEFAULTS["dim"]) / 2, rel=1e-9)
    assert at50.eps_paper == pytest.approx(0.1 * math.sqrt(af.DEFAULTS["dim"]), rel=1e-9)


def test_threshold_frame_columns_and_ordering():
    frame = af.threshold_frame({**SMALL, "beamformers": ["zf"], "trials": 1})
    assert len(frame) == len(SMALL["threshold_eps_tilde"])
    assert (frame.power_full_w >= frame.power_threshold_w).all()
    # P_thr is linear in A (51): the ratio of thresholds is the ratio of budgets
    ratio = frame.power_threshold_w / frame.budget_A
    np.testing.assert_allclose(ratio, ratio.iloc[0], rtol=1e-12)


def test_allocation_frame_shows_the_two_regimes():
    frame = af.allocation_frame(SMALL)
    assert len(frame) == 2 * 2 * SMALL["rounds"]
    top = frame[frame.power_w == 2e-3]
    assert top.raised.all()                                        # binding by ~70 dB
    for eps_tilde, group in top.groupby("eps_tilde"):
        k = af._constants(SMALL, eps_tilde)
        assert np.allclose(group.q, math.sqrt(SMALL["rounds"] / k["A"]), rtol=1e-15)
    low = frame[(frame.power_w == 2e-10) & np.isclose(frame.eps_tilde, 0.1)]
    assert not low.raised.all()
