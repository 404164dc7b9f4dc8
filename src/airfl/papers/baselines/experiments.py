"""figures/baselines/accuracy_vs_rounds: ideal FedAvg vs vanilla OTA-FL (two SNRs), 8-bit
digital FL with outage, and DP-FedAvg, on non-iid MNIST (2 classes per device)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from airfl.core.claims import ACCURACY_MARGIN, final_by_trial, paired_order
from airfl.core.experiments import Claim, ClaimResult, Experiment, FigureSpec


def _label(curve: str, params: dict[str, Any]) -> str | None:
    """Legends of the core's schemes; None for another wing's (its declared label is used)."""
    kind = params["scheme"]
    if kind == "ideal_fedavg":
        return "Ideal FedAvg"
    if kind == "ota_truncated_inversion":
        return f"OTA-FL, SNR {params['snr_db']:g} dB"
    if kind == "digital_quantized":
        return f"Digital FL, {params['bits']}-bit, SNR {params['snr_db']:g} dB"
    if kind == "gaussian_dp":
        return f"FedAvg + DP, z = {params['noise_multiplier']:g}"
    return None


def _ideal_best(frame: pd.DataFrame) -> ClaimResult:
    """Ideal FedAvg above every noisy scheme, each pair tested across trials."""
    final = final_by_trial(frame, "test_accuracy")
    return paired_order(final, [("ideal", c) for c in final.columns if c != "ideal"],
                        ACCURACY_MARGIN, scale=100, unit=" pp")


def _snr_ordering(frame: pd.DataFrame) -> ClaimResult:
    return paired_order(final_by_trial(frame, "test_accuracy"),
                        [("ota_high_snr", "ota_low_snr")], ACCURACY_MARGIN, scale=100,
                        unit=" pp")


EXPERIMENT = Experiment(
    paper="baselines",
    figure="accuracy_vs_rounds",
    config_key="baselines.accuracy_vs_rounds",
    title="Baselines on non-iid MNIST",
    description=("Test accuracy over communication rounds of ideal FedAvg, vanilla OTA-FL with "
                 "truncated channel inversion at two cell-edge SNRs, 8-bit digital FL with "
                 "outage, and FedAvg with user-level Gaussian DP (epsilon from the RDP accountant)."),
    figure_spec=FigureSpec(x="round", y="test_accuracy", xlabel="Communication round",
                           ylabel="Test accuracy (fraction)"),
    claims=(
        Claim("ideal_is_best", "Noiseless FedAvg ends at least as accurate as every noisy scheme.",
              _ideal_best),
        Claim("ota_snr_ordering", "OTA-FL at the lower SNR ends below OTA-FL at the higher SNR.",
              _snr_ordering),
    ),
    label=_label,
)

EXPERIMENTS = (EXPERIMENT,)
