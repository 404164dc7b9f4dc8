"""Figure-stage data handling and the claim metrics, on small hand-made frames."""

import pandas as pd
import pytest

from airfl.core.claims import final_values, speedups
from airfl.pipeline.stages.figure import derive, finals, resample


def _frame():
    rows = []
    for trial, times in enumerate([[0.0, 0.4, 1.1, 1.6, 2.2], [0.0, 0.7, 1.3, 2.5]]):
        for i, t in enumerate(times):
            rows.append({"curve": "a", "trial": trial, "round": i, "time_s": t, "gap": 10.0 - i})
    return pd.DataFrame(rows)


def test_resample_is_step_hold_up_to_the_shortest_run():
    out = resample(_frame(), 0.5)
    t0 = out[out.trial == 0].set_index("time_s")["gap"]
    assert list(t0.index) == [0.0, 0.5, 1.0, 1.5, 2.0]      # shortest run ends at 2.2 s
    assert list(t0) == [10.0, 9.0, 9.0, 8.0, 7.0]           # value after the last completed round
    t1 = out[out.trial == 1].set_index("time_s")["gap"]
    assert list(t1) == [10.0, 10.0, 9.0, 8.0, 8.0]


def test_finals_take_each_trials_last_row():
    last = finals(_frame())
    assert sorted(last["round"].tolist()) == [3, 4]


def test_finals_rounds_back_take_the_row_before_the_last():
    """`final_rounds_back = 1`: theta^(T-1), each trial's row one round before its last (none
    where that round was not evaluated)."""
    before = finals(_frame(), rounds_back=1)
    assert sorted(zip(before["trial"], before["round"])) == [(0, 3), (1, 2)]
    gap = _frame().query("not (trial == 1 and round == 2)")
    assert finals(gap, rounds_back=1)["trial"].tolist() == [0]


def test_derive_uses_the_reference_optimum():
    frame = pd.DataFrame({"objective": [0.5, 0.45], "test_accuracy": [0.8, 0.86]})
    out = derive(frame, {"F_star": 0.45, "accuracy_star": 0.86})
    assert out["suboptimality_gap"].tolist() == pytest.approx([0.05, 0.0])
    assert out["normalized_accuracy"].tolist() == pytest.approx([0.8 / 0.86, 1.0])


def test_speedup_is_end_time_over_time_to_reach_the_others_final_value():
    times = [0.0, 1.0, 2.0, 3.0, 4.0]
    rows = [{"curve": "prop", "trial": 0, "time_s": t, "round": i, "gap": g}
            for i, (t, g) in enumerate(zip(times, [8.0, 4.0, 2.0, 1.0, 0.5]))]
    rows += [{"curve": "base", "trial": 0, "time_s": t, "round": i, "gap": g}
             for i, (t, g) in enumerate(zip(times, [8.0, 6.0, 5.0, 4.5, 4.0]))]
    rows += [{"curve": "never", "trial": 0, "time_s": t, "round": i, "gap": 0.1}
             for i, t in enumerate(times)]
    frame = pd.DataFrame(rows)
    ratios = speedups(frame, "prop", ["base", "never"], "gap", lower_is_better=True)
    assert ratios["base"] == pytest.approx(4.0 / 1.0)       # prop reaches 4.0 at t = 1 s
    assert ratios["never"] == 0.0                           # never reached: t_end / inf
    assert final_values(frame, "gap") == {"prop": 0.5, "base": 4.0, "never": 0.1}
