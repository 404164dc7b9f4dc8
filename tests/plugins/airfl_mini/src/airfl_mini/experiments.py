"""The mini-paper's one figure and one claim, declared with airfl's types."""

from __future__ import annotations

from airfl.core.claims import ACCURACY_MARGIN, final_by_trial, paired_order
from airfl.core.experiments import Claim, Experiment, FigureSpec


def _close_to_fedavg(frame):
    """Trimmed mean against FedAvg, paired by trial against the accuracy default margin."""
    return paired_order(final_by_trial(frame, "test_accuracy"), [("trimmed", "fedavg")],
                        ACCURACY_MARGIN, scale=100, unit=" pp")


EXPERIMENTS = (Experiment(
    paper="mini",
    figure="trimmed_vs_fedavg",
    config_key="mini.trimmed_vs_fedavg",
    title="Trimmed mean vs FedAvg",
    description="Test accuracy over rounds of coordinate-wise trimmed-mean FedAvg and FedAvg.",
    figure_spec=FigureSpec(x="round", y="test_accuracy", xlabel="Communication round",
                           ylabel="Test accuracy (fraction)"),
    claims=(Claim("trimmed_not_worse", "The trimmed mean ends above FedAvg.",
                  _close_to_fedavg),),
    privacy=False,
),)
