"""The eta_0 calibration rule (calibration.py): best mean final accuracy, a
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


def _paper_params():
    from airfl.pipeline.params import load_params
    return load_params("params.yaml", {"profile": "paper"})


def test_the_paper_profile_calibrates_eta0_before_x1_trains_and_quick_does_not():
    """Paper: X1 has noiseless-FD runs at eta_0 in {0.5, 1, 2} whose derive job every
    other X1 curve waits for; quick has none, no derive job, and its curves read nothing."""
    from airfl.pipeline import dag, paths
    from airfl.pipeline.params import load_params
    from airfl.pipeline.registry import get_experiment

    x1 = get_experiment("ota_fd/x1")
    paper = _paper_params()
    curves = x1.curves(paper)
    cal = {c: p["eta0"] for c, p in curves.items() if c.startswith("eta0_cal_")}
    assert sorted(cal.values()) == [0.5, 1.0, 2.0]
    assert all(curves[c]["method"] == "fd_noiseless" for c in cal)
    jobs = {j.name: j for j in dag.experiment_jobs(x1, paper)}
    derived = str(paths.derived("ota_fd/x1", "eta0"))
    assert str(paths.run_table("ota_fd/x1", "eta0_cal_1")) in jobs["derive-ota_fd-x1-eta0"].deps
    for curve in curves:
        assert (derived in jobs[f"train-ota_fd-x1-{curve}"].deps) == (curve not in cal)
    quick = load_params("params.yaml", {})
    assert not [j for j in dag.experiment_jobs(x1, quick) if j.name.startswith("derive")]
    assert not x1.derivations_of("fd_noiseless", x1.curves(quick))


def test_derive_stage_picks_eta0_from_stored_runs_and_the_targets_train_with_it(tmp_path,
                                                                               monkeypatch):
    """Stage `derive` on stored calibration runs (3 trials each): the rule's choice lands in
    every other curve's parameters (runs.derived), the table lists every final accuracy."""
    import pandas as pd

    from airfl.runtime.io import read_json, write_csv, write_json
    from airfl.pipeline import paths
    from airfl.pipeline.registry import get_experiment
    from airfl.pipeline.runs import derived
    from airfl.pipeline.stages import derive

    params = _paper_params()
    monkeypatch.chdir(tmp_path)
    finals = {"eta0_cal_0p5": [0.60, 0.62, 0.61], "eta0_cal_1": [0.70, 0.74, 0.72],
              "eta0_cal_2": [0.71, 0.70, 0.69]}              # 2: mean 0.70, within 0.72 - s.e.?
    for curve, accs in finals.items():
        write_json(paths.design("ota_fd/x1", curve), {})
        write_json(paths.run_records("ota_fd/x1", curve), {})
        write_csv(paths.run_table("ota_fd/x1", curve), pd.DataFrame(
            [{"trial": t, "round": r, "test_accuracy": a if r else 0.1}
             for t, a in enumerate(accs) for r in (0, 200)]))
    derive.run(params, "ota_fd/x1", "eta0")
    stored = read_json(paths.derived("ota_fd/x1", "eta0"))
    se = 0.02 / 3 ** 0.5                      # s.d. 0.02 of (0.70, 0.74, 0.72) over sqrt(3)
    assert stored["report"]["best"] == 1.0 and stored["report"]["se"] == pytest.approx(se)
    assert stored["report"]["eta0"] == 1.0    # 0.72 - 0.70 = 0.02 > s.e. 0.0115: 2 does not win
    table = pd.read_csv(paths.derived("ota_fd/x1", "eta0", "csv"))
    assert len(table) == 9 and set(table["eta0"]) == {0.5, 1.0, 2.0}
    x1 = get_experiment("ota_fd/x1")
    curves = x1.curves(params)
    assert derived(x1, "otafd_prop_e0p1", {"method": "otafd_prop"}, curves)["eta0"] == 1.0
    assert "eta0" not in derived(x1, "eta0_cal_2", {"method": "fd_noiseless"}, curves)
