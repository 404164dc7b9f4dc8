"""OTA-FD's training figures X2-X5 and X7 (experiments/x2_x7.py): the legend rule (a benchmark
named by its curve, a budget drawn per WD, a full-scale eps), the calibration runs kept out of
the figures, and the five experiments on their own params blocks."""

from __future__ import annotations

from airfl.papers.ota_fd.calibration import PREFIX
from airfl.papers.ota_fd.experiments import x2_x7


def test_label_names_the_method_and_its_budget():
    assert x2_x7.label("c", {"method": "fd_ota_nodp"}) == "OTA FD without DP"
    assert x2_x7.label("c", {"method": "otafd_prop", "eps_full": 0.5}) \
        == "OTA-FD (DP, proposed), ε = 0.5"
    assert x2_x7.label("c", {"method": "otafl_dp", "eps_uniform_full": [1e6, 1e7]}) \
        == "OTA-FL with DP (ε_i ≥ 1e6), ε_i ~ U(1e+06, 1e+07)"
    assert x2_x7.label("otafd_an_e2", {"method": "otafd_prop", "benchmark": True,
                                       "eps_full": 2.0}) == "OTA-FD, artificial noise, ε = 2"


def test_calibration_runs_are_not_drawn():
    assert not x2_x7.trained(PREFIX + "1", {"method": "fd_noiseless"})
    assert x2_x7.trained("fd_noiseless", {"method": "fd_noiseless"})


def test_the_five_experiments_on_their_own_blocks_with_the_eta0_derivation_where_calibrated():
    ids = [e.id for e in x2_x7.EXPERIMENTS]
    assert ids == ["ota_fd/x2", "ota_fd/x3", "ota_fd/x4", "ota_fd/x5", "ota_fd/x7"]
    assert all(e.config_key == "ota_fd." + e.figure for e in x2_x7.EXPERIMENTS)
    assert x2_x7.ETA0 in x2_x7.EXPERIMENTS[0].derivations
    assert all(e.claims for e in x2_x7.EXPERIMENTS)
