"""The claims of X1 (claims/x1.py) on stored figure data: DP OTA-FD against local training per
eps, distillation against local training, the cost of DP, the accuracy-privacy trade-off, the
realised privacy, and the comparisons with a benchmark at its eps (n/a when it did not run)."""

from __future__ import annotations

import pandas as pd

from airfl.papers.ota_fd.claims import x1 as cx

TRIALS = 3


def _frame(finals: dict[str, float], ratio: float = 0.99) -> pd.DataFrame:
    """Per curve and trial: accuracy 0.1 at round 0 and `final` at round 10, trial i shifted by
    0.002 * i, alternate curves by 0.001 * (-1)^i; the proposed curves' eps from their names."""
    rows = []
    for n, (curve, final) in enumerate(finals.items()):
        eps = float(curve.rsplit("_e", 1)[1]) if curve.startswith("otafd_prop_e") else None
        for trial in range(TRIALS):
            shift = 0.002 * trial + (0.001 * (-1) ** trial if n % 2 else 0.0)
            for t, acc in ((0, 0.1), (10, final + shift)):
                rows.append({"curve": curve, "trial": trial, "round": t, "test_accuracy": acc,
                             "param_eps_full": eps, "eps_real_ratio_max": ratio})
    return pd.DataFrame(rows)


def test_dp_beats_local_names_the_smallest_eps_that_wins():
    frame = _frame({"otafd_prop_e1": 0.50, "otafd_prop_e10": 0.80, "otafd_prop_e100": 0.85,
                    "local_only": 0.60})
    result = cx.dp_beats_local(frame)
    assert result.verdict == "holds" and "from ε = 10 on" in result.numbers
    losing = _frame({"otafd_prop_e1": 0.40, "otafd_prop_e10": 0.50, "local_only": 0.60})
    assert cx.dp_beats_local(losing).verdict == "contradicted"


def test_distillation_helps_and_the_cost_of_dp_are_orderings():
    frame = _frame({"fd_noiseless": 0.90, "fd_ota_nodp": 0.85, "otafd_prop_e1": 0.70,
                    "otafd_prop_e10": 0.80, "local_only": 0.60})
    assert cx.distillation_helps(frame).verdict == "holds"
    assert cx.cost_of_dp(frame).verdict == "holds"
    upside_down = _frame({"fd_noiseless": 0.50, "fd_ota_nodp": 0.85, "otafd_prop_e1": 0.90,
                          "local_only": 0.60})
    assert cx.distillation_helps(upside_down).verdict == "contradicted"
    assert cx.cost_of_dp(upside_down).verdict == "contradicted"


def test_tradeoff_rises_with_eps_in_increasing_eps_order():
    rising = _frame({"otafd_prop_e100": 0.85, "otafd_prop_e1": 0.50, "otafd_prop_e10": 0.70})
    result = cx.tradeoff(rising)
    assert result.verdict == "holds" and result.numbers.index("ε = 1:") < result.numbers.index(
        "ε = 100:")
    falling = _frame({"otafd_prop_e1": 0.85, "otafd_prop_e10": 0.70, "otafd_prop_e100": 0.50})
    assert cx.tradeoff(falling).verdict == "contradicted"


def test_privacy_met_reads_the_largest_realised_ratio():
    assert cx.privacy_met(_frame({"otafd_prop_e1": 0.5}, ratio=1.0)).verdict == "holds"
    assert cx.privacy_met(_frame({"otafd_prop_e1": 0.5}, ratio=1.01)).verdict == "contradicted"


def test_versus_a_benchmark_at_its_eps_and_na_when_not_run():
    wins = _frame({"otafd_prop_e10": 0.80, "otafd_uniformw_e10": 0.70})
    assert cx._versus("otafd_uniformw", True)(wins).verdict == "holds"
    same = _frame({"otafd_prop_e10": 0.800, "otafd_an_e10": 0.801})
    assert cx._versus("otafd_an", False)(same).verdict == "holds"
    assert cx._versus("otafd_an", False)(wins).verdict == "n/a"
    other_eps = _frame({"otafd_prop_e1": 0.80, "otafd_an_e10": 0.70})
    assert cx._versus("otafd_an", False)(other_eps).verdict == "n/a"
