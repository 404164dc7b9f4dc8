"""OTA-FD's X6 (experiments/x6.py): the closed forms as analytic figures on the committed
`ota_fd.analysis` block: tidy frames with every panel's metric that keep their wide rows'
columns, one round count per reading of Prop. 2, and claims that read the same from the stored
CSV as from the computed frame."""

from __future__ import annotations

import pandas as pd
import pytest
import yaml

from airfl.pipeline.params import validate_params
from airfl.papers.ota_fd.experiments import x6


@pytest.fixture(scope="module")
def block(repo_root):
    params = validate_params(yaml.safe_load((repo_root / "params.yaml").read_text()))
    return params["ota_fd"]["analysis"]


def test_tidy_keeps_the_wide_columns_one_row_per_metric():
    wide = pd.DataFrame({"eps": [1.0, 2.0], "nu": [0.1, 0.2], "case2_fraction": [0.0, 0.5]})
    frame = x6._tidy(wide, "eps", pd.Series(["a", "b"]), ("nu", "case2_fraction"), "x6_test")
    assert len(frame) == 4 and list(frame["metric"]) == ["nu", "nu", "case2_fraction",
                                                         "case2_fraction"]
    assert list(frame["value"]) == [0.1, 0.2, 0.0, 0.5] and list(frame["x"]) == [1.0, 2.0] * 2
    assert {"eps", "nu", "case2_fraction"} <= set(frame.columns)
    assert frame.attrs == {"figure": "x6_test", "x": "eps"}
    assert x6._wide(frame).equals(frame.iloc[:2].reset_index(drop=True))


def test_every_x6_figure_is_tidy_and_its_claims_survive_storage(block,
        assert_claims_survive_storage):
    assert [f.figure for f in x6.ANALYTIC] == ["x6_rounds", "x6_noise", "x6_cases",
                                               "x6_communication"]
    for figure in x6.ANALYTIC:
        assert figure.config_key == "ota_fd.analysis"
        frame = figure.compute(block)
        assert {p.metric for p in figure.panels} <= set(frame["metric"])
        assert frame.attrs["figure"] == figure.figure
        assert_claims_survive_storage(figure, frame)


def test_the_rounds_figure_has_one_curve_per_reading_of_prop2(block):
    """The closed form is the larger of a/b and T_0 as a whole number of rounds (at least 1)."""
    frame = x6.ANALYTIC[0].compute(block)
    assert set(frame["scheme"]) == {"a/b (appendix T*)", "T_0", "max(T_0, a/b)",
                                    "argmin of the exact objective"}
    assert set(frame["metric"]) == {"T"}
    per_eps = frame.pivot_table(index="eps", columns="scheme", values="value")
    larger = per_eps[["a/b (appendix T*)", "T_0"]].max(axis=1).clip(lower=1.0)
    assert ((per_eps["max(T_0, a/b)"] - larger).abs() <= 0.5 + 1e-9).all()   # a whole round count
