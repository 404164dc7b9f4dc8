"""The eta_0 calibration rule (calibration.py, spec ota_fd.md §7): best mean final accuracy, a
larger step only within one standard error; a curve's own eta0 sets the run's step size."""

import math

import pytest

from airfl.papers.ota_fd.calibration import choose_eta0


def test_best_mean_wins_and_one_trial_has_no_standard_error():
    out = choose_eta0({0.5: [0.80], 1.0: [0.82], 2.0: [0.81]})
    assert out["eta0"] == 1.0 and out["best"] == 1.0 and math.isnan(out["se"])


def test_a_larger_step_within_one_standard_error_wins_and_outside_it_does_not():
    best = [0.80, 0.84]                       # mean 0.82, s.e. 0.02
    assert choose_eta0({1.0: best, 2.0: [0.80, 0.81]})["eta0"] == 2.0     # 0.805: within
    assert choose_eta0({1.0: best, 2.0: [0.78, 0.79]})["eta0"] == 1.0     # 0.785: outside
    assert choose_eta0({1.0: best, 0.5: [0.81, 0.82]})["eta0"] == 1.0     # smaller never
    assert choose_eta0({1.0: best, 2.0: [0.80, 0.81]})["se"] == pytest.approx(0.02)


def test_an_exact_tie_takes_the_larger_step_and_no_runs_stop():
    assert choose_eta0({0.5: [0.7], 2.0: [0.7]})["eta0"] == 2.0
    with pytest.raises(ValueError, match="no calibration runs"):
        choose_eta0({})
