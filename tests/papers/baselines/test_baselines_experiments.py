"""The shared baselines figure (experiments.py): legends of the core's schemes, and its two claims
on stored figure data (ideal FedAvg above every noisy scheme; OTA-FL at the lower SNR below the
higher), paired by trial, holding and failing as the data say."""

from __future__ import annotations

import pandas as pd

from airfl.papers.baselines.experiments import EXPERIMENT, EXPERIMENTS, _label


def _frame(finals: dict[str, float], trials: int = 3) -> pd.DataFrame:
    """One curve per key: accuracy 0.1 at round 0 and its final value at round 10, trial i
    shifted by 0.002 * i (every curve alike) and by 0.001 * (-1)^i on odd curves (a spread)."""
    rows = []
    for n, (curve, final) in enumerate(finals.items()):
        for trial in range(trials):
            end = final + 0.002 * trial + (0.001 * (-1) ** trial if n % 2 else 0.0)
            rows += [{"curve": curve, "trial": trial, "round": 0, "test_accuracy": 0.1},
                     {"curve": curve, "trial": trial, "round": 10, "test_accuracy": end}]
    return pd.DataFrame(rows)


def _verdicts(frame: pd.DataFrame) -> dict[str, str]:
    return {claim.name: claim.evaluate(frame).verdict for claim in EXPERIMENT.claims}


def test_the_catalogue_is_the_one_figure():
    assert EXPERIMENTS == (EXPERIMENT,) and EXPERIMENT.id == "baselines/accuracy_vs_rounds"


def test_legends_of_the_core_schemes_and_none_for_another_wings():
    assert _label("ideal", {"scheme": "ideal_fedavg"}) == "Ideal FedAvg"
    assert _label("o", {"scheme": "ota_truncated_inversion", "snr_db": 5.0}) == "OTA-FL, SNR 5 dB"
    assert _label("d", {"scheme": "digital_quantized", "bits": 8, "snr_db": 10}) \
        == "Digital FL, 8-bit, SNR 10 dB"
    assert _label("p", {"scheme": "gaussian_dp", "noise_multiplier": 1.1}) \
        == "FedAvg + DP, z = 1.1"
    assert _label("x", {"scheme": "biased_ota"}) is None


def test_the_claims_hold_on_ordered_data_and_are_contradicted_on_reversed_data():
    ordered = _frame({"ideal": 0.90, "ota_high_snr": 0.80, "ota_low_snr": 0.60,
                      "digital": 0.70, "dp": 0.50})
    assert _verdicts(ordered) == {"ideal_is_best": "holds", "ota_snr_ordering": "holds"}
    reversed_ = _frame({"ideal": 0.40, "ota_high_snr": 0.60, "ota_low_snr": 0.80,
                        "digital": 0.70, "dp": 0.50})
    assert _verdicts(reversed_) == {"ideal_is_best": "contradicted",
                                    "ota_snr_ordering": "contradicted"}
